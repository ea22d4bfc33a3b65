#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 20; CI runs 12; run longer by hand, e.g.
# `scripts/fuzz.sh 600`). Coverage-guided libFuzzer through cargo-fuzz on stable Rust
# (no sanitizer: `-s none`); a single allocation over 512 MiB counts as a crash, which is
# how a count trusted before its bytes would show. Corpora grow in fuzz/corpus/<target>/
# (seeded from real clients: scripts/capture_fuzz_corpus.py); a crash is saved under
# fuzz/artifacts/ and fails this script. Needs `cargo install cargo-fuzz --version 0.13.2`.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds="${1:-20}"
targets=(request_decode record_batch metadata_log wal_object sasl pg_backend consumer_protocol schema_registry table_values)
cargo fuzz build -s none
# Request decoding starts from Kafka's own encoding of every request at every version too
# (protocol/tests/data/kafka-samples.bin, scripts/gen_kafka_messages.py): key, version, body.
mkdir -p corpus/request_decode
python3 - <<'PY'
import struct
data = open("../protocol/tests/data/kafka-samples.bin", "rb").read()
pos = 0
while pos < len(data):
    key, kind, version, size = struct.unpack_from(">hbhi", data, pos)
    pos += 9
    if kind == 0:
        with open(f"corpus/request_decode/kafka-sample-{key}-{version}", "wb") as seed:
            seed.write(struct.pack(">hh", key, version) + data[pos:pos + size])
    pos += size
PY
for target in "${targets[@]}"; do
  mkdir -p "corpus/$target"
  echo "fuzzing $target for ${seconds}s"
  cargo fuzz run -s none "$target" "corpus/$target" -- \
    -max_total_time="$seconds" -malloc_limit_mb=512 -rss_limit_mb=2048 -print_final_stats=1 \
    2>&1 | grep -E "^(Done|stat::number_of_executed_units|==|SUMMARY)|panicked|ERROR" || true
  if compgen -G "artifacts/$target/crash-*" >/dev/null || compgen -G "artifacts/$target/oom-*" >/dev/null; then
    echo "fuzz target $target found a crash: see fuzz/artifacts/$target/" >&2
    exit 1
  fi
done
