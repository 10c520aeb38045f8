#!/usr/bin/env bash
# Installs what quarry needs on Debian 12: build tools and libraries (apt) and DuckDB 1.4.4
# pinned from npm. With --tests (scripts/test.sh passes it), also what only the tests use: the
# PostgreSQL server, clang for the fuzzers, Chromium, and the npm packages of
# package-lock.json. Safe to run again.
#   scripts/setup.sh [--tests]
set -euo pipefail
cd "$(dirname "$0")/.."
tests=0
if [ "${1:-}" = "--tests" ]; then tests=1; fi
packages=(
  ca-certificates cmake ninja-build g++ pkg-config openssl ccache
  libcurl4-openssl-dev nlohmann-json3-dev libsqlite3-dev libssl-dev libcli11-dev
  libedit-dev  # line editing in quarry chat
  libtomlplusplus-dev  # the config file
  libpq-dev  # PostgreSQL's client
  libmariadb-dev  # the MySQL protocol's client (MariaDB, MySQL)
  libzip-dev libexpat1-dev libfreexl-dev  # Excel workbooks (.xlsx, .xls)
  zlib1g-dev  # whether a .csv.gz is whole
  libcpp-httplib-dev  # quarry serve's HTTP server (also the tests' stand-in provider)
  libyaml-cpp-dev  # knowledge files (.quarry/*.yaml)
  libgtest-dev libgmock-dev  # the test targets, which CMake configures
  bubblewrap libseccomp-dev python3 python3-pandas python3-numpy python3-matplotlib
  libcairo2-dev libpango1.0-dev fonts-dejavu-core
)
if [ "$tests" = 1 ]; then
  packages+=(
    postgresql  # the server the tests start
    mariadb-server mariadb-plugin-spider  # MariaDB, and Spider for the sharded tests
    clickhouse-server  # ClickHouse 18.16, for the ClickHouse engine's tests
    python3-openpyxl  # one of the writers of the workbook corpus (tests/engine/workbooks)
    chromium
    clang-16 libclang-rt-16-dev  # libFuzzer and its sanitizers (scripts/fuzz.sh)
    clang-format  # the format check (scripts/check_format.sh)
  )
fi
# Node.js may come from elsewhere (NodeSource bundles npm and conflicts with Debian's npm
# package): only ask apt for it when there is no node or npm at all.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  echo "setup: installing ${missing[*]}"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
scripts/fetch_duckdb.sh
if [ "$tests" = 1 ] && { [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; }; then
  npm ci --no-audit --no-fund --loglevel=error
fi
echo "setup: done"
