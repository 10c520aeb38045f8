#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang 16, in build-fuzz/) and runs each for SECONDS
# (default 60), two at a time, from its seed corpus fuzz/corpus/<target>/, copied to a temporary
# directory so the repository is never written. A crash, a leak, a timeout or a failed check
# keeps its input in build-fuzz/crashes/<target>/ and makes the script exit non-zero.
#   scripts/fuzz.sh [SECONDS] [TARGET...]      e.g. scripts/fuzz.sh 600 sql_guard
# Replay one input: build-fuzz/fuzz_<target> build-fuzz/crashes/<target>/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(sql_guard json tool_arguments injection chart_spec verify_numbers trace_reader xlsx
           knowledge)
fi
cxx="${QUARRY_FUZZ_CXX:-clang++-16}"
if [ ! -f build-fuzz/build.ninja ]; then
  cmake -S . -B build-fuzz -G Ninja -DQUARRY_FUZZ=ON -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_BUILD_TYPE=Debug
fi
cmake --build build-fuzz --target "${targets[@]/#/fuzz_}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
run_one() {
  local target="$1" seconds="$2" work="$3"
  local corpus="$work/$target" crashes="build-fuzz/crashes/$target"
  mkdir -p "$corpus" "$crashes"
  cp fuzz/corpus/"$target"/* "$corpus"/
  # -timeout: one input running past 10 s is a hang; -rss_limit_mb: past 2 GB a blow-up.
  if build-fuzz/fuzz_"$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" >"$work/$target.log" 2>&1; then
    echo "fuzz: $target ok: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' \
      "$work/$target.log" | grep -o '[0-9]*$') inputs in ${seconds} s"
  else
    echo "fuzz: $target FAILED; input kept in $crashes/; log:"
    tail -n 60 "$work/$target.log"
    return 1
  fi
}
export -f run_one
status=0
printf '%s\n' "${targets[@]}" | xargs -P 2 -I{} bash -c 'run_one "$@"' _ {} "$seconds" "$work" ||
  status=1
exit "$status"
