#!/usr/bin/env python3
"""What transactions cost: one confluent-kafka producer (librdkafka) writing groups of N
records (1 KiB, spread over 3 partitions) for a fixed time, each group either one transaction
(begin, produce, commit_transaction) or, as the baseline, idempotent records followed by a
flush (the same wait for acknowledgement, without the transaction's two coordinator rounds
and markers). Rounds alternate the two so machine drift hits both alike. Broker on CPU 0 (one
shard, coordinator beside it), the client on CPU 1.

    python3 scripts/transactions_bench.py [--seconds 5] [--rounds 3] [--sizes 1,10,100]

Writes perf-results/<date>-transactions.json with the workload.
"""

import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import tempfile
import time

from benchlib import ROOT, free_port, wait_for_port, write_results

SHOAL = ROOT / "target" / "release" / "shoal"
VALUE = b"x" * 1024


def run(mode, size, seconds):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    work = pathlib.Path(tempfile.mkdtemp())
    port = free_port()
    config = work / "shoal.toml"
    config.write_text(f'listen = "127.0.0.1:{port}"\ndata_dir = "{work / "data"}"\n'
                      "[shards]\ncores = [0]\n[coordinator]\ncore = 0\n")
    # The broker places itself on CPU 0; this process (the client) stays on CPU 1.
    everywhere = set(range(os.cpu_count()))
    broker = subprocess.Popen([SHOAL, "--config", config], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL,
                              preexec_fn=lambda: os.sched_setaffinity(0, everywhere))
    try:
        wait_for_port(port)
        bootstrap = f"127.0.0.1:{port}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("bench", num_partitions=3)])["bench"].result(15)
        settings = {"bootstrap.servers": bootstrap, "linger.ms": 1, "enable.idempotence": True}
        if mode == "transactional":
            settings["transactional.id"] = "bench"
        producer = Producer(settings)
        if mode == "transactional":
            producer.init_transactions(15)
        groups, latencies = 0, []
        deadline = time.time() + seconds
        while time.time() < deadline:
            started = time.perf_counter()
            if mode == "transactional":
                producer.begin_transaction()
            for i in range(size):
                producer.produce("bench", value=VALUE, partition=i % 3)
            if mode == "transactional":
                producer.commit_transaction(30)
            else:
                assert producer.flush(30) == 0
            latencies.append((time.perf_counter() - started) * 1000)
            groups += 1
        latencies.sort()
        return {"groups_per_s": round(groups / seconds, 1),
                "records_per_s": round(groups * size / seconds, 1),
                "p50_ms": round(latencies[len(latencies) // 2], 2),
                "p99_ms": round(latencies[int(len(latencies) * 0.99)], 2)}
    finally:
        broker.terminate()
        broker.wait(30)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="1,10,100")
    args = ap.parse_args()
    os.sched_setaffinity(0, {1 % os.cpu_count()})
    sizes = [int(s) for s in args.sizes.split(",")]
    modes = ["idempotent", "transactional"]
    runs = {f"{m}, {n} per group": [] for n in sizes for m in modes}
    for _ in range(args.rounds):
        for n in sizes:
            for m in modes:
                runs[f"{m}, {n} per group"].append(run(m, n, args.seconds))
    summary = {}
    for n in sizes:
        per = {}
        for m in modes:
            rs = runs[f"{m}, {n} per group"]
            per[m] = {key: statistics.median(r[key] for r in rs)
                      for key in ("groups_per_s", "records_per_s", "p50_ms", "p99_ms")}
        per["transactional_over_idempotent_groups_per_s"] = round(
            per["transactional"]["groups_per_s"] / per["idempotent"]["groups_per_s"], 3)
        summary[f"{n} records per group"] = per
    workload = {"client": "confluent-kafka (librdkafka) Producer, linger.ms=1, idempotent; "
                          "1 KiB records over 3 partitions, one group at a time (closed loop)",
                "group": "transactional: begin + produce N + commit_transaction; idempotent: "
                         "produce N + flush",
                "seconds": args.seconds, "rounds": args.rounds,
                "cores": "broker one shard + coordinator on CPU 0, client on CPU 1",
                "broker": "defaults (local object store, commit interval 5 ms)"}
    write_results("transactions", "scripts/transactions_bench.py", workload, summary, runs)


if __name__ == "__main__":
    main()
