#!/usr/bin/env bash
# Runs every check and test: formatting, lints, the Rust unit and property tests, then the
# integration tests that drive the release binary with real Kafka clients. First it installs
# what they need where missing (scripts/setup.sh; SHOAL_SKIP_SETUP=1 skips even the checks).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase's start and the seconds since the run began, to keep the whole under an hour.
phase() { echo "== ${SECONDS}s: $*" >&2; }

phase setup
[[ ${SHOAL_SKIP_SETUP:-} == 1 ]] || ./scripts/setup.sh
phase "formatting and lints"

cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# The committed codecs, request shapes and Kafka's sample encodings are what Kafka's specs
# generate (the jar comes with the Java tests' Maven dependencies).
if compgen -G "$HOME/.m2/repository/org/apache/kafka/kafka-clients/*/kafka-clients-*.jar" >/dev/null; then
  python3 scripts/gen_kafka_messages.py --check
else
  echo "kafka-clients is not in the Maven repository: the codecs' freshness check is skipped" >&2
fi
phase "unit and property tests"
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace
else
  cargo test --workspace
fi
phase "release and debug builds"
cargo build --release --bin shoal --bin shoal-bench
# A debug build too: its assertions (each handler's ACL checks held to the registry's
# declarations, every log entry decoding to itself) run in the PostgreSQL pass below.
cargo build --bin shoal --bin shoal-bench
target="${CARGO_TARGET_DIR:-$PWD/target}/release"
debug_target="${CARGO_TARGET_DIR:-$PWD/target}/debug"
# The fuzz targets' build (every dependency again, with coverage instrumentation: about six
# minutes on 2 cores) runs at the lowest priority beside the integration tests, which mostly
# wait on brokers and clients; the fuzzers run at the end.
fuzz_build=
fuzz_build_log=$(mktemp)
if cargo fuzz --version >/dev/null 2>&1; then
  (cd fuzz && exec nice -n 19 cargo fuzz build -s none) >"$fuzz_build_log" 2>&1 &
  fuzz_build=$!
  trap 'kill "$fuzz_build" 2>/dev/null || true' EXIT
fi
phase "integration tests"
# The room left: a full disk stalls every producer of a test (the broker answers
# KAFKA_STORAGE_ERROR until there is room again), and CI machines' free space varies.
df -h "$PWD" "${TMPDIR:-/tmp}" >&2
# The slowest tests are listed at the end, to keep the whole run under an hour on 2 cores.
SHOAL_BIN="$target/shoal" SHOAL_BENCH_BIN="$target/shoal-bench" python3 -m pytest tests/integration -q \
  -p no:cacheprovider --durations=25 "$@"
# Kafka's own Java client against Apache Kafka and Shoal in the same run; then its
# coordinator-heavy classes again on Shoal (the debug build) with its log in PostgreSQL.
if [[ $# -eq 0 ]]; then
  phase "Java tests"
  SHOAL_BIN="$target/shoal" ./scripts/java_tests.sh
  phase "Java tests on PostgreSQL"
  SHOAL_BIN="$debug_target/shoal" SHOAL_JAVA_BROKERS=shoal ./scripts/with_postgres.py -- ./scripts/java_tests.sh \
    -Dtest='TransactionsTest,GroupMembershipTest,AdminGroupsTest,AdminRecordsTest,AdminSecurityTest,AdminConfigsTest,StreamsTest#onTheStreamsProtocolASecondInstance*'
fi
# The tests that lean on the coordinator again, with its log in PostgreSQL (on the debug
# build), then with each broker a one-broker cluster writing that log as a cluster's brokers
# share it.
if [[ $# -eq 0 ]]; then
  # Both passes: the tests that restart brokers (recovery from the log) or drive the
  # coordinator's decisions hardest; the PostgreSQL pass runs them on the debug build, whose
  # assertions check those decisions.
  coordinator_tests=()
  for name in durability coordinator groups consumer_group_durability acls configs share_groups \
    schema_registry; do
    coordinator_tests+=("tests/integration/test_$name.py")
  done
  # The rest on the shared log only: the one-node PostgreSQL log is the same back end without
  # leases, which the tests above already drive.
  shared_log_tests=()
  for name in diskless_api clients security mirror produce_order; do
    shared_log_tests+=("tests/integration/test_$name.py")
  done
  for mode in postgres cluster; do
    phase "integration tests on the $mode coordinator"
    tests=("${coordinator_tests[@]}")
    [[ $mode == cluster ]] && tests+=("${shared_log_tests[@]}")
    # Transactions once, on the cluster's shared log (PostgreSQL, one-broker cluster chores);
    # test_cluster.py runs them on three brokers.
    [[ $mode == cluster ]] && tests+=(tests/integration/test_transactions.py)
    # Compaction's swaps on the shared log, rewritten by the broker holding the duties.
    [[ $mode == cluster ]] && tests+=(tests/integration/test_compaction.py)
    bin="$target"
    [[ $mode == postgres ]] && bin="$debug_target"
    # Variants that differ only in the object store or the client-side assignor change nothing
    # in the coordinator's log: they run once, in the main pass.
    SHOAL_TEST_COORDINATOR=$mode SHOAL_BIN="$bin/shoal" SHOAL_BENCH_BIN="$bin/shoal-bench" \
      python3 -m pytest -q -p no:cacheprovider --durations=10 \
      -k "not s3 and not roundrobin and not cooperative-sticky" \
      "${tests[@]}"
  done
fi
phase fuzzers
# Every fuzz target for 12 s (longer by hand: scripts/fuzz.sh 600).
if [[ -n $fuzz_build ]]; then
  if ! wait "$fuzz_build"; then
    cat "$fuzz_build_log" >&2
    echo "the fuzz targets did not build" >&2
    exit 1
  fi
  ./scripts/fuzz.sh 12
else
  echo "cargo-fuzz is not installed: fuzzers skipped (cargo install cargo-fuzz --version 0.13.2)" >&2
fi
phase done
