#!/usr/bin/env bash
# librdkafka's own test suite against one Shoal broker (defaults, but 4 partitions for
# auto-created topics, as the suite expects). Not part of CI: it needs librdkafka's source
# (https://github.com/confluentinc/librdkafka, tag v2.12.1; or the copy npm's
# @confluentinc/kafka-javascript bundles: `npm pack @confluentinc/kafka-javascript@1.10.1`
# has librdkafka 2.15.1 with its tests under package/deps/librdkafka) and takes minutes per
# test. With TEST_CONSUMER_GROUP_PROTOCOL=consumer in the environment the suite's consumers
# use the consumer group protocol (KIP-848) and it expects Kafka 4.0's behaviour;
# TEST_KAFKA_VERSION=4.0.0 alone asks for 4.0's behaviour with classic consumers (0081's
# group configs).
#
#   scripts/librdkafka_tests.sh /path/to/librdkafka [TESTS...]
#
# Builds librdkafka and its test runner there if needed (no zstd, curl or GSSAPI), then runs
# each test (default: 0011 0081 0090 0103 0129) and prints one line per test; each test's
# output is kept as $LOG_DIR/librdkafka-TEST.log (default /tmp).
set -euo pipefail
src=$(realpath "$1")
shift
tests=("$@")
[[ ${#tests[@]} -gt 0 ]] || tests=(0011 0081 0090 0103 0129)
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ ! -x "$src/tests/test-runner" ]]; then
  (cd "$src" && ./configure --disable-gssapi --disable-curl --disable-zstd --disable-lz4-ext \
    && make -j"$(nproc)" libs && make -C tests -j"$(nproc)" build) > "$src/shoal-build.log" 2>&1
fi
cargo build --release --bin shoal --manifest-path "$root/Cargo.toml"
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'listen = "127.0.0.1:%s"\ndata_dir = "%s/data"\ndefault_partitions = 4\n' "$port" "$work" \
  > "$work/shoal.toml"
"$root/target/release/shoal" --config "$work/shoal.toml" > "$work/shoal.log" 2>&1 &
broker=$!
trap 'kill $broker; wait $broker 2>/dev/null; rm -rf "$work"' EXIT
sleep 2
cd "$src/tests"
printf 'metadata.broker.list=127.0.0.1:%s\ntest.timeout.multiplier=2\n' "$port" > test.conf
kafka_version=${TEST_KAFKA_VERSION:-3.9.0}
[[ ${TEST_CONSUMER_GROUP_PROTOCOL:-classic} == consumer ]] && kafka_version=4.0.0
export LD_LIBRARY_PATH=../src:../src-cpp TEST_KAFKA_VERSION=$kafka_version
# Tests that shell out to Kafka's kafka-topics.sh (0077) get a stand-in over the admin API.
export KAFKA_PATH="$root/scripts/kafka-topics-standin" BROKERS="127.0.0.1:$port"
for t in "${tests[@]}"; do
  rc=0
  TESTS=$t timeout 900 ./test-runner > "$work/$t.log" 2>&1 || rc=$?
  first=$(grep -m1 -E 'Test assertion|failed at|SKIPPED' "$work/$t.log" | tr -d '\033' | cut -c1-160 || true)
  echo "$t $([[ $rc -eq 0 ]] && echo PASSED || echo "FAILED (rc $rc)") $first"
  cp "$work/$t.log" "${LOG_DIR:-/tmp}/librdkafka-$t.log"
done
