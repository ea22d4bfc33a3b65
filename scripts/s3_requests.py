#!/usr/bin/env python3
"""What two broker binaries cost in S3 requests, on one s3s-fs: PUTs per second at low load
(shoal-bench produce at 100 one-record 1 KiB batches a second, acks=all) and PUTs per GB at
maximum load (closed loop, default flags), with the throughput of that phase. The broker's
settings are the README's S3 example (commit_interval_ms = 50), one shard and the
coordinator on CPU 0, the generator and s3s-fs on CPU 1. PUTs are the objects the broker
stored (no object here reaches the multipart threshold), counted in s3s-fs's directory.

    python3 scripts/s3_requests.py [--seconds 8] BIN_A BIN_B

Writes perf-results/<date>-s3-requests.json."""

import argparse
import json
import pathlib
import shutil
import subprocess
import tempfile

from benchlib import ROOT, free_port, wait_for_port, write_results

BENCH = ROOT / "target" / "release" / "shoal-bench"
BUCKET = "shoal"
KEY, SECRET = "KEY", "SECRET"


def objects(s3_root):
    return sum(1 for p in (s3_root / BUCKET).rglob("*") if p.is_file())


def produce(bootstrap, topic, seconds, extra):
    out = pathlib.Path(tempfile.mktemp(suffix=".json"))
    subprocess.run(["taskset", "-c", "1", BENCH, "produce", "--bootstrap", bootstrap, "--topic",
                    topic, "--create", "--duration-s", str(seconds), "--output", out] + extra,
                   check=True, capture_output=True)
    result = json.loads(out.read_text())
    return result["results"] if "results" in result else result


def measure(binary, s3_root, endpoint, seconds, work):
    work.mkdir(parents=True)
    port = free_port()
    config = work / "shoal.toml"
    config.write_text(
        f'listen = "127.0.0.1:{port}"\ndata_dir = "{work / "data"}"\n'
        "[shards]\ncores = [0]\n[coordinator]\ncore = 0\n"
        "[produce]\ncommit_interval_ms = 50\n"
        f'[object_store]\nkind = "s3"\nendpoint = "{endpoint}"\nbucket = "{BUCKET}"\n')
    env = {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "PATH": "/usr/bin:/bin"}
    broker = subprocess.Popen(["taskset", "-c", "0", binary, "--config", config], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        bootstrap = f"127.0.0.1:{port}"
        before = objects(s3_root)
        low = produce(bootstrap, "low", seconds,
                      ["--rate", "100", "--records-per-batch", "1", "--connections", "1"])
        low_puts = objects(s3_root) - before
        before = objects(s3_root)
        high = produce(bootstrap, "high", seconds, [])
        high_puts = objects(s3_root) - before
        return {
            "low_load_puts_per_s": round(low_puts / seconds, 1),
            "low_load_p50_ms": low["produce_latency_ms"]["p50"],
            "max_mb_per_s": high["produce"]["mb_per_s"],
            "max_puts_per_s": round(high_puts / seconds, 1),
            "max_puts_per_gb": round(high_puts / (high["produce"]["bytes"] / 1e9), 1),
        }
    finally:
        broker.terminate()
        broker.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs=2)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--s3s-fs-bin", default=shutil.which("s3s-fs") or
                    str(pathlib.Path.home() / ".cargo" / "bin" / "s3s-fs"))
    args = ap.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="shoal-s3-requests-"))
    s3_root = work / "s3"
    (s3_root / BUCKET).mkdir(parents=True)
    s3_port = free_port()
    s3 = subprocess.Popen(["taskset", "-c", "1", args.s3s_fs_bin, "--host", "127.0.0.1",
                           "--port", str(s3_port), "--access-key", KEY, "--secret-key", SECRET,
                           str(s3_root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(s3_port)
        endpoint = f"http://127.0.0.1:{s3_port}"
        runs = {}
        for name, binary in zip("ab", args.binaries):
            runs[name] = measure(binary, s3_root, endpoint, args.seconds, work / name)
    finally:
        s3.terminate()
        s3.wait()
        shutil.rmtree(work, ignore_errors=True)
    workload = {
        "store": "s3s-fs 0.14.1 on loopback", "commit_interval_ms": 50, "seconds": args.seconds,
        "low_load": "shoal-bench produce --rate 100 --records-per-batch 1 --connections 1 "
                    "(1 KiB records, acks=all)",
        "max_load": "shoal-bench produce, default flags, closed loop",
        "cores": "broker one shard + coordinator on CPU 0; generator and s3s-fs on CPU 1",
        "a": args.binaries[0], "b": args.binaries[1],
    }
    write_results("s3-requests", "scripts/s3_requests.py", workload, runs, [])


if __name__ == "__main__":
    main()
