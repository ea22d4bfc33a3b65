#!/usr/bin/env python3
"""Produce latency and throughput on S3 as a distant store makes them: one partition, Shoal on
s3s-fs behind scripts/s3_latency_proxy.py (--delay-ms added to every request, 50 by default),
commit interval 250 ms, and three producers, each alone:
- shoal-bench: a client that pipelines (1 connection, 8 requests in flight, 100 records a request,
  1,000 at max);
- librdkafka (confluent-kafka): acks=all, linger.ms 5, batch.size 1 MB; it sends one request per
  partition at a time, so records wait a round in the client;
- the Java producer (Kafka's ProducerPerformance from tests/java's pinned jars): acks=all,
  linger.ms 5, batch.size 1 MB, its default 5 requests in flight.
Each runs at --rate-mb (1 MB/s of 1 KiB records: latency p50/p99 from send to acknowledgement)
and then at its max (closed loop: MB/s). PUTs are the broker's own count of PutObject requests
answered ok in each phase.

    python3 scripts/s3_latency.py [--seconds 15] [--delay-ms 50] [--throttle 0] [--rounds 1]
        [--label NAME] [BIN_DIR]

--throttle F has the proxy answer a fraction F of requests 503 SlowDown (the broker retries them).

Shoal's one shard and coordinator run on CPU 0; the producers, s3s-fs and the proxy on CPU 1.
BIN_DIR holds `shoal` and `shoal-bench` (default target/release). Writes
perf-results/<date>-s3-latency.json.
"""

import argparse
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

from benchlib import (ROOT, free_port, percentile, s3s_fs_binary, start_s3s_fs, stop,
                      wait_for_port, write_results)

BUCKET, KEY, SECRET = "shoal", "KEY", "SECRET"
CLASSPATH = ROOT / "tests" / "java" / "target" / "kafka.classpath"
PERF_LINE = re.compile(r"([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                       r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th")
PUTS = re.compile(r'^shoal_object_store_requests_total\{[^}]*operation="PutObject"[^}]*'
                  r'outcome="ok"[^}]*\} (\S+)$', re.M)
LIBRDKAFKA = {"acks": "all", "linger.ms": 5, "batch.size": 1 << 20,
              "queue.buffering.max.kbytes": 1 << 20}
JAVA = ["acks=all", "linger.ms=5", f"batch.size={1 << 20}"]


def puts(metrics_port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read()
    return sum(float(v) for v in PUTS.findall(text.decode()))


def shoal_bench(bin_dir, bootstrap, topic, seconds, rate_records):
    # At max, requests of 1,000 records (1 MB), as the other producers' 1 MB batches.
    per_request = "100" if rate_records else "1000"
    out = pathlib.Path(tempfile.mktemp(suffix=".json"))
    subprocess.run([bin_dir / "shoal-bench", "produce", "--bootstrap", bootstrap, "--topic", topic,
                    "--create", "--partitions", "1", "--connections", "1", "--max-in-flight", "8",
                    "--records-per-batch", per_request, "--duration-s", str(seconds),
                    "--rate", str(rate_records), "--cpus", "1",
                    "--output", out], check=True, capture_output=True, timeout=seconds + 120)
    results = json.loads(out.read_text())["results"]
    out.unlink()
    return {"mb_per_s": results["produce"]["mb_per_s"],
            "p50_ms": results["produce_latency_ms"]["p50"],
            "p99_ms": results["produce_latency_ms"]["p99"]}


def librdkafka(bootstrap, topic, seconds, rate_records):
    """confluent-kafka in a process of its own on CPU 1 (this script's code, --librdkafka-child)."""
    done = subprocess.run(["taskset", "-c", "1", sys.executable, __file__, "--librdkafka-child",
                           json.dumps([bootstrap, topic, seconds, rate_records])],
                          check=True, capture_output=True, text=True, timeout=seconds + 180)
    return json.loads(done.stdout.strip().splitlines()[-1])


def librdkafka_child(bootstrap, topic, seconds, rate_records):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, **LIBRDKAFKA})
    latencies, failed, value = [], [], b"x" * 1024

    def delivered(sent):
        return lambda error, _m: (failed.append(error) if error
                                  else latencies.append(time.monotonic() - sent))
    started = time.monotonic()
    sent = 0
    while (now := time.monotonic()) < started + seconds:
        due = started + sent / rate_records if rate_records else now
        if due > now:
            producer.poll(min(due - now, 0.01))
            continue
        try:
            producer.produce(topic, value, partition=0, on_delivery=delivered(now))
            sent += 1
        except BufferError:
            producer.poll(0.005)
        producer.poll(0)
    producer.flush(120)
    elapsed = time.monotonic() - started
    print(json.dumps({"mb_per_s": round(len(latencies) * 1024 / elapsed / 1e6, 2),
                      "p50_ms": round(1000 * percentile(latencies, 0.5), 1),
                      "p99_ms": round(1000 * percentile(latencies, 0.99), 1),
                      "failed": len(failed)}))


def java_producer(bootstrap, topic, seconds, rate_records, max_records):
    records = int(rate_records * seconds) if rate_records else max_records
    subprocess.run(["taskset", "-c", "1", "java", "-cp", CLASSPATH.read_text().strip(),
                    "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap,
                    "--create", "--topic", topic, "--partitions", "1"],
                   check=True, capture_output=True, timeout=120)
    done = subprocess.run(
        ["taskset", "-c", "1", "java", "-cp", CLASSPATH.read_text().strip(),
         "org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records",
         str(records), "--record-size", "1024", "--throughput", str(rate_records or -1),
         "--producer-props", f"bootstrap.servers={bootstrap}", *JAVA],
        check=True, capture_output=True, text=True, timeout=seconds + 300)
    match = PERF_LINE.findall(done.stdout)[-1]
    return {"mb_per_s": float(match[1]), "p50_ms": int(match[5]), "p99_ms": int(match[6])}


def one_round(bin_dir, endpoint, args, work):
    port, metrics_port = free_port(), free_port()
    (work / "shoal.toml").write_text(
        f'listen = "127.0.0.1:{port}"\nmetrics_listen = "127.0.0.1:{metrics_port}"\n'
        f'data_dir = "{work / "data"}"\n[shards]\ncores = [0]\n[coordinator]\ncore = 0\n'
        f"[produce]\ncommit_interval_ms = {args.interval_ms}\n[object_store]\nkind = \"s3\"\n"
        f'endpoint = "{endpoint}"\nbucket = "{BUCKET}"\naccess_key_id = "{KEY}"\n'
        f'secret_access_key = "{SECRET}"\n')
    broker = subprocess.Popen([bin_dir / "shoal", "--config", work / "shoal.toml"],
                              stdout=open(work / "shoal.log", "wb"), stderr=subprocess.STDOUT)
    bootstrap = f"127.0.0.1:{port}"
    rate = int(args.rate_mb * 1e6 / 1024)
    results = {}
    try:
        wait_for_port(port, 60)
        for client in ("shoal-bench", "librdkafka", "java"):
            for phase, records_per_s in (("rate", rate), ("max", 0)):
                topic = f"{client}-{phase}"
                before = puts(metrics_port)
                started = time.monotonic()
                if client == "shoal-bench":
                    figures = shoal_bench(bin_dir, bootstrap, topic, args.seconds, records_per_s)
                elif client == "librdkafka":
                    figures = librdkafka(bootstrap, topic, args.seconds, records_per_s)
                else:
                    figures = java_producer(bootstrap, topic, args.seconds, records_per_s,
                                            args.java_max_records)
                elapsed = time.monotonic() - started
                figures["puts_per_s"] = round((puts(metrics_port) - before) / elapsed, 1)
                results[f"{client}_{phase}"] = figures
                print(client, phase, figures, flush=True)
    finally:
        stop(broker)
    return results


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--librdkafka-child":
        return librdkafka_child(*json.loads(sys.argv[2]))
    ap = argparse.ArgumentParser()
    ap.add_argument("bin_dir", nargs="?", default=str(ROOT / "target" / "release"))
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--delay-ms", type=float, default=50)
    ap.add_argument("--throttle", type=float, default=0.0,
                    help="fraction of requests the proxy answers 503 SlowDown")
    ap.add_argument("--interval-ms", type=int, default=250)
    ap.add_argument("--rate-mb", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--java-max-records", type=int, default=300000)
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    bin_dir = pathlib.Path(args.bin_dir)
    work = pathlib.Path(tempfile.mkdtemp(prefix="shoal-s3-latency-"))
    (work / "s3" / BUCKET).mkdir(parents=True)
    s3, s3_endpoint = start_s3s_fs(work / "s3", KEY, SECRET, binary=s3s_fs_binary())
    proxy_port = free_port()
    proxy = subprocess.Popen(
        ["taskset", "-c", "1", sys.executable, ROOT / "scripts" / "s3_latency_proxy.py",
         "--listen", f"127.0.0.1:{proxy_port}", "--store", s3_endpoint.split("//", 1)[1],
         "--delay-ms", str(args.delay_ms), "--throttle", str(args.throttle)],
        stdout=subprocess.PIPE, text=True)
    runs = []
    try:
        wait_for_port(proxy_port)
        for round_ in range(args.rounds):
            round_work = work / f"round{round_}"
            round_work.mkdir()
            runs.append(one_round(bin_dir, f"http://127.0.0.1:{proxy_port}", args, round_work))
    finally:
        stop(proxy)
        proxy_counts = proxy.stdout.read().strip().splitlines()[-1:]
        stop(s3)
        shutil.rmtree(work, ignore_errors=True)
    results = {key: {name: sorted(run[key][name] for run in runs)[len(runs) // 2]
                     for name in runs[0][key]} for key in runs[0]}
    results["proxy_counts"] = json.loads(proxy_counts[0]) if proxy_counts else None
    workload = {
        "store": f"s3s-fs 0.14.1 on loopback behind s3_latency_proxy.py, +{args.delay_ms} ms "
                 "on every request", "throttled_fraction": args.throttle,
        "commit_interval_ms": args.interval_ms, "partitions": 1,
        "record_bytes": 1024, "rate_mb_per_s": args.rate_mb, "seconds": args.seconds,
        "rounds": args.rounds,
        "shoal_bench": "1 connection, 8 in flight, 100 records a request (1,000 at max)",
        "librdkafka": LIBRDKAFKA, "java_producer": JAVA + ["max.in.flight 5 (default)"],
        "java_max_records": args.java_max_records,
        "cores": "Shoal's shard and coordinator on CPU 0; producers, s3s-fs and proxy on CPU 1",
    }
    name = "s3-latency" + (f"-{args.label}" if args.label else "")
    write_results(name, "scripts/s3_latency.py", workload, results, runs)


if __name__ == "__main__":
    main()
