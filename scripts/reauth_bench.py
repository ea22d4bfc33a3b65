#!/usr/bin/env python3
"""Produce with KIP-368 re-authentication every 10 s against none (issue 50): one broker
(one shard and the coordinator on --broker-cpus) with a SASL_PLAINTEXT listener and
`connections_max_reauth_ms` 10000 or 0, fresh per run; confluent-kafka's producer (librdkafka,
which re-authenticates by itself) on --bench-cpus sends 1 KiB values with acks=all for
--seconds, logged in with SCRAM-SHA-512. The two settings alternate for --rounds rounds.
Reports MB/s (bounded by the Python producer) and the broker's CPU per GB, as ratios, and the
re-authentications the broker counted.

    python3 scripts/reauth_bench.py [--rounds 2] [--seconds 25]

Writes perf-results/<date>-reauth-produce.json.
"""

import argparse
import json
import os
import pathlib
import shutil
import statistics
import tempfile
import time

from confluent_kafka import Producer

from benchlib import alternating_rounds, cpu_seconds, free_port, stop, write_results
from peer_compare import add_scram_user, start_shoal_with_sasl

VALUE = os.urandom(512).hex().encode()  # 1 KiB


def metric(port, name):
    import urllib.request
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0


def one_run(args, reauth_ms):
    work = pathlib.Path(tempfile.mkdtemp())
    metrics_port = free_port()
    extra = ('[sasl]\nenabled_mechanisms = ["SCRAM-SHA-512"]\n'
             f"connections_max_reauth_ms = {reauth_ms}\n")
    process, port, sasl_port = start_shoal_with_sasl(work, args.broker_cpus, extra, metrics_port)
    try:
        add_scram_user(port, "bench", b"bench-secret")
        errors = []
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{sasl_port}",
                             "security.protocol": "SASL_PLAINTEXT",
                             "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "bench",
                             "sasl.password": "bench-secret", "acks": "all", "linger.ms": 5,
                             "batch.size": 1 << 20, "queue.buffering.max.kbytes": 65536,
                             "error_cb": errors.append})
        producer.produce("bench", value=VALUE)
        producer.flush(30)
        before_cpu = cpu_seconds(process.pid)
        sent = 0
        started = time.perf_counter()
        while time.perf_counter() - started < args.seconds:
            try:
                producer.produce("bench", value=VALUE)
                sent += 1
            except BufferError:
                producer.poll(0.01)
        assert producer.flush(120) == 0, errors[:3]
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds(process.pid) - before_cpu
        gigabytes = sent * len(VALUE) / 1e9
        return {"mb_per_s": round(sent * len(VALUE) / 1e6 / elapsed, 1),
                "broker_cpu_s_per_gb": round(cpu / gigabytes, 3),
                "reauthentications": metric(metrics_port, "shoal_sasl_reauthentications_total"),
                "sessions_expired": metric(metrics_port, "shoal_sasl_sessions_expired_total"),
                "client_errors": len(errors)}
    finally:
        stop(process)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=25)
    ap.add_argument("--broker-cpus", default="0")
    ap.add_argument("--bench-cpus", default="1")
    args = ap.parse_args()
    os.sched_setaffinity(0, {int(c) for c in args.bench_cpus.split(",")})
    runs = [{} for _ in range(args.rounds)]
    for round_, side in alternating_rounds(args.rounds):
        name, reauth_ms = ("reauth", 10_000) if side == "a" else ("none", 0)
        runs[round_].update({f"{name}_{k}": v for k, v in one_run(args, reauth_ms).items()})
    print(json.dumps(runs), flush=True)
    medians = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    results = {**medians,
               "reauth_over_none_mb_per_s": round(
                   medians["reauth_mb_per_s"] / medians["none_mb_per_s"], 3),
               "reauth_over_none_cpu_per_gb": round(
                   medians["reauth_broker_cpu_s_per_gb"] / medians["none_broker_cpu_s_per_gb"],
                   3)}
    workload = {
        "produce": "confluent-kafka Producer (librdkafka 2.16), 1 KiB values, acks=all, "
                   "linger.ms=5, SCRAM-SHA-512 over SASL_PLAINTEXT, one topic (auto-created)",
        "settings": "connections_max_reauth_ms 10000 (re-authentication every ~9 s) against 0",
        "seconds": args.seconds, "rounds": args.rounds,
        "broker_cpus": args.broker_cpus, "client_cpus": args.bench_cpus,
    }
    write_results("reauth-produce", "scripts/reauth_bench.py", workload, results, runs)


if __name__ == "__main__":
    main()
