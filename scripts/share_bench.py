#!/usr/bin/env python3
"""Records per second through a share group (KIP-932) of 1, 2 and 4 members, each record
acknowledged explicitly (ACCEPT), against a classic consumer group of as many members reading
the same records (committing once at the end), on one broker; and what the share group
writes to the coordinator's log per acknowledged record.

Each member is a process of its own (confluent-kafka 2.16: librdkafka's ShareConsumer, and
its Consumer for the classic group), all on CPU 1; the broker's one shard and its
coordinator on CPU 0. The topic has 4 partitions, RECORDS records of 100 bytes produced
before the members start; a member stops when the group has read them all (each member
counts its own; the parent sums them). Rounds alternate share and classic groups.

    python3 scripts/share_bench.py [--binary target/release/shoal] [--records 200000]
        [--rounds 2]   (--records 1000000 by default)

Writes perf-results/<date>-share-groups.json."""

import argparse
import multiprocessing
import os
import pathlib
import shutil
import statistics
import subprocess
import tempfile
import time

from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic, ResourceType)

from ab_produce import start
from benchlib import ROOT, cpu_seconds, write_results

PARTITIONS = 4
VALUE = b"x" * 100


def produce(bootstrap, topic, records):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                         "batch.num.messages": 10000, "acks": "all"})
    for i in range(records):
        while True:
            try:
                producer.produce(topic, VALUE, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0


def share_member(bootstrap, group, topic, done, counted):
    os.sched_setaffinity(0, {1})
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    while not done.is_set():
        messages = consumer.poll(0.2)
        for m in messages:
            if m.error() is None:
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
        delivered = sum(1 for m in messages if m.error() is None)
        if delivered:
            with counted.get_lock():
                counted.value += delivered
    consumer.commit_sync()
    consumer.close()


def classic_member(bootstrap, group, topic, done, counted):
    os.sched_setaffinity(0, {1})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    while not done.is_set():
        messages = consumer.consume(1000, 0.2)
        delivered = sum(1 for m in messages if m.error() is None)
        if delivered:
            with counted.get_lock():
                counted.value += delivered
    consumer.close()


def configure_share_group(bootstrap, group):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entry = ConfigEntry("share.auto.offset.reset", "earliest",
                        incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(10)


def coordinator_log_bytes(data_dir):
    return sum(p.stat().st_size for p in (data_dir / "coordinator").rglob("*") if p.is_file())


def run(binary, kind, members, records):
    work = pathlib.Path(tempfile.mkdtemp())
    # No wait for more members before a classic group's first rebalance.
    process, bootstrap, _ = start(binary, work, "[groups]\ninitial_rebalance_delay_ms = 0\n")
    try:
        topic, group = "bench", f"{kind}-{members}"
        produce(bootstrap, topic, records)
        if kind == "share":
            configure_share_group(bootstrap, group)
        log_before = coordinator_log_bytes(work / "data")
        cpu_before = cpu_seconds(process.pid)
        done = multiprocessing.Event()
        counted = multiprocessing.Value("q", 0)
        target = share_member if kind == "share" else classic_member
        started = time.time()
        procs = [multiprocessing.Process(target=target,
                                         args=(bootstrap, group, topic, done, counted))
                 for _ in range(members)]
        for p in procs:
            p.start()
        deadline = started + 300
        while counted.value < records and time.time() < deadline:
            time.sleep(0.005)
        elapsed = time.time() - started
        cpu = cpu_seconds(process.pid) - cpu_before
        done.set()
        for p in procs:
            p.join(60)
        log_after = coordinator_log_bytes(work / "data")
        return {"records_per_s": round(counted.value / elapsed), "records": counted.value,
                "seconds": round(elapsed, 2),
                "broker_cpu_us_per_record": round(cpu * 1e6 / max(counted.value, 1), 2),
                "log_bytes_per_record": round((log_after - log_before) / max(counted.value, 1), 2)}
    finally:
        process.terminate()
        process.wait(30)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=str(ROOT / "target" / "release" / "shoal"))
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--label", default="", help="named in the results' file name")
    args = ap.parse_args()
    runs = {}
    for _ in range(args.rounds):
        for members in (1, 2, 4):
            for kind in ("share", "classic"):
                result = run(args.binary, kind, members, args.records)
                print(kind, members, result, flush=True)
                runs.setdefault(f"{kind}-{members}", []).append(result)
    summary = {}
    for members in (1, 2, 4):
        share = statistics.median(r["records_per_s"] for r in runs[f"share-{members}"])
        classic = statistics.median(r["records_per_s"] for r in runs[f"classic-{members}"])
        log = statistics.median(r["log_bytes_per_record"] for r in runs[f"share-{members}"])
        cpu = {kind: statistics.median(r["broker_cpu_us_per_record"]
                                       for r in runs[f"{kind}-{members}"])
               for kind in ("share", "classic")}
        summary[f"{members}-members"] = {
            "share_records_per_s": share, "classic_records_per_s": classic,
            "share_over_classic": round(share / classic, 3),
            "share_broker_cpu_us_per_record": cpu["share"],
            "classic_broker_cpu_us_per_record": cpu["classic"],
            "share_log_bytes_per_record": log}
    workload = {"records": args.records, "value_bytes": len(VALUE), "partitions": PARTITIONS,
                "share": "librdkafka ShareConsumer, explicit ACCEPT of every record",
                "classic": "librdkafka Consumer (classic protocol), no commits",
                "timing": "from the members' start to the last record, joining included "
                          "([groups] initial_rebalance_delay_ms = 0); broker CPU over the same",
                "cores": "broker one shard + coordinator on CPU 0, every member on CPU 1",
                "rounds": args.rounds, "binary": args.binary}
    name = f"share-groups-{args.label}" if args.label else "share-groups"
    write_results(name, "scripts/share_bench.py", workload, summary, runs)


if __name__ == "__main__":
    main()
