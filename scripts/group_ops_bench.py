#!/usr/bin/env python3
"""What a cluster's group writes and fresh reads cost: OffsetCommit and OffsetFetch round
trips, one at a time from one confluent-kafka client, against a one-broker cluster on
PostgreSQL (the shared log), for two builds in alternating rounds on one database server.

Each OffsetCommit is a shared-log round (lock, append); since issue 32 it also carries the
group's claim (a lookup under the lock). Each OffsetFetch now first reads the log's new rows
(one query: the read barrier) instead of answering from memory.

    python3 scripts/group_ops_bench.py --old /tmp/old/shoal --new target/release/shoal \\
        [--requests 400] [--rounds 3]

Writes perf-results/<date>-group-ops.json.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import pathlib

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from benchlib import ROOT, free_port, percentile, wait_for_port, write_results

sys.path.insert(0, str(ROOT / "tests" / "integration"))
from conftest import PostgresServer  # noqa: E402


def start_broker(binary, work, database):
    port = free_port()
    config = work / "shoal.toml"
    config.write_text(f'listen = "127.0.0.1:{port}"\ndata_dir = "{work / "data"}"\n'
                      "node_id = 1\n[shards]\ncores = [0]\n"
                      f"{database}core = 0\n[cluster]\nenabled = true\n")
    log = open(work / "shoal.log", "wb")
    process = subprocess.Popen([binary, "--config", config], stdout=log,
                               stderr=subprocess.STDOUT)
    wait_for_port(port)
    return port, process


def measure(binary, postgres, requests):
    work = pathlib.Path(tempfile.mkdtemp(prefix="shoal-group-ops-"))
    port, process = start_broker(binary, work, postgres.new_database_config())
    try:
        bootstrap = f"127.0.0.1:{port}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("ops", num_partitions=6)])["ops"].result(15)
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ops",
                             "enable.auto.commit": False})
        partitions = [TopicPartition("ops", p) for p in range(6)]
        consumer.committed(partitions, timeout=15)  # the coordinator is found
        commits, fetches = [], []
        for i in range(requests):
            offsets = [TopicPartition("ops", p, i + 1) for p in range(6)]
            started = time.perf_counter()
            consumer.commit(offsets=offsets, asynchronous=False)
            commits.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            got = consumer.committed(partitions, timeout=10)
            fetches.append((time.perf_counter() - started) * 1000)
            assert all(tp.offset == i + 1 for tp in got), got
        consumer.close()
        return {"commit_ms": commits, "fetch_ms": fetches}
    finally:
        process.terminate()
        process.wait(20)


def summary(samples):
    return {"p50": round(statistics.median(samples), 3), "p99": round(percentile(samples, 0.99), 3),
            "mean": round(statistics.fmean(samples), 3)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", default=str(ROOT / "target" / "release" / "shoal"))
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    postgres = PostgresServer().start()
    runs = {"old": {"commit_ms": [], "fetch_ms": []}, "new": {"commit_ms": [], "fetch_ms": []}}
    try:
        for _ in range(args.rounds):
            for name, binary in (("old", args.old), ("new", args.new)):
                measured = measure(binary, postgres, args.requests)
                for key, samples in measured.items():
                    runs[name][key].extend(samples)
    finally:
        postgres.stop()
    results = {name: {key: summary(samples) for key, samples in by_key.items()}
               for name, by_key in runs.items()}
    for key in ("commit_ms", "fetch_ms"):
        results[f"{key}_p50_new_over_old"] = round(
            results["new"][key]["p50"] / results["old"][key]["p50"], 3)
    workload = (f"one-broker cluster on PostgreSQL (shared log), broker on CPU 0; one "
                f"confluent-kafka consumer: {args.requests} synchronous OffsetCommits of 6 "
                f"partitions, each followed by an OffsetFetch of them; {args.rounds} alternating "
                f"rounds per build; old={args.old}, new={args.new}")
    write_results("group-ops", "scripts/group_ops_bench.py", workload, results,
                  {"rounds": args.rounds, "requests": args.requests})


if __name__ == "__main__":
    main()
