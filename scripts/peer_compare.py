#!/usr/bin/env python3
"""Shoal against Tansu on both sides of the log, in one run, same cores, alternating rounds:

- produce: shoal-bench produce, default flags (closed loop, acks=all);
- catch-up: shoal-bench consume of everything that produce left, from offset 0;
- librdkafka: confluent-kafka producing 1 KiB messages into 4 partitions, acks=all (kcat's
  client library; Debian's kcat links librdkafka 2.0.2, which cannot read Tansu's ApiVersions);
- tailing: shoal-bench e2e at a fixed rate, produce-to-consume latency.

Two settings: `local` (Shoal's local store with fsync against Tansu's memory engine: nothing
written for Tansu) and `s3` (both brokers on one s3s-fs server on loopback; Shoal with a 50 ms
commit interval, as S3 deployments use). s3s-fs runs on the generator's CPU.

    python3 scripts/peer_compare.py [--settings local,s3] [--seconds 8] [--rounds 2]
                                    [--librdkafka-mb 100] [--tail-rate 50000]

Tansu: `cargo install tansu --version 0.6.0 --no-default-features --features dynostore
--locked`; s3s-fs: `cargo install s3s-fs --version 0.14.1 --features binary --locked`;
confluent-kafka from tests/requirements.txt. Writes perf-results/<date>-peer-compare.json.
"""

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import tempfile
import sys

from benchlib import ROOT, cpu_seconds, free_port, stop, wait_for_port, write_results

BIN = ROOT / "target" / "release"
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from conftest import S3_ACCESS_KEY as KEY, S3_BUCKET as BUCKET, S3_SECRET_KEY as SECRET  # noqa
from conftest import S3Server  # noqa: E402


def start_s3s(work, cpus):
    """The tests' s3s-fs server, pinned to `cpus` (a child inherits its parent's CPUs)."""
    everywhere = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})
    try:
        return S3Server(work).start()
    finally:
        os.sched_setaffinity(0, everywhere)


def start_shoal(work, cpus, s3_endpoint, extra_toml="", metrics_port=None, binary=None):
    """extra_toml: sections appended to the config (they must not repeat one written here);
    metrics_port: where /metrics is served, if anywhere; binary: another build of shoal (the
    one before a change, say) instead of target/release's."""
    port = free_port()
    cores = ", ".join(cpus.split(","))
    text = f'metrics_listen = "127.0.0.1:{metrics_port}"\n' if metrics_port else ""
    text += (f'listen = "127.0.0.1:{port}"\ndata_dir = "{work / "data"}"\n'
            f"[shards]\ncores = [{cores}]\n[coordinator]\ncore = {cpus.split(',')[0]}\n")
    if s3_endpoint:
        text += (f"[produce]\ncommit_interval_ms = 50\n[object_store]\nkind = \"s3\"\n"
                 f'endpoint = "{s3_endpoint}"\nbucket = "{BUCKET}"\n'
                 f'access_key_id = "{KEY}"\nsecret_access_key = "{SECRET}"\n')
    (work / "shoal.toml").write_text(text + extra_toml)
    process = subprocess.Popen([binary or BIN / "shoal", "--config", work / "shoal.toml"],
                               stdout=open(work / "shoal.log", "wb"), stderr=subprocess.STDOUT)
    return process, port


def start_shoal_with_sasl(work, cpus, extra_toml, metrics_port=None):
    """start_shoal's broker with a PLAINTEXT and a SASL_PLAINTEXT listener (extra_toml holds
    the [sasl] sections), started outside the caller's CPU affinity (its cores are its
    config's). (process, PLAINTEXT port, SASL port), the SASL listener up."""
    port, sasl_port = free_port(), free_port()
    cores = ", ".join(cpus.split(","))
    text = f'metrics_listen = "127.0.0.1:{metrics_port}"\n' if metrics_port else ""
    text += (f'listeners = "PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"\n'
             f'data_dir = "{work / "data"}"\n'
             f"[shards]\ncores = [{cores}]\n[coordinator]\ncore = {cpus.split(',')[0]}\n")
    (work / "shoal.toml").write_text(text + extra_toml)
    every_cpu = set(range(os.cpu_count()))
    process = subprocess.Popen([binary or BIN / "shoal", "--config", work / "shoal.toml"],
                               stdout=open(work / "shoal.log", "wb"), stderr=subprocess.STDOUT,
                               preexec_fn=lambda: os.sched_setaffinity(0, every_cpu))
    try:
        wait_for_port(sasl_port, 30)
    except RuntimeError:
        stop(process)
        raise
    return process, port, sasl_port


def add_scram_user(port, user, password):
    """A SCRAM-SHA-512 user (4096 iterations), set through the PLAINTEXT listener on `port`."""
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    upsert = UserScramCredentialUpsertion(
        user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password)
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(10)


def start_tansu(work, cpus, s3_endpoint):
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ)
    engine = "memory://tansu/"
    if s3_endpoint:
        engine = f"s3://{BUCKET}/"
        env.update(AWS_ENDPOINT=s3_endpoint, AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET,
                   AWS_DEFAULT_REGION="us-east-1", AWS_ALLOW_HTTP="true")
    process = subprocess.Popen(
        ["taskset", "-c", cpus, shutil.which("tansu"), "broker", "--listener-url", url,
         "--advertised-listener-url", url, "--storage-engine", engine],
        stdout=open(work / "tansu.log", "wb"), stderr=subprocess.STDOUT, env=env)
    return process, port


def bench(mode, port, work, args, *extra):
    out = work / f"{mode}.json"
    subprocess.run([BIN / "shoal-bench", mode, "--bootstrap", f"127.0.0.1:{port}",
                    "--cpus", args.bench_cpus, "--output", out, *map(str, extra)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=args.seconds * 10 + 120)
    return json.loads(out.read_text())["results"]


def librdkafka_produce(port, count, args):
    """Seconds for librdkafka to produce `count` 1 KiB messages, every one acknowledged."""
    done = subprocess.run(["taskset", "-c", args.bench_cpus, sys.executable,
                           ROOT / "scripts" / "librdkafka_produce.py", f"127.0.0.1:{port}",
                           "librdkafka", str(count)],
                          check=True, capture_output=True, text=True, timeout=600)
    return float(done.stdout.strip())


def create_topic(port, topic, partitions, args):
    """shoal-bench creates topics by producing to them for a moment (0.1 s)."""
    bench("produce", port, pathlib.Path(tempfile.mkdtemp()), args, "--topic", topic, "--create",
          "--partitions", partitions, "--duration-s", "0.1")


def one_round(start, args, s3_endpoint):
    work = pathlib.Path(tempfile.mkdtemp())
    process, port = start(work, args.broker_cpus, s3_endpoint)
    try:
        wait_for_port(port)
        # librdkafka first, on a fresh broker: after gigabytes of produce, Shoal's disk is
        # still writing back while Tansu keeps everything in memory.
        create_topic(port, "librdkafka", 4, args)
        seconds = librdkafka_produce(port, args.librdkafka_mb * 1000 * 1000 // 1024, args)
        before = cpu_seconds(process.pid)
        produce = bench("produce", port, work, args, "--topic", "peer", "--create",
                        "--duration-s", args.seconds)
        cpu = cpu_seconds(process.pid) - before
        written = produce["produce"]["records"]
        catchup = bench("consume", port, work, args, "--topic", "peer", "--records", written,
                        "--duration-s", 60)
        tail = bench("e2e", port, work, args, "--topic", "tail", "--create", "--rate",
                     args.tail_rate, "--duration-s", args.seconds)
        return {
            "produce_mb_per_s": produce["produce"]["mb_per_s"],
            "produce_p99_ms": produce["produce_latency_ms"]["p99"],
            "produce_p999_ms": produce["produce_latency_ms"]["p999"],
            "produce_errors": produce.get("produce_errors"),
            "broker_cpu_ms_per_gb": round(cpu * 1e12 / max(produce["produce"]["bytes"], 1), 1),
            "catchup_mb_per_s": catchup["consume"]["mb_per_s"],
            "catchup_records": catchup["consume"]["records"], "records_written": written,
            "librdkafka_mb_per_s": round(args.librdkafka_mb * 1e6 / seconds / 1e6, 1),
            "tail_e2e_p50_ms": tail["end_to_end_latency_ms"]["p50"],
            "tail_e2e_p99_ms": tail["end_to_end_latency_ms"]["p99"],
            "tail_produce_p99_ms": tail["produce_latency_ms"]["p99"],
            "tail_records_read": tail["consume"]["records"],
            "tail_records_written": tail["produce"]["records"],
        }
    finally:
        stop(process)
        shutil.rmtree(work, ignore_errors=True)


FIGURES = ["produce_mb_per_s", "produce_p99_ms", "produce_p999_ms", "broker_cpu_ms_per_gb",
           "catchup_mb_per_s", "librdkafka_mb_per_s", "tail_e2e_p50_ms", "tail_e2e_p99_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--settings", default="local,s3")
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--librdkafka-mb", type=int, default=100)
    ap.add_argument("--tail-rate", type=int, default=50000, help="records/s of the tailing run")
    ap.add_argument("--broker-cpus", default="0")
    ap.add_argument("--bench-cpus", default="1")
    args = ap.parse_args()
    if shutil.which("tansu") is None:
        raise SystemExit("tansu is not installed; see this script's docstring")
    scratch = pathlib.Path(tempfile.mkdtemp())
    brokers = {"shoal": start_shoal, "tansu": start_tansu}
    results, runs = {}, {}
    try:
        for setting in args.settings.split(","):
            s3 = None
            if setting == "s3":
                s3 = start_s3s(scratch, args.bench_cpus)
            try:
                per = {name: [] for name in brokers}
                for _ in range(args.rounds):
                    for name, start in brokers.items():
                        run = one_round(start, args, s3 and s3.endpoint)
                        print(setting, name, json.dumps(run), flush=True)
                        per[name].append(run)
            finally:
                if s3:
                    s3.kill()
            runs[setting] = per
            medians = {name: {k: statistics.median(r[k] for r in rs) for k in FIGURES}
                       for name, rs in per.items()}
            medians["shoal_over_tansu"] = {
                k: round(medians["shoal"][k] / medians["tansu"][k], 2)
                for k in FIGURES if medians["tansu"][k]}
            results[setting] = medians
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    workload = {
        "produce": "shoal-bench produce, default flags (1 KiB records, 100 per batch, 8 "
                   "partitions, 4 connections x 8 in flight, acks=all, closed loop)",
        "catchup": "shoal-bench consume of every produced record from offset 0",
        "librdkafka": f"scripts/librdkafka_produce.py: {args.librdkafka_mb} MB of 1 KiB messages "
                      "through confluent-kafka (librdkafka 2.x), 4 partitions, acks=all, "
                      "linger.ms 5 (Debian's kcat, librdkafka 2.0.2, fails Tansu's "
                      "ApiVersions answer: 'Read underflow')",
        "tailing": f"shoal-bench e2e at {args.tail_rate} records/s (1 KiB), end-to-end latency",
        "seconds": args.seconds, "rounds": args.rounds,
        "local": "Shoal local store with fsync; Tansu 0.6.0 memory engine",
        "s3": "both on one s3s-fs 0.14.1 (loopback, generator CPU); Shoal commit_interval_ms 50",
        "broker_cpus": args.broker_cpus, "generator_cpus": args.bench_cpus,
    }
    write_results("peer-compare", "scripts/peer_compare.py", workload, results, runs)


if __name__ == "__main__":
    main()
