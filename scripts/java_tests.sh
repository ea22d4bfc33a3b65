#!/usr/bin/env bash
# Kafka's own Java client and tools (tests/java) against Apache Kafka, a single-node KRaft broker
# started from the pinned jars, and against Shoal ($SHOAL_BIN), in the same run. Extra arguments
# go to Maven (-Dtest=Class,... picks classes); SHOAL_JAVA_BROKERS=shoal or =kafka runs one side.
# Maven fetches the dependencies on the first run (.ci/run does it before the tests) and works
# from its local repository after that.
set -euo pipefail
cd "$(dirname "$0")/../tests/java"
# Kafka Connect and MirrorMaker 2 run from a classpath of their own (connect/pom.xml says why).
mvn -B -ntp -q -f connect/pom.xml generate-resources
exec mvn -B -ntp test "$@"
