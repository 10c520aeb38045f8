#!/usr/bin/env bash
# Regenerates the committed example: runs/example/trace.json from the offline sales question
# and site/trace.html rendered from it. Usage: scripts/make_example.sh [path/to/quarry]
set -euo pipefail
cd "$(dirname "$0")/.."
quarry=${1:-build/quarry}
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
"$quarry" ask --offline --no-python --runs-dir "$runs" --data data/sales.csv \
  "Which region has the highest total revenue, and by how much does it beat the runner-up?" \
  >/dev/null 2>&1
mkdir -p runs/example
cp "$(ls -d "$runs"/*/ | head -1)trace.json" runs/example/trace.json
"$quarry" view runs/example/trace.json --out site/trace.html >/dev/null
echo "wrote runs/example/trace.json and site/trace.html"
