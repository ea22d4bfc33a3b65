#!/usr/bin/env python3
"""Share-group records a second with lock renewal (KIP-1222) against without, on Shoal and on
Apache Kafka 4.4 in one run, alternating (issue 66's figure): tests/java's ShareRenewBench, one
KafkaShareConsumer (Java client 4.4, defaults but explicit acknowledgement) reading RECORDS
records of 100 bytes from one partition, accepting each (`accept`), or first renewing each and
accepting it when it comes back (`renew`). Broker on --broker-cpus, the client on --bench-cpus.

    python3 scripts/share_renew_bench.py [--rounds 2] [--records 20000]

Needs the release build and tests/java built (scripts/java_tests.sh writes
target/kafka.classpath; test classes in target/test-classes). Writes
perf-results/<date>-share-renew.json.
"""

import argparse
import json
import statistics

from benchlib import write_results
from kafka_compare import start_kafka
from peer_compare import start_shoal
from platform_compare import JAVA_TESTS, java_bench_round

MODES = ("accept", "renew")


def bench_round(start, mode, args):
    return java_bench_round(start, args, "dev.shoal.compat.bench.ShareRenewBench",
                            lambda work: (mode, args.records))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--broker-cpus", default="0")
    ap.add_argument("--bench-cpus", default="1")
    args = ap.parse_args()
    # kafka_compare.create (the readiness probe of java_bench_round) reads these.
    args.seconds, args.partitions = 1, 1
    for needed in ("kafka.classpath", "test-classes"):
        if not (JAVA_TESTS / needed).exists():
            raise SystemExit(f"{JAVA_TESTS / needed} is missing: run scripts/java_tests.sh first")
    brokers = {"shoal": lambda w: start_shoal(w, args.broker_cpus, None),
               "kafka": lambda w: start_kafka(w, args.broker_cpus, False)}
    runs = {f"{b}/{m}": [] for b in brokers for m in MODES}
    for round_ in range(args.rounds):
        order = list(brokers) if round_ % 2 == 0 else list(reversed(brokers))
        for name in order:
            for mode in MODES:
                run = bench_round(brokers[name], mode, args)
                print(round_, name, json.dumps(run), flush=True)
                runs[f"{name}/{mode}"].append(run)
    medians = {key: statistics.median(r["records_per_s"] for r in rs) for key, rs in runs.items()}
    renew_over_accept = {b: round(medians[f"{b}/renew"] / medians[f"{b}/accept"], 2)
                         for b in brokers}
    shoal_over_kafka = {m: round(medians[f"shoal/{m}"] / medians[f"kafka/{m}"], 2) for m in MODES}
    workload = {
        "client": "one KafkaShareConsumer, Java client 4.4.0, defaults but "
                  "share.acknowledgement.mode=explicit (max.poll.records 500)",
        "records": f"{args.records} of 100 bytes on one partition, produced first",
        "accept": "each record handed out is acknowledged ACCEPT",
        "renew": "each record is acknowledged RENEW when first handed out, then ACCEPT when the "
                 "client hands it back at a later poll (the same delivery)",
        "timed": "from the first poll that returns records until every record is accepted",
        "shoal": "local store, defaults (one shard)",
        "kafka": "Apache Kafka 4.4.0, KRaft single node, defaults",
        "rounds": args.rounds, "broker_cpus": args.broker_cpus, "bench_cpus": args.bench_cpus,
    }
    results = {"median_records_per_s": medians, "renew_over_accept": renew_over_accept,
               "shoal_over_kafka": shoal_over_kafka}
    write_results("share-renew", "scripts/share_renew_bench.py", workload, results, runs)


if __name__ == "__main__":
    main()
