#!/usr/bin/env python3
"""How long a Kafka Streams application's group takes to form, on the classic group protocol
and on KIP-1071's streams protocol, on Shoal and on Apache Kafka 4.4 in one run, alternating
(issue 66's figures): tests/java's StreamsRebalanceBench with 1, 4 and 16 stream threads (each a
member) over 16 tasks, every client setting at its default and the brokers' initial rebalance
delays at 0 on both; the time from start()
until the tasks run on every thread, then until a second instance of as many threads has its
share. Broker on --broker-cpus, the application on --bench-cpus.

    python3 scripts/streams_rebalance_bench.py [--rounds 2] [--threads 1,4,16]

Needs the release build and tests/java built (scripts/java_tests.sh writes
target/kafka.classpath; test classes in target/test-classes). Writes
perf-results/<date>-streams-rebalance.json.
"""

import argparse
import json
import statistics

from benchlib import write_results
from kafka_compare import start_kafka
from peer_compare import start_shoal
from platform_compare import JAVA_TESTS, SAME_GROUP_DELAY, java_bench_round

PROTOCOLS = ("classic", "streams")
FIGURES = ("formed_ms", "joined_ms")


def bench_round(start, protocol, threads, args):
    return java_bench_round(start, args, "dev.shoal.compat.bench.StreamsRebalanceBench",
                            lambda work: (protocol, threads, work / "state"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", default="1,4,16")
    ap.add_argument("--broker-cpus", default="0")
    ap.add_argument("--bench-cpus", default="1")
    args = ap.parse_args()
    # kafka_compare.create (the readiness probe of java_bench_round) reads these.
    args.seconds, args.partitions = 1, 1
    for needed in ("kafka.classpath", "test-classes"):
        if not (JAVA_TESTS / needed).exists():
            raise SystemExit(f"{JAVA_TESTS / needed} is missing: run scripts/java_tests.sh first")
    brokers = {"shoal": lambda w: start_shoal(w, args.broker_cpus, None, SAME_GROUP_DELAY),
               "kafka": lambda w: start_kafka(w, args.broker_cpus, False)}
    sizes = [int(n) for n in args.threads.split(",")]
    runs = {f"{b}/{p}/{n}": [] for b in brokers for p in PROTOCOLS for n in sizes}
    for round_ in range(args.rounds):
        order = list(brokers) if round_ % 2 == 0 else list(reversed(brokers))
        for name in order:
            for protocol in PROTOCOLS:
                for n in sizes:
                    run = bench_round(brokers[name], protocol, n, args)
                    print(round_, name, json.dumps(run), flush=True)
                    runs[f"{name}/{protocol}/{n}"].append(run)
    medians = {key: {f: statistics.median(r[f] for r in rs) for f in FIGURES}
               for key, rs in runs.items()}
    streams_over_classic = {
        f"{b}/{n}": {f: round(medians[f"{b}/streams/{n}"][f] / medians[f"{b}/classic/{n}"][f], 2)
                     for f in FIGURES}
        for b in brokers for n in sizes}
    shoal_over_kafka = {
        f"{p}/{n}": {f: round(medians[f"shoal/{p}/{n}"][f] / medians[f"kafka/{p}/{n}"][f], 2)
                     for f in FIGURES}
        for p in PROTOCOLS for n in sizes}
    workload = {
        "application": "Kafka Streams 4.4.0, one instance of N stream threads (1, 4, 16: each a "
                       "member), a stateless topology (mapValues) over a 16-partition topic: 16 "
                       "tasks; every Streams, consumer and group setting at its default (on the "
                       "streams protocol the broker's heartbeat interval, 5 s on both)",
        "formed_ms": "from start() until every thread runs an active task (or all 16 run, with "
                     "more threads than tasks) and the instance is RUNNING",
        "joined_ms": "a second instance of N threads started: until the 16 tasks run spread "
                     "over both",
        "shoal": "local store, defaults but initial_rebalance_delay_ms 0 (streams groups have "
                 "no initial delay on Shoal)",
        "kafka": "Apache Kafka 4.4.0, KRaft single node, defaults but "
                 "group.initial.rebalance.delay.ms 0 and group.streams.initial.rebalance.delay.ms "
                 "0 (both 3000 by default): the protocols' own steps are timed, not the delays",
        "rounds": args.rounds, "broker_cpus": args.broker_cpus, "bench_cpus": args.bench_cpus,
    }
    results = {"medians_ms": medians, "streams_over_classic": streams_over_classic,
               "shoal_over_kafka": shoal_over_kafka}
    write_results("streams-rebalance", "scripts/streams_rebalance_bench.py", workload, results,
                  runs)


if __name__ == "__main__":
    main()
