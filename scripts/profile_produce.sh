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
work=$(mktemp -d)
broker_pid=""
cleanup() {
  [[ -n "$broker_pid" ]] && kill -TERM "$broker_pid" 2>/dev/null && wait "$broker_pid" || true
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/shoal.toml" <<TOML
listen = "127.0.0.1:$port"
data_dir = "$work/data"
[shards]
cores = [0]
[coordinator]
core = 0
TOML
target/release/shoal --config "$work/shoal.toml" >"$work/shoal.log" 2>&1 &
broker_pid=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.1; done
target/release/shoal-bench produce --bootstrap "127.0.0.1:$port" --create \
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
