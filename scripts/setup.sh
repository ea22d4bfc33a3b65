#!/usr/bin/env bash
# Installs what the tests need on a Debian machine, skipping whatever is present: Debian's kcat,
# stunnel4, openssl and PostgreSQL (and Java 17 with Maven, Node with npm where missing); the
# Python clients (tests/requirements.txt) and the Node schema-registry client
# (tests/node/package-lock.json); s3s-fs and cargo-fuzz; the Java tests' Maven dependencies and
# Iceberg's REST catalog jar. scripts/test.sh runs it first, so on a fresh machine the README's
# test command needs nothing installed by hand; a second run only checks (seconds).
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive

# Root installs Debian packages itself; anyone else through sudo.
as_root() {
  if [[ $(id -u) -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    echo "setup: $* needs root (or sudo)" >&2
    return 1
  fi
}

missing=()
for tool in kcat stunnel4 openssl; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
# The tests start their own PostgreSQL servers from its binaries (as user nobody under root).
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
  missing+=(openjdk-17-jdk-headless maven)
fi
command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  as_root apt-get update -qq
  as_root apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check -r tests/requirements.txt

# npm ci replaces node_modules: only when the lock file is newer than what it installed.
if [[ ! tests/node/node_modules/.package-lock.json -nt tests/node/package-lock.json ]]; then
  (cd tests/node && npm ci --no-audit --no-fund --loglevel=error)
fi

# A real S3-compatible server (pinned: newer releases need a newer rustc), and coverage-guided
# fuzzing on stable Rust (scripts/fuzz.sh).
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
if ! command -v s3s-fs >/dev/null && [[ ! -x "$cargo_bin/s3s-fs" ]]; then
  cargo install --quiet s3s-fs --version 0.14.1 --features binary
fi
if ! command -v cargo-fuzz >/dev/null && [[ ! -x "$cargo_bin/cargo-fuzz" ]]; then
  cargo install --quiet cargo-fuzz --version 0.13.2 --locked
fi

# The Java tests' dependencies (Kafka's jars, JUnit, Connect's classpath) and Maven's plugins,
# fetched once for these poms; running no test class resolves surefire's JUnit provider too.
# Then the tests need no network. Iceberg's REST catalog server (its reference implementation,
# one runnable jar) is what tests/integration/test_iceberg_rest.py starts.
iceberg_rest="org.apache.iceberg:iceberg-open-api:1.10.0"
stamp="$HOME/.m2/shoal-test-dependencies"
wanted=$(cat tests/java/pom.xml tests/java/connect/pom.xml <(echo "$iceberg_rest") | sha256sum | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$wanted" ]]; then
  (cd tests/java && mvn -B -q -ntp -Dtest=NoSuchTest -Dsurefire.failIfNoSpecifiedTests=false test \
    && mvn -B -q -ntp -f connect/pom.xml generate-resources)
  mvn -B -q -ntp dependency:get -Dartifact="$iceberg_rest" -Dtransitive=false
  mkdir -p "$(dirname "$stamp")"
  echo "$wanted" >"$stamp"
fi
