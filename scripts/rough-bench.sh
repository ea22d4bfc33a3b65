#!/usr/bin/env bash
# Starts a release broker with the default config on a fresh data directory, runs the rough
# produce benchmark against it, and writes perf-results/<date>-rough-produce.json.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bin shoal
data=$(mktemp -d)
./target/release/shoal --data-dir "$data" --listen 127.0.0.1:19092 >"$data/shoal.log" 2>&1 &
broker=$!
trap 'kill -TERM $broker; wait $broker; rm -rf "$data"' EXIT
sleep 1
out="perf-results/$(date +%Y-%m-%d)-rough-produce.json"
python3 scripts/rough_produce_bench.py --bootstrap 127.0.0.1:19092 --out "$out" "$@"
echo "wrote $out"
