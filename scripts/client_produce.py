#!/usr/bin/env python3
"""One Kafka client producing into 4 partitions, against broker binaries and optionally Tansu,
in one run with rounds alternating: confluent-kafka (librdkafka 2.x) sends MB of 1 KiB messages,
acks=all, linger.ms 5, over one connection, and every message is waited for. Brokers run with
their defaults (Shoal: one shard per CPU, the coordinator beside shard 0, local store with
fsync; Tansu 0.6: memory engine) and share the machine's CPUs with the client.

    python3 scripts/client_produce.py [--mb 200] [--rounds 3] [--label NAME] BIN... [tansu]

Writes perf-results/<date>-client-produce[-NAME].json with the workload.
"""

import argparse
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

from benchlib import ROOT, cpu_seconds, free_port, stop, wait_for_port, write_results
from peer_compare import start_tansu


def start_shoal(binary, work):
    port = free_port()
    (work / "shoal.toml").write_text(
        f'listen = "127.0.0.1:{port}"\ndata_dir = "{work / "data"}"\n')
    process = subprocess.Popen([binary, "--config", work / "shoal.toml"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return process, port


def create_topic(port):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    admin.create_topics([NewTopic("librdkafka", 4)])["librdkafka"].result(15)


def one_round(broker, mb):
    work = pathlib.Path(tempfile.mkdtemp())
    if broker == "tansu":
        process, port = start_tansu(work, "0-1", None)
    else:
        process, port = start_shoal(broker, work)
    try:
        wait_for_port(port)
        create_topic(port)
        before = cpu_seconds(process.pid)
        done = subprocess.run([sys.executable, ROOT / "scripts" / "librdkafka_produce.py",
                               f"127.0.0.1:{port}", "librdkafka", str(mb * 1000 * 1000 // 1024)],
                              check=True, capture_output=True, text=True, timeout=600)
        seconds = float(done.stdout.strip())
        cpu = cpu_seconds(process.pid) - before
        return {"mb_per_s": round(mb / seconds, 1),
                "broker_cpu_ms_per_gb": round(cpu * 1000 / (mb / 1000), 1)}
    finally:
        stop(process)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("brokers", nargs="+", help="Shoal binaries, or 'tansu'")
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    if "tansu" in args.brokers and shutil.which("tansu") is None:
        raise SystemExit("tansu is not installed; see scripts/peer_compare.py")
    runs = {b: [] for b in args.brokers}
    for _ in range(args.rounds):
        for broker in args.brokers:
            runs[broker].append(one_round(broker, args.mb))
            print(broker, runs[broker][-1], flush=True)
    summary = {b: {"mb_per_s_median": statistics.median(r["mb_per_s"] for r in rs),
                   "broker_cpu_ms_per_gb_median":
                       statistics.median(r["broker_cpu_ms_per_gb"] for r in rs)}
               for b, rs in runs.items()}
    first = args.brokers[0]
    for b in args.brokers[1:]:
        summary[b]["throughput_over_first"] = round(
            summary[b]["mb_per_s_median"] / summary[first]["mb_per_s_median"], 3)
    workload = {"client": "scripts/librdkafka_produce.py: confluent-kafka, one producer, "
                          "1 KiB messages, 4 partitions, acks=all, linger.ms 5",
                "mb": args.mb, "rounds": args.rounds,
                "brokers": "defaults, every CPU (Shoal: a shard per CPU, local store with "
                           "fsync; Tansu 0.6.0: memory engine), shared with the client",
                "first": first}
    name = "client-produce" + (f"-{args.label}" if args.label else "")
    write_results(name, "scripts/client_produce.py", workload, summary, runs)


if __name__ == "__main__":
    main()
