#!/usr/bin/env bash
# Fetches DuckDB 1.4.4 (LTS) from the npm registry, pinned by version and integrity hash:
# libduckdb.so from @duckdb/node-bindings-linux-x64 and duckdb.h from the duckdb source package.
# Result: third_party/duckdb/{include/duckdb.h,lib/libduckdb.so} (git-ignored). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=third_party/duckdb
lib_pkg="@duckdb/node-bindings-linux-x64@1.4.4-r.4"
lib_integrity="sha512-jBTL/WvfwxLToFa/pVHfT6elMtltJGnc3wSuxZD9OfMltit9YUdVFS37vBFQzXMT1Z8OWjtSjMh+zPKxOwHLHA=="
hdr_pkg="duckdb@1.4.4"
hdr_integrity="sha512-hEJJ5hyVF0VLj3dmOLpsWrQR0b3d4Ykqtygm6iUXjHJDDnSqg/USKxcb5qvNrOhFYPgktayU6dXCtgPqcmmpog=="
stamp="$dest/.pinned"
want="$lib_integrity $hdr_integrity"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$dest/lib/libduckdb.so" ] \
   && [ -f "$dest/include/duckdb.h" ]; then
  echo "duckdb: already at 1.4.4 in $dest"
  exit 0
fi
if [ "$(uname -m)" != "x86_64" ]; then
  echo "duckdb: the pinned npm build is linux-x64 only; on $(uname -m) pass -DDUCKDB_ROOT=<libduckdb release>" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# npm pack downloads the tarball; the integrity check is ours, so a changed tarball fails here.
verify() {  # verify TARBALL INTEGRITY
  local got
  got="sha512-$(openssl dgst -sha512 -binary "$1" | base64 -w0)"
  if [ "$got" != "$2" ]; then
    echo "duckdb: integrity mismatch for $1: expected $2, got $got" >&2
    exit 1
  fi
}
(cd "$work" && npm pack --silent "$lib_pkg" "$hdr_pkg" >/dev/null)
lib_tgz=$(ls "$work"/duckdb-node-bindings-linux-x64-*.tgz)
hdr_tgz=$(ls "$work"/duckdb-1.4.4.tgz)
verify "$lib_tgz" "$lib_integrity"
verify "$hdr_tgz" "$hdr_integrity"

rm -rf "$dest" && mkdir -p "$dest/lib" "$dest/include"
tar -xzf "$lib_tgz" -C "$work" package/libduckdb.so package/LICENSE
mv "$work/package/libduckdb.so" "$dest/lib/" && mv "$work/package/LICENSE" "$dest/LICENSE"
tar -xzf "$hdr_tgz" -C "$work" package/src/duckdb/src/include/duckdb.h
mv "$work/package/src/duckdb/src/include/duckdb.h" "$dest/include/"
echo "$want" > "$stamp"
echo "duckdb: 1.4.4 installed in $dest"
