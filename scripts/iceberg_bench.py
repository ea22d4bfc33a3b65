#!/usr/bin/env python3
"""The Iceberg table writer (issue 51), on one broker: one shard and the coordinator on
--broker-cpus (the writer's thread is not pinned), confluent-kafka's producer on --bench-cpus
sending 1 KiB values with acks=all to a 3-partition topic.

1. Catch-up: --seconds of records produced with no table, then shoal.iceberg.enabled is set;
   the time until the table holds them all, and the broker's CPU meanwhile (the writer's
   thread, and the shard serving its fetches): rows/s, MB/s, CPU s per GB.
2. Produce with a table against without, alternating for --rounds rounds: MB/s and the
   broker's CPU per GB (the writer's work included), as ratios.
3. Produce to queryable at half and at a tenth of the rate of (2)'s runs without a table,
   commit interval --commit-interval-ms: for marks taken every 0.37 s (the last acknowledged
   offsets), the time until a metadata file whose snapshot's next offsets pass them is
   written (the catalog swaps to it at once).

    python3 scripts/iceberg_bench.py [--seconds 15] [--rounds 2]

Writes perf-results/<date>-iceberg-writer.json.
"""

import argparse
import json
import os
import pathlib
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time

from confluent_kafka import Producer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic)

from benchlib import (ROOT, alternating_rounds, cpu_seconds, free_port, percentile, stop,
                      wait_for_port, write_results)

VALUE = os.urandom(512).hex().encode()  # 1 KiB
TOPIC = "load"
PARTITIONS = 3
# Not a divisor of the commit interval, so the marks fall at every phase of the writer's rounds.
MARK_EVERY = 0.37


def start(work, args, extra=""):
    port = free_port()
    (work / "shoal.toml").write_text(
        f'listen = "127.0.0.1:{port}"\ndata_dir = "{work / "data"}"\n'
        f"[shards]\ncores = [{args.broker_cpus}]\n[coordinator]\ncore = {args.broker_cpus}\n"
        f"[iceberg]\nenabled = true\ncommit_interval_ms = {args.commit_interval_ms}\n{extra}")
    every_cpu = set(range(os.cpu_count()))
    process = subprocess.Popen([ROOT / "target" / "release" / "shoal", "--config",
                                work / "shoal.toml"],
                               stdout=open(work / "shoal.log", "wb"), stderr=subprocess.STDOUT,
                               preexec_fn=lambda: os.sched_setaffinity(0, every_cpu))
    wait_for_port(port, 30)
    return process, f"127.0.0.1:{port}"


def create_topic(bootstrap, table):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"shoal.iceberg.enabled": "true"} if table else {}
    admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, config=config)])[
        TOPIC].result(15)
    return admin


def produce(bootstrap, seconds, rate=0, marks=None, values=(VALUE,)):
    """Sends for `seconds` (at `rate` records/s when set), cycling through `values`; records
    sent. With `marks`, appends (time, {partition: next offset acknowledged}) every
    MARK_EVERY seconds."""
    acked = {}

    def delivered(error, message):
        if error is None:
            p = message.partition()
            acked[p] = max(acked.get(p, 0), message.offset() + 1)

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "batch.size": 1 << 20, "queue.buffering.max.kbytes": 65536})
    sent, started, next_mark = 0, time.perf_counter(), time.perf_counter() + MARK_EVERY
    while time.perf_counter() - started < seconds:
        if rate and sent >= rate * (time.perf_counter() - started):
            producer.poll(0.001)
        else:
            try:
                producer.produce(TOPIC, value=values[sent % len(values)],
                                 partition=sent % PARTITIONS, on_delivery=delivered)
                sent += 1
            except BufferError:
                producer.poll(0.01)
        if marks is not None and time.perf_counter() >= next_mark:
            producer.poll(0)
            marks.append((time.time(), dict(acked)))
            next_mark += MARK_EVERY
    assert producer.flush(120) == 0
    return sent, time.perf_counter() - started


def snapshots(work):
    """[(when it became queryable, {partition: next offset})] of the table's snapshots, oldest
    first: each metadata file's write time (the catalog swaps to it at once) and the offsets
    of the snapshot it makes current."""
    found = []
    for path in (work / "data" / "iceberg" / "warehouse").glob("*/*/metadata/*.metadata.json"):
        metadata = json.loads(path.read_text())
        current = metadata.get("current-snapshot-id", -1)
        snapshot = next((s for s in metadata["snapshots"] if s["snapshot-id"] == current), None)
        if snapshot is not None:
            offsets = json.loads(snapshot["summary"]["shoal.next-offsets"])
            found.append((path.stat().st_mtime, {int(p): o for p, o in offsets.items()}))
    return sorted(found, key=lambda f: f[0])


def taken(work):
    """Records the table holds (its current snapshot's next offsets, summed)."""
    db = work / "data" / "iceberg" / "catalog.db"
    if not db.exists():
        return 0
    with sqlite3.connect(db) as connection:
        row = connection.execute("SELECT metadata_location FROM iceberg_tables WHERE "
                                 "table_name = ?", (TOPIC,)).fetchone()
    if not row:
        return 0
    metadata = json.loads(pathlib.Path(row[0].removeprefix("file://")).read_text())
    current = metadata["current-snapshot-id"]
    snapshot = next((s for s in metadata["snapshots"] if s["snapshot-id"] == current), None)
    if snapshot is None:
        return 0
    return sum(json.loads(snapshot["summary"]["shoal.next-offsets"]).values())


def catch_up(args, values=None, extra_config=""):
    """The table catching up with --seconds of records; `values(registry_url)` gives the
    values to cycle through (default: 1 KiB of bytes), with `extra_config` for the broker."""
    work = pathlib.Path(tempfile.mkdtemp())
    registry_port = free_port()
    if values is not None:
        extra_config += f'[schema_registry]\nlisten = "127.0.0.1:{registry_port}"\n'
    process, bootstrap = start(work, args, extra_config)
    try:
        admin = create_topic(bootstrap, table=False)
        cycled = (VALUE,) if values is None else values(f"http://127.0.0.1:{registry_port}")
        sent, _ = produce(bootstrap, args.seconds, values=cycled)
        size = statistics.mean(len(v) for v in cycled)
        before_cpu, started = cpu_seconds(process.pid), time.perf_counter()
        resource = ConfigResource("topic", TOPIC, incremental_configs=[ConfigEntry(
            "shoal.iceberg.enabled", "true", incremental_operation=AlterConfigOpType.SET)])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(15)
        while taken(work) < sent:
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds(process.pid) - before_cpu
        gigabytes = sent * size / 1e9
        return {"catch_up_records": sent, "catch_up_seconds": round(elapsed, 2),
                "writer_rows_per_s": round(sent / elapsed),
                "writer_mb_per_s": round(sent * size / 1e6 / elapsed, 1),
                "writer_broker_cpu_s_per_gb": round(cpu / gigabytes, 3),
                "commits": len(snapshots(work))}
    finally:
        stop(process)
        shutil.rmtree(work, ignore_errors=True)


def produce_run(args, table, rate=0):
    work = pathlib.Path(tempfile.mkdtemp())
    process, bootstrap = start(work, args)
    try:
        create_topic(bootstrap, table)
        before_cpu = cpu_seconds(process.pid)
        marks = [] if rate else None
        sent, elapsed = produce(bootstrap, args.seconds, rate, marks)
        # The writer's share of what was produced is counted too: wait until it took it all.
        deadline = time.time() + 120
        while table and taken(work) < sent and time.time() < deadline:
            time.sleep(0.05)
        cpu = cpu_seconds(process.pid) - before_cpu
        result = {"mb_per_s": round(sent * len(VALUE) / 1e6 / elapsed, 1),
                  "broker_cpu_s_per_gb": round(cpu / (sent * len(VALUE) / 1e9), 3)}
        if marks:
            found = snapshots(work)
            latencies = []
            for at, acked in marks:
                queryable = next((ts for ts, offsets in found
                                  if all(offsets.get(p, 0) >= o for p, o in acked.items())), None)
                if queryable is not None and acked:
                    latencies.append(max(0.0, queryable - at))
            result = {"load_mb_per_s": result["mb_per_s"],
                      "produce_to_queryable_s_p50": round(percentile(latencies, 0.5), 2),
                      "produce_to_queryable_s_max": round(max(latencies), 2),
                      "marks": len(latencies)}
        return result
    finally:
        stop(process)
        shutil.rmtree(work, ignore_errors=True)


def arguments(seconds):
    """The arguments the Iceberg benchmarks take (--seconds defaults to `seconds`); this
    process, the load's, is pinned to --bench-cpus."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=seconds)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--commit-interval-ms", type=int, default=1000)
    ap.add_argument("--broker-cpus", default="0")
    ap.add_argument("--bench-cpus", default="1")
    args = ap.parse_args()
    os.sched_setaffinity(0, {int(c) for c in args.bench_cpus.split(",")})
    return args


def main():
    args = arguments(seconds=15)
    results = catch_up(args)
    print(json.dumps(results), flush=True)
    runs = [{} for _ in range(args.rounds)]
    for round_, side in alternating_rounds(args.rounds):
        name = "table" if side == "a" else "none"
        measured = produce_run(args, table=side == "a")
        runs[round_].update({f"{name}_{k}": v for k, v in measured.items()})
    print(json.dumps(runs), flush=True)
    medians = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    results.update(medians)
    results["table_over_none_mb_per_s"] = round(
        medians["table_mb_per_s"] / medians["none_mb_per_s"], 3)
    results["table_over_none_cpu_per_gb"] = round(
        medians["table_broker_cpu_s_per_gb"] / medians["none_broker_cpu_s_per_gb"], 3)
    full_rate = medians["none_mb_per_s"] * 1e6 / len(VALUE)
    for name, fraction in (("half_load", 0.5), ("tenth_load", 0.1)):
        measured = produce_run(args, True, rate=full_rate * fraction)
        results.update({f"{name}_{k}": v for k, v in measured.items()})
    print(json.dumps(results), flush=True)
    workload = {
        "produce": "confluent-kafka Producer (librdkafka 2.16), 1 KiB values, acks=all, "
                   "linger.ms=5, a 3-partition topic, records spread round-robin",
        "table": "shoal.iceberg.enabled on the topic, [iceberg] commit_interval_ms "
                 f"{args.commit_interval_ms}, local warehouse and SQLite catalog",
        "seconds": args.seconds, "rounds": args.rounds,
        "broker_cpus": args.broker_cpus, "client_cpus": args.bench_cpus,
        "writer_thread": "not pinned (the broker's other threads' affinity: every CPU)",
    }
    write_results("iceberg-writer", "scripts/iceberg_bench.py", workload, results, runs)


if __name__ == "__main__":
    main()
