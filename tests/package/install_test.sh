#!/usr/bin/env bash
# `cmake --install` into a scratch DESTDIR and the Debian package unpacked with `dpkg -x`: each
# installed quarry runs from another directory (its DuckDB found through RPATH, its bundled
# files under PREFIX/share/quarry), answers the offline question, and ships its man page and
# completions. The package's control fields are checked with `dpkg-deb --info`.
#   tests/package/install_test.sh BUILD_DIR
set -euo pipefail
# Checks read text with `grep -q PATTERN <<<"$text"`, never `echo | grep -q`: under pipefail a
# grep that stops at its first match kills echo with SIGPIPE, failing a check that matched.
build=$(cd "$1" && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/quarry-install-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
fail() { echo "install_test: FAILED: $*" >&2; exit 1; }
question="Which region has the highest total revenue, and by how much does it beat the runner-up?"

# Runs the installed tree at ROOT/PREFIX from a directory outside the source tree, with the
# source tree's fixtures unreachable by name.
check_tree() {
  local root=$1 prefix=$2 what=$3
  local bin="$root$prefix/bin/quarry"
  [ -x "$bin" ] || fail "$what: no $bin"
  [ -f "$root$prefix/lib/quarry/libduckdb.so" ] || fail "$what: no lib/quarry/libduckdb.so"
  local libs
  libs=$(ldd "$bin")
  if grep -q "libduckdb.so => not found" <<<"$libs"; then fail "$what: libduckdb not found"; fi
  grep -q "=> $root$prefix/\(bin/../\)\?lib/quarry/libduckdb.so" <<<"$libs" \
    || fail "$what: libduckdb does not come from the installed tree: $(ldd "$bin" | grep duckdb)"
  local version
  version=$("$bin" --version)
  grep -q "^quarry [0-9.]* (commit " <<<"$version" || fail "$what: --version said: $version"
  grep -q "DuckDB v1.4.4" <<<"$version" || fail "$what: --version names no DuckDB: $version"
  mkdir -p "$scratch/cwd-$what"
  local out
  out=$(cd "$scratch/cwd-$what" && env -u QUARRY_FIXTURES -u OPENAI_API_KEY -u OPENROUTER_API_KEY \
        -u ANTHROPIC_API_KEY -u QUARRY_BASE_URL XDG_CACHE_HOME="$scratch/cache" \
        XDG_STATE_HOME="$scratch/state" "$bin" ask --offline --format json \
        --data "$root$prefix/share/quarry/data/sales.csv" "$question" 2>"$scratch/err-$what") \
    || fail "$what: the offline ask failed: $(cat "$scratch/err-$what")"
  grep -q '"stop_reason": "answered"' <<<"$out" || fail "$what: not answered: $out"
  grep -q '141794.14\|141,794.14' <<<"$out" || fail "$what: not the right answer: $out"
  [ -s "$root$prefix/share/man/man1/quarry.1" ] || fail "$what: no man page"
  [ -s "$root$prefix/share/doc/quarry/duckdb-LICENSE" ] || fail "$what: no DuckDB licence"
  # The README's links resolve in the installed tree (docs/ keeps its place beside it).
  [ -s "$root$prefix/share/doc/quarry/docs/models.md" ] || fail "$what: docs/models.md not beside the README"
  grep -q '^\.TH QUARRY 1' "$root$prefix/share/man/man1/quarry.1" || fail "$what: man page has no .TH"
  grep -q '^\.SS "quarry ask"' "$root$prefix/share/man/man1/quarry.1" || fail "$what: man page has no ask"
  local bash_completion="$root$prefix/share/bash-completion/completions/quarry"
  [ -s "$bash_completion" ] || fail "$what: no bash completion"
  [ -s "$root$prefix/share/zsh/vendor-completions/_quarry" ] || fail "$what: no zsh completion"
  [ -s "$root$prefix/share/fish/vendor_completions.d/quarry.fish" ] || fail "$what: no fish completion"
  local words
  words=$(bash -c 'source "$1"; COMP_WORDS=(quarry ask --for); COMP_CWORD=2; _quarry; echo "${COMPREPLY[*]}"' _ "$bash_completion")
  [ "$words" = "--format" ] || fail "$what: bash completes 'quarry ask --for' to '$words'"
  echo "install_test: $what ok ($(du -sh "$root$prefix" | cut -f1), $(stat -c %s "$bin") byte binary)"
}

# 1. cmake --install, relocated with DESTDIR and stripped.
DESTDIR="$scratch/root" cmake --install "$build" --prefix /usr/local --strip > "$scratch/install.log" \
  || { cat "$scratch/install.log"; fail "cmake --install"; }
check_tree "$scratch/root" /usr/local install

# 2. The Debian package.
(cd "$scratch" && cpack --config "$build/CPackConfig.cmake" -B "$scratch/pkg" > "$scratch/cpack.log" 2>&1) \
  || { cat "$scratch/cpack.log"; fail "cpack"; }
deb=$(ls "$scratch"/pkg/quarry_*_amd64.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "no quarry_<version>_amd64.deb in $(ls "$scratch/pkg")"
info=$(dpkg-deb --info "$deb")
for field in "Package: quarry" "Architecture: amd64" "Depends:.*bubblewrap" "Depends:.*libpq5" \
             "Depends:.*libc6 (>= 2.34)" "Recommends:.*python3-pandas" "Depends:.*libcurl4"; do
  grep -q "$field" <<<"$info" || fail "dpkg-deb --info lacks '$field':
$info"
done
dpkg -x "$deb" "$scratch/deb"
check_tree "$scratch/deb" /usr package
echo "install_test: $(basename "$deb") $(stat -c %s "$deb") bytes"
