#!/usr/bin/env python3
"""A/B of broker binaries with Kafka's ProducerPerformance at the Java producer's defaults
(idempotent, acks=all, batch.size 16384, linger.ms 5, five requests in flight), 1 KiB records,
on topics of 1 and 4 partitions: each binary in turn on an empty data directory, rounds
alternating so machine drift hits both alike. Broker on CPU 0 (one shard, coordinator beside
it), the producer on CPU 1. Per run: MB/s, the broker's CPU seconds per GB, how busy the
producer kept its CPU, and the WAL objects per GB (the broker's metrics).

    python3 scripts/ab_java_producer.py --label NAME [--rounds 3] [--records 1000000]
        [--partitions 1,4] [--extra-b TOML] BIN_A BIN_B

--extra-b appends config sections to B's broker only (the same binary with a setting
changed). Needs the Java classpath (see kafka_compare.py). Writes
perf-results/<date>-ab-java-producer-<label>.json with the workload.
"""

import argparse
import pathlib
import shutil
import statistics
import subprocess
import tempfile

import client_matrix
from ab_produce import BENCH, start
from benchlib import alternating_rounds, free_port, scrape_metrics, stop, write_results


def create_topic(bootstrap, partitions, topic="t"):
    """shoal-bench creates `topic` by producing to it for a moment."""
    subprocess.run([BENCH, "produce", "--bootstrap", bootstrap, "--topic", topic, "--create",
                    "--partitions", str(partitions), "--duration-s", "0.2", "--cpus", "1"],
                   check=True, stdout=subprocess.DEVNULL)


def one_run(binary, extra, partitions, records):
    work = pathlib.Path(tempfile.mkdtemp())
    metrics = free_port()
    process, bootstrap, _ = start(binary, work, extra, metrics)
    port = int(bootstrap.rsplit(":", 1)[1])
    try:
        create_topic(bootstrap, partitions)
        objects_before = scrape_metrics(metrics).get("shoal_wal_objects_uploaded_total", 0)
        result = client_matrix.producer_performance(port, process.pid, "1", "t", records)
        objects = scrape_metrics(metrics).get("shoal_wal_objects_uploaded_total", 0)
        result["objects_per_gb"] = round((objects - objects_before) * 1e9
                                         / (records * client_matrix.RECORD_BYTES))
        return result
    finally:
        stop(process)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", default="1,4")
    ap.add_argument("--extra-b", default="")
    ap.add_argument("a")
    ap.add_argument("b")
    args = ap.parse_args()
    partition_counts = [int(p) for p in args.partitions.split(",")]
    runs = {f"{side}_p{p}": [] for side in "ab" for p in partition_counts}
    for round_, side in alternating_rounds(args.rounds):
        binary, extra = (args.a, "") if side == "a" else (args.b, args.extra_b)
        for partitions in partition_counts:
            run = one_run(binary, extra, partitions, args.records)
            print(round_, side, partitions, run, flush=True)
            runs[f"{side}_p{partitions}"].append(run)
    figures = ["mb_per_s", "broker_cpu_s_per_gb", "client_cpu_busy", "objects_per_gb", "p50_ms"]
    medians = {name: {k: statistics.median(r[k] for r in rs) for k in figures}
               for name, rs in runs.items()}
    results = dict(medians)
    for p in partition_counts:
        results[f"b_over_a_p{p}"] = {k: round(medians[f"b_p{p}"][k] / medians[f"a_p{p}"][k], 2)
                                     for k in figures if medians[f"a_p{p}"][k]}
    workload = {
        **{k: v for k, v in client_matrix.WORKLOAD.items() if k.startswith("pp1")},
        "records": args.records, "partitions": partition_counts, "rounds": args.rounds,
        "a": args.a, "b": args.b, "extra_b": args.extra_b,
        "broker": "one shard and the coordinator on CPU 0, local store (segments), defaults",
        "client_cpus": "1",
    }
    write_results(f"ab-java-producer-{args.label}", "scripts/ab_java_producer.py", workload,
                  results, runs)


if __name__ == "__main__":
    main()
