#!/usr/bin/env python3
"""Producer latency at low load, as librdkafka's test 0055 measures it: one confluent-kafka
producer, acks=all, linger.ms=0, one message at a time, each waited for before the next. The
broker binaries named on the command line run one after another on the same machine, rounds
alternating, so the ratio between them is from one run.

    python3 scripts/low_load_latency.py [--messages 500] [--rounds 3] BIN [BIN...]

Writes perf-results/<date>-low-load-latency.json.
"""

import argparse
import pathlib
import shutil
import statistics
import subprocess
import tempfile
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from benchlib import free_port, wait_for_port, write_results


def start(binary, work):
    port = free_port()
    config = work / "shoal.toml"
    config.write_text(f'listen = "127.0.0.1:{port}"\ndata_dir = "{work / "data"}"\n')
    process = subprocess.Popen([binary, "--config", config], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    wait_for_port(port)
    return process, f"127.0.0.1:{port}"


def measure(bootstrap, messages, gap_ms):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("latency", 1)])["latency"].result(15)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    latencies = []
    for i in range(messages + 20):
        done = []
        started = time.perf_counter()
        producer.produce("latency", value=b"x" * 100,
                         on_delivery=lambda err, _m: done.append(err))
        producer.flush(10)
        if i >= 20 and done == [None]:  # the first messages warm up the connection
            latencies.append((time.perf_counter() - started) * 1000)
        if gap_ms:
            time.sleep(gap_ms / 1000)
    latencies.sort()
    return {
        "messages": len(latencies),
        "avg_ms": round(statistics.mean(latencies), 3),
        "p50_ms": round(latencies[len(latencies) // 2], 3),
        "p99_ms": round(latencies[int(len(latencies) * 0.99)], 3),
        "max_ms": round(latencies[-1], 3),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--messages", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gap-ms", type=float, default=0,
                    help="a pause after each message is answered (an idle broker between)")
    args = ap.parse_args()
    runs = {b: [] for b in args.binaries}
    for _ in range(args.rounds):
        for binary in args.binaries:
            work = pathlib.Path(tempfile.mkdtemp())
            process, bootstrap = start(binary, work)
            try:
                runs[binary].append(measure(bootstrap, args.messages, args.gap_ms))
            finally:
                process.terminate()
                process.wait(30)
                shutil.rmtree(work, ignore_errors=True)
    summary = {b: {"avg_ms_median": statistics.median(r["avg_ms"] for r in rs),
                   "p99_ms_median": statistics.median(r["p99_ms"] for r in rs)}
               for b, rs in runs.items()}
    workload = {"client": "confluent-kafka (librdkafka) producer, acks=all, linger.ms=0",
                "pattern": "one 100-byte message at a time, each waited for (flush)"
                + (f", then {args.gap_ms} ms idle" if args.gap_ms else ""),
                "messages_per_round": args.messages, "rounds": args.rounds,
                "broker": "defaults (2 shards, commit_interval_ms 5, local store, fsync)",
                "expectation": "librdkafka test 0055: average <= linger.ms + 5 ms"}
    write_results("low-load-latency", "scripts/low_load_latency.py", workload, summary, runs)

if __name__ == "__main__":
    main()
