#!/usr/bin/env bash
# A CPU profile of the broker at max produce, saved as a flame graph beside the results:
#
#   scripts/profile_produce.sh [seconds, default 8]
#
# Needs perf (linux-perf) and inferno (cargo install inferno --version 0.12.3 --locked).
# Broker: one shard + coordinator on CPU 0; shoal-bench produce (default flags) on CPU 1; perf
# samples the broker process (software clock, call graphs) for the middle of the run.
# Writes perf-results/<date>-produce-profile.svg and a folded-stack text file beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-8}
date=$(date +%Y-%m-%d)
cargo build --release --bin shoal --bin shoal-bench
bin=target/release
# shellcheck source=scripts/broker.sh
source scripts/broker.sh
start_broker profile 0
"$bin/shoal-bench" produce --bootstrap "$BOOTSTRAP" --create \
  --duration-s "$seconds" --cpus 1 --output "$work/bench.json" >/dev/null &
bench_pid=$!
sleep 1
perf record -e cpu-clock -F 499 --call-graph dwarf,16384 -p "$broker_pid" -o "$work/perf.data" -- sleep $((seconds - 2)) 2>/dev/null
wait "$bench_pid"
perf script -i "$work/perf.data" 2>/dev/null | inferno-collapse-perf >"perf-results/$date-produce-profile.folded"
inferno-flamegraph --title "shoal at max produce (1 shard, CPU 0)" \
  <"perf-results/$date-produce-profile.folded" >"perf-results/$date-produce-profile.svg"
python3 - "$work/bench.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
print(f"produce {r['produce']['mb_per_s']} MB/s, p99 {r['produce_latency_ms']['p99']} ms")
PY
echo "wrote perf-results/$date-produce-profile.svg"
