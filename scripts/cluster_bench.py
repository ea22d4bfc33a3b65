#!/usr/bin/env python3
"""One broker against three, on one PostgreSQL (the coordinator's log and the membership
table) and one s3s-fs bucket, both started here as the tests start them:

1. max produce with shoal-bench, one instance per broker, each steered to its broker with
   `--client-id shoal_az=<rack>`; the three instances' MB/s are summed;
2. catch-up consume of what was produced, the same way;
3. the time from kill -9 of one of three brokers to every partition taking records again,
   for a confluent-kafka producer bootstrapped with all three (acks=all, idempotent).

    python3 scripts/cluster_bench.py [--seconds 8] [--lease-ms 10000 --heartbeat-ms 2000]

On a 2-core machine every process shares both CPUs: brokers are pinned to CPU 0 and the
generators to CPU 1 in both cases, so three brokers get no more CPU than one and the
comparison shows what clustering costs, not how it scales. Writes
perf-results/<date>-cluster.json (<date>-cluster-lease-<ms>ms.json for another lease).
"""

import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

from benchlib import ROOT, free_port, wait_for_port, write_results

sys.path.insert(0, str(ROOT / "tests" / "integration"))
from conftest import PostgresServer, S3Server  # noqa: E402

RACKS = "abc"
BIN = ROOT / "target" / "release"


def start_brokers(count, work, s3, database, lease_ms, heartbeat_ms):
    brokers = []
    for index in range(count):
        node = work / f"node{index + 1}"
        node.mkdir(parents=True, exist_ok=True)
        port = free_port()
        config = node / "shoal.toml"
        config.write_text(
            f'listen = "127.0.0.1:{port}"\ndata_dir = "{node / "data"}"\n'
            f"node_id = {index + 1}\n"
            "[shards]\ncores = [0]\n"
            f"{s3.broker_config()}{database}core = 0\n"
            f'[cluster]\nenabled = true\nrack = "{RACKS[index]}"\n'
            f"lease_ms = {lease_ms}\nheartbeat_ms = {heartbeat_ms}\n")
        log = open(node / "shoal.log", "wb")
        process = subprocess.Popen([BIN / "shoal", "--config", config], stdout=log,
                                   stderr=subprocess.STDOUT)
        wait_for_port(port)
        brokers.append((port, process))
    time.sleep(heartbeat_ms / 1000 * 2)  # every broker has read who is alive
    return brokers


def bench_all(mode, brokers, topic, seconds, work, extra=()):
    """One shoal-bench per broker at once, each in its broker's zone; their results."""
    runs = []
    for index, (port, _) in enumerate(brokers):
        out = work / f"{mode}-{topic}-{index}.json"
        args = [BIN / "shoal-bench", mode, "--bootstrap", f"127.0.0.1:{port}", "--topic", topic,
                "--client-id", f"shoal_az={RACKS[index]}", "--duration-s", str(seconds),
                "--cpus", "1", "--output", out, *extra]
        runs.append((out, subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.PIPE)))
    results = []
    for out, process in runs:
        _, err = process.communicate(timeout=seconds * 4 + 60)
        assert process.returncode == 0, err.decode()
        results.append(json.loads(out.read_text())["results"])
    return results


def summary(results, key, latency):
    return {"instances": len(results),
            "mb_per_s_total": round(sum(r[key]["mb_per_s"] for r in results), 1),
            "mb_per_s_each": [r[key]["mb_per_s"] for r in results],
            "p99_ms_max": max(r[latency]["p99"] for r in results) if latency else None}


def time_to_produce_again(brokers, work):
    """A producer on all three brokers; kill -9 broker 2; seconds until every partition has
    an acknowledgement from after the kill."""
    everyone = ",".join(f"127.0.0.1:{port}" for port, _ in brokers)
    script = work / "again.py"
    script.write_text(
        "import sys, time\n"
        "from confluent_kafka import Producer\n"
        "from confluent_kafka.admin import AdminClient, NewTopic\n"
        "bootstrap, kill_pid = sys.argv[1], int(sys.argv[2])\n"
        # Enough partitions that broker 2 leads some whatever the topic's random id.
        "PARTITIONS = 24\n"
        "admin = AdminClient({'bootstrap.servers': bootstrap})\n"
        "admin.create_topics([NewTopic('again', num_partitions=PARTITIONS)])['again'].result(10)\n"
        "p = Producer({'bootstrap.servers': bootstrap, 'acks': 'all',\n"
        "              'enable.idempotence': True, 'linger.ms': 5})\n"
        "acked = {}\n"
        "def done(err, msg):\n"
        "    if err is None: acked[msg.partition()] = time.time()\n"
        "led = admin.list_topics(timeout=10).topics['again'].partitions.values()\n"
        "assert any(q.leader == 2 for q in led), 'broker 2 leads no partition'\n"
        "start, i = time.time(), 0\n"
        "while time.time() - start < 3:\n"
        "    p.produce('again', b'x', partition=i % PARTITIONS); p.poll(0.001); i += 1\n"
        "import os, signal\n"
        "killed = time.time(); os.kill(kill_pid, signal.SIGKILL)\n"
        "while time.time() - killed < 60:\n"
        "    p.produce('again', b'x', partition=i % PARTITIONS, on_delivery=done); p.poll(0.001)\n"
        "    i += 1\n"
        "    if len([t for t in acked.values() if t > killed]) == PARTITIONS: break\n"
        "print(max(acked.values()) - killed if len(acked) == PARTITIONS else -1)\n")
    out = subprocess.run([sys.executable, script, everyone, str(brokers[1][1].pid)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return round(float(out.stdout.strip().splitlines()[-1]), 2)


def stop(brokers):
    for _, process in brokers:
        if process.poll() is None:
            process.terminate()
            process.wait(30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--lease-ms", type=int, default=10_000)
    ap.add_argument("--heartbeat-ms", type=int, default=2_000)
    args = ap.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="shoal-cluster-bench-"))
    postgres = PostgresServer().start()
    s3 = S3Server(work).start()
    results, runs = {}, {}
    try:
        for count in (1, 3):
            database = postgres.new_database_config()
            brokers = start_brokers(count, work / f"cluster{count}", s3, database,
                                    args.lease_ms, args.heartbeat_ms)
            try:
                topic = f"bench{count}"
                produced = bench_all("produce", brokers, topic, args.seconds, work,
                                     ["--create", "--partitions", "8"])
                consumed = bench_all("consume", brokers, topic, args.seconds, work)
                runs[f"{count} brokers"] = {"produce": produced, "consume": consumed}
                results[f"{count} brokers"] = {
                    "produce": summary(produced, "produce", "produce_latency_ms"),
                    "catch-up consume": summary(consumed, "consume", None),
                }
                if count == 3:
                    results["kill -9 of one of three: seconds until every partition is "
                            "acknowledged again"] = time_to_produce_again(brokers, work)
            finally:
                stop(brokers)
        name = "cluster" if args.lease_ms == 10_000 else f"cluster-lease-{args.lease_ms}ms"
        write_results(name, "scripts/cluster_bench.py",
                      {"generator": "shoal-bench, one instance per broker in its zone, 1 KiB "
                                    "records, 100 per batch, 8 partitions, 4 connections x 8 "
                                    "in flight, acks=all",
                       "seconds": args.seconds,
                       "cores": "every broker on CPU 0 (shard and coordinator), every "
                                "generator on CPU 1; PostgreSQL and s3s-fs unpinned",
                       "store": "s3s-fs 0.14.1 on loopback", "database": "PostgreSQL 15",
                       "lease_ms": args.lease_ms, "heartbeat_ms": args.heartbeat_ms},
                      results, runs)
    finally:
        s3.kill()
        postgres.stop()
        shutil.rmtree(postgres.dir, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
