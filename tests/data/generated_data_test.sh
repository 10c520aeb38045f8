#!/usr/bin/env bash
# The committed CSVs are exactly what the seeded generator makes: regenerate and compare bytes.
set -euo pipefail
root="$1"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
python3 "$root/scripts/gen_data.py" "$out" >/dev/null
for f in sales.csv sensors.csv passengers.csv; do
  cmp "$root/data/$f" "$out/$f"
done
echo "generated data matches data/"
