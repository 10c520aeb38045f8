#!/usr/bin/env bash
# Checks that every C++ file of the checkout reads as .clang-format says (clang-format from
# Debian 12, version 14: another version may format differently). Exit 1 names the files and
# lines that differ; `scripts/check_format.sh --fix` rewrites them in place.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=(--dry-run --Werror)
if [ "${1:-}" = "--fix" ]; then mode=(-i); fi
files=$(git ls-files 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h' 'bench/*.cc' 'bench/*.h' \
          'fuzz/*.cc' 2>/dev/null || true)
if [ -z "$files" ]; then
  files=$(find src tests bench fuzz -name '*.cc' -o -name '*.h' | sort)
fi
# shellcheck disable=SC2086
clang-format "${mode[@]}" $files
echo "check_format: $(echo "$files" | wc -l) files as .clang-format says"
