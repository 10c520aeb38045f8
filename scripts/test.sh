#!/usr/bin/env bash
# Sets up (scripts/setup.sh), builds, and runs every test through CTest; then the same tests
# built with AddressSanitizer and UndefinedBehaviorSanitizer (build-asan/), then a short run of
# each libFuzzer target (scripts/fuzz.sh, build-fuzz/). QUARRY_FUZZ_SECONDS sets the fuzz run
# per target (default 15: a smoke run from the seed corpora; scripts/fuzz.sh 600 fuzzes for real;
# 0 skips fuzzing); QUARRY_SKIP_SANITIZE=1 skips the sanitizer suite.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
stage() { echo "test.sh: $1 done at $((SECONDS - started)) s"; }
scripts/setup.sh --tests
stage setup
# Every compile goes through ccache with paths relative to the checkout (CMakeLists.txt sets the
# launcher), so a clone anywhere (CI's) reuses what the last build on this machine compiled.
cmake -S . -B build -G Ninja
cmake --build build
stage build
# A failure is run once more, alone and with its output, so the log's tail shows it. One that
# passes unloaded is named as load-dependent and the suite goes on; one that fails again fails it.
rerun() {
  local failed
  failed=$(sed 's/^[0-9]*://' "$1/Testing/Temporary/LastTestsFailed.log" 2>/dev/null | tr '\n' ' ')
  ctest --test-dir "$1" --rerun-failed --output-on-failure || exit 1
  echo "test.sh: failed under load, passed alone (load-dependent, fix it): $failed"
}
ctest --test-dir build --output-on-failure -j2 || rerun build
stage tests
if [ "${QUARRY_SKIP_SANITIZE:-0}" != 1 ]; then
  cmake -S . -B build-asan -G Ninja -DQUARRY_SANITIZE=ON
  cmake --build build-asan
  stage "sanitizer build"
  # The sanitizer build holds the modules' own tests (tests/CMakeLists.txt), which ran above
  # unsanitized with the end-to-end ones. Three at a time on 2 cores: many wait on sanitized
  # child processes; a test slowed into failing is rerun alone. Left to the plain suite as
  # well, measured on 2026-12-04
  # at 3 to 7 times their plain cost: suites whose time goes to child processes (the MCP server
  # binary, the Python kernel, the test servers' own harness), to large files through the
  # loaders (whose parsers the fuzz targets below cover under the same sanitizers), or to
  # thousands of tables.
  heavy='(^|/)(SchemaBudgetTest|SchemaViewTest|WorkbookCorpusTest|LoaderTest|CacheTest'
  heavy+='|CsvSpectrumTest|CardNotesTest|QueryMemoryTest|HostileDataTest|EncodingTest'
  heavy+='|SqliteWideTest|DataScanTest|PgServerTest|McpServerTest|McpLiveTest|McpConversationTest'
  heavy+='|KernelTest|TablesTest)\.|^(sandbox\.RunnerGuard|trace\.ViewerInChromium|mcp\.SdkClient)$'
  ctest --test-dir build-asan --output-on-failure -j3 -E "$heavy" || rerun build-asan
  stage "sanitizer tests"
fi
if [ "${QUARRY_FUZZ_SECONDS:-15}" != 0 ]; then
  scripts/fuzz.sh "${QUARRY_FUZZ_SECONDS:-15}"
  stage fuzzing
fi
# A standing check on the whole command's time: the team's limit is 30 minutes (CI stops at 90).
# Past 30 it says so; past 45 it fails, while there is still room to fix it.
total=$((SECONDS - started))
echo "test.sh: total $((total / 60)) min $((total % 60)) s"
if [ "$total" -gt 2700 ]; then
  echo "test.sh: FAILED: the test command took over 45 minutes ($total s); the limit is 30." >&2
  echo "test.sh: the stage times above show where it grew: make it faster before adding more." >&2
  exit 1
fi
if [ "$total" -gt 1800 ]; then
  echo "test.sh: WARNING: over the 30-minute limit ($total s): the stage times above show where." >&2
fi
