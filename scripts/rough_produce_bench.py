#!/usr/bin/env python3
"""A first, rough produce benchmark with confluent-kafka until shoal-bench exists.

Phase 1 (closed loop) measures maximum acked throughput; phase 2 produces at a fixed
fraction of it and reports the latency from produce() to the delivery report (this includes
the client's own queueing and linger). Results go to perf-results/ with the workload.
"""

import argparse
import json
import os
import platform
import subprocess
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from benchlib import percentile


def run_phase(bootstrap, topic, record_bytes, seconds, rate, linger_ms):
    producer = Producer({
        "bootstrap.servers": bootstrap, "acks": "all", "linger.ms": linger_ms,
        "batch.size": 1 << 20, "queue.buffering.max.kbytes": 256 << 10,
        "enable.idempotence": False,
    })
    payload = os.urandom(record_bytes)
    latencies_ms = []
    acked = [0]

    def on_delivery(err, msg, sent=None):
        if err is None:
            acked[0] += 1

    start = time.perf_counter()
    sent = 0
    while True:
        now = time.perf_counter()
        elapsed = now - start
        if elapsed >= seconds:
            break
        if rate and sent >= rate * elapsed:
            producer.poll(0.0005)
            continue
        t0 = time.perf_counter()

        def cb(err, msg, t0=t0):
            if err is None:
                acked[0] += 1
                latencies_ms.append((time.perf_counter() - t0) * 1000)

        try:
            producer.produce(topic, value=payload, on_delivery=cb)
            sent += 1
        except BufferError:
            producer.poll(0.001)
        producer.poll(0)
    producer.flush(60)
    total = time.perf_counter() - start
    return {
        "records_acked": acked[0],
        "seconds": round(total, 3),
        "records_per_s": round(acked[0] / total),
        "mb_per_s": round(acked[0] * record_bytes / total / 1e6, 2),
        "latency_ms": {q: round(percentile(latencies_ms, v), 2) for q, v in
                       [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)]}
        if latencies_ms else None,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", default="127.0.0.1:9092")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--record-bytes", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--linger-ms", type=int, default=5)
    ap.add_argument("--load-fraction", type=float, default=0.5)
    ap.add_argument("--broker-note", default="shoal defaults (commit_interval_ms=5)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    topic = f"bench-{int(time.time())}"
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=args.partitions)])[topic].result(15)

    peak = run_phase(args.bootstrap, topic, args.record_bytes, args.seconds, None, args.linger_ms)
    target_rate = int(peak["records_per_s"] * args.load_fraction)
    paced = run_phase(args.bootstrap, topic, args.record_bytes, args.seconds, target_rate,
                      args.linger_ms)
    result = {
        "workload": {
            "tool": "scripts/rough_produce_bench.py (confluent-kafka, one Python producer)",
            "record_bytes": args.record_bytes, "partitions": args.partitions, "acks": "all",
            "linger_ms": args.linger_ms, "seconds_per_phase": args.seconds,
            "paced_phase_rate": target_rate, "broker": args.broker_note,
        },
        "machine": {"cores": os.cpu_count(), "kernel": platform.release()},
        "max_throughput": peak,
        f"at_{int(args.load_fraction * 100)}pct_of_max": paced,
    }
    print(json.dumps(result, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
