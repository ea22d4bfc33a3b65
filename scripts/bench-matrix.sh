#!/usr/bin/env bash
# The benchmark matrix: baselines and Shoal scenarios measured in one run, so results are
# ratios that survive a noisy machine. Writes perf-results/<date>-<scenario>.json, scrapes of
# the broker's metrics beside them, plots, and the table in perf-results/HISTORY.md.
#
#   scripts/bench-matrix.sh [seconds per phase, default 8]
#
# Core use on a 2-CPU machine: the broker runs one shard on CPU 0 (coordinator on CPU 0 too),
# the generator is pinned to CPU 1, except in the shard-scaling runs, where the broker also
# takes CPU 1. With 4 or more CPUs the generator gets the upper half and the scaling runs use
# 1, 2, 4, ... shards on the lower half (8 shards on a 16-CPU machine). BROKER_CPUS and
# BENCH_CPUS (comma lists) override.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-8}
date=$(date +%Y-%m-%d)
out=perf-results
cpus=$(nproc)
broker_cpus=${BROKER_CPUS:-0}
if ((cpus >= 4)); then
  # The upper half of the CPUs drives the load, the lower half is the broker's.
  default_bench_cpus=$(seq -s, $((cpus / 2)) $((cpus - 1)))
else
  default_bench_cpus=$((cpus > 1 ? 1 : 0))
fi
bench_cpus=${BENCH_CPUS:-$default_bench_cpus}
cargo build --release --bin shoal --bin shoal-bench
bin=target/release
# shellcheck source=scripts/broker.sh
source scripts/broker.sh

bench() { # scenario mode args...; a Shoal broker's config and metrics are recorded too
  local scenario=$1
  shift
  local shoal_only=()
  [[ -n "${CONFIG:-}" ]] && shoal_only+=(--broker-config "$CONFIG" --metrics "$METRICS")
  "$bin/shoal-bench" "$@" --bootstrap "$BOOTSTRAP" --cpus "$bench_cpus" "${shoal_only[@]}" \
    --label "$scenario" --output "$out/$date-$scenario.json" 2>>"$work/bench.log" >/dev/null
  echo "  $scenario done"
}

echo "baselines"
"$bin/shoal-bench" tcp-baseline --connections 4 --duration-s "$seconds" --cpus "$broker_cpus,$bench_cpus" \
  --output "$out/$date-baseline-tcp.json" >/dev/null
disk_mb_s=$(dd if=/dev/zero of="$work/dd.bin" bs=1M count=1024 oflag=direct conv=fsync 2>&1 |
  awk '/copied/ {for (i=1;i<=NF;i++) if ($i ~ /B\/s/) {v=$(i-1); u=$i} } END {
    if (u ~ /^GB/) v*=1000; if (u ~ /^kB/) v/=1000; print v}')
rm -f "$work/dd.bin"
cat >"$out/$date-baseline-disk.json" <<JSON
{"tool": "dd if=/dev/zero bs=1M count=1024 oflag=direct conv=fsync", "workload": {"mode": "disk-baseline", "data_dir_filesystem": "$(df --output=fstype "$work" | tail -1)"}, "results": {"disk_sequential_write": {"mb_per_s": $disk_mb_s}}}
JSON

echo "max throughput (1 KiB, acks=all, broker on CPU $broker_cpus)"
start_broker max "$broker_cpus"
bench produce-max produce --topic max --create --partitions 8 --duration-s "$seconds" \
  --message-bytes 1024 --records-per-batch 100 --connections 4 --acks -1
max_rate=$(python3 -c "import json; print(json.load(open('$out/$date-produce-max.json'))['results']['produce']['records_per_s'])")
for pct in 25 50 75; do
  rate=$(python3 -c "print(int($max_rate * $pct / 100))")
  bench "e2e-$pct"pct e2e --topic "e2e$pct" --create --partitions 8 --duration-s "$seconds" \
    --message-bytes 1024 --records-per-batch 100 --connections 4 --acks -1 --rate "$rate"
done
echo "catch-up read of the max-throughput backlog"
backlog=$(python3 -c "import json; print(json.load(open('$out/$date-produce-max.json'))['results']['produce']['records'])")
bench consume-catchup consume --topic max --partitions 8 --duration-s 60 --records "$backlog"
stop_broker

echo "shard scaling"
# 1, 2, 4, ... shards on CPUs 0.. (up to half the CPUs when the generator has the other half).
max_shards=$((cpus >= 4 ? cpus / 2 : cpus))
scaling_cpus=$(seq -s, 0 $((max_shards - 1)))
shard_counts=""
for ((n = 1; n <= max_shards; n *= 2)); do shard_counts="$shard_counts $n"; done
for shards in $shard_counts; do
  list=$(echo "$scaling_cpus" | cut -d, -f1-"$shards")
  start_broker "scale$shards" "$list"
  bench "scaling-${shards}shards" produce --topic scale --create --partitions 8 \
    --duration-s "$seconds" --message-bytes 1024 --records-per-batch 100 --connections 4 --acks -1
  stop_broker
done

if command -v tansu >/dev/null; then
  echo "peer broker: tansu $(tansu --version 2>/dev/null | head -1) (memory storage engine)"
  port=$(free_port)
  taskset -c "$broker_cpus" tansu broker --listener-url "tcp://127.0.0.1:$port" \
    --advertised-listener-url "tcp://127.0.0.1:$port" --storage-engine memory://tansu/ \
    >"$work/tansu.log" 2>&1 &
  broker_pid=$!
  wait_for_port "$port"
  BOOTSTRAP=127.0.0.1:$port
  CONFIG=""
  bench peer-tansu-max produce --topic max --create --partitions 8 --duration-s "$seconds" \
    --message-bytes 1024 --records-per-batch 100 --connections 4 --acks -1
  rate=$(python3 -c "print(int($max_rate * 50 / 100))")
  bench peer-tansu-e2e-50pct e2e --topic e2e --create --partitions 8 --duration-s "$seconds" \
    --message-bytes 1024 --records-per-batch 100 --connections 4 --acks -1 --rate "$rate"
  stop_broker
fi

python3 scripts/summarize_results.py "$date"

# Peers on both sides of the log (produce, catch-up, librdkafka, tailing), local and via S3.
if command -v tansu >/dev/null && command -v s3s-fs >/dev/null; then
  python3 scripts/peer_compare.py --seconds "$seconds"
fi
# The shard→coordinator round trip (cargo bench; writes its own JSON).
cargo bench -p shoal-shards --bench commit_round_trip
# Shard scaling to 14 shards needs a machine with spare CPUs for the generator.
if ((cpus >= 8)); then
  python3 scripts/scaling.py --seconds "$seconds"
else
  echo "shard scaling to 8+ shards skipped: $cpus CPUs (scripts/scaling.py on a 16-CPU machine)"
fi

# Where the broker's time goes at max produce: a flame graph beside the results.
if command -v perf >/dev/null && command -v inferno-flamegraph >/dev/null; then
  scripts/profile_produce.sh "$seconds"
else
  echo "no profile: needs perf and inferno (cargo install inferno --version 0.12.3 --locked)" >&2
fi
