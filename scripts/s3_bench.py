#!/usr/bin/env python3
"""Produce through S3 (s3s-fs) at several commit intervals, next to a same-run baseline of
boto3 putting objects of the same size straight into the same server.

For each commit interval: a closed-loop phase (maximum acked throughput; the broker's upload
throughput is the bytes of WAL objects that reached the bucket per second) and a paced phase
at a fixed rate for produce latency. Writes perf-results/<date>-s3-produce.json."""

import argparse
import concurrent.futures
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import boto3
from botocore.config import Config

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from benchlib import free_port, wait_for_port  # noqa: E402
from rough_produce_bench import run_phase  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
KEY, SECRET, BUCKET = "bench-key", "bench-secret", "shoal"


def bucket_bytes(root):
    wal = root / BUCKET / "bench" / "wal"
    files = list(wal.iterdir()) if wal.exists() else []
    return sum(f.stat().st_size for f in files), len(files)


def boto3_baseline(endpoint, object_bytes, seconds, concurrency):
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEY,
                      aws_secret_access_key=SECRET, region_name="us-east-1",
                      config=Config(max_pool_connections=concurrency, retries={"max_attempts": 0}))
    body = os.urandom(object_bytes)
    deadline = time.time() + seconds

    def worker(w):
        n = 0
        while time.time() < deadline:
            s3.put_object(Bucket=BUCKET, Key=f"baseline/{w}-{n}", Body=body)
            n += 1
        return n

    started = time.time()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        puts = sum(pool.map(worker, range(concurrency)))
    elapsed = time.time() - started
    return {"object_bytes": object_bytes, "concurrency": concurrency, "puts": puts,
            "mb_per_s": round(puts * object_bytes / elapsed / 1e6, 2)}


def shoal_upload_path(endpoint, object_bytes, seconds, concurrency):
    """The same puts through Shoal's own S3 client (wal/benches/s3_upload.rs)."""
    env = dict(os.environ, SHOAL_S3_ENDPOINT=endpoint, SHOAL_S3_BUCKET=BUCKET,
               SHOAL_S3_KEY=KEY, SHOAL_S3_SECRET=SECRET,
               SHOAL_S3_OBJECT_BYTES=str(object_bytes), SHOAL_S3_SECONDS=str(seconds),
               SHOAL_S3_CONCURRENCY=str(concurrency))
    out = subprocess.run(["cargo", "bench", "-q", "-p", "shoal-wal", "--bench", "s3_upload"],
                         cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--intervals", default="10,50,250")
    ap.add_argument("--paced-rate", type=int, default=5000, help="records/s in the latency phase")
    ap.add_argument("--shoal-bin", default=str(ROOT / "target" / "release" / "shoal"))
    ap.add_argument("--s3s-fs-bin", default=shutil.which("s3s-fs") or
                    str(pathlib.Path.home() / ".cargo" / "bin" / "s3s-fs"))
    args = ap.parse_args()

    work = pathlib.Path(tempfile.mkdtemp(prefix="shoal-s3-bench-"))
    s3_root = work / "s3"
    (s3_root / BUCKET).mkdir(parents=True)
    s3_port = free_port()
    s3 = subprocess.Popen([args.s3s_fs_bin, "--host", "127.0.0.1", "--port", str(s3_port),
                           "--access-key", KEY, "--secret-key", SECRET, str(s3_root)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(s3_port)
    endpoint = f"http://127.0.0.1:{s3_port}"
    runs = []
    try:
        for interval in [int(x) for x in args.intervals.split(",")]:
            data = work / f"broker-{interval}"
            port = free_port()
            config = work / f"shoal-{interval}.toml"
            config.write_text(
                f'listen = "127.0.0.1:{port}"\ndata_dir = "{data}"\n'
                f"[produce]\ncommit_interval_ms = {interval}\n"
                f'[object_store]\nkind = "s3"\nendpoint = "{endpoint}"\nbucket = "{BUCKET}"\n'
                f'prefix = "bench"\naccess_key_id = "{KEY}"\nsecret_access_key = "{SECRET}"\n')
            broker = subprocess.Popen([args.shoal_bin, "--config", str(config)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_for_port(port)
            bootstrap = f"127.0.0.1:{port}"
            topic = f"bench-{interval}"
            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic(topic, num_partitions=8)])[topic].result(15)
            bytes_before, objects_before = bucket_bytes(s3_root)
            started = time.time()
            peak = run_phase(bootstrap, topic, 1024, args.seconds, None, 5)
            elapsed = time.time() - started
            bytes_after, objects_after = bucket_bytes(s3_root)
            uploaded = bytes_after - bytes_before
            objects = objects_after - objects_before
            paced = run_phase(bootstrap, topic, 1024, args.seconds, args.paced_rate, 5)
            broker.terminate()
            broker.wait(30)
            avg_object = uploaded // max(objects, 1)
            baseline = boto3_baseline(endpoint, max(avg_object, 1024), args.seconds, 8)
            upload_path = shoal_upload_path(endpoint, max(avg_object, 1024), args.seconds, 8)
            upload_mb_s = round(uploaded / elapsed / 1e6, 2)
            run = {
                "commit_interval_ms": interval,
                "max_throughput": peak,
                "upload": {"objects": objects, "avg_object_bytes": avg_object,
                           "mb_per_s": upload_mb_s},
                "paced_latency": paced,
                "boto3_baseline": baseline,
                "upload_vs_baseline": round(upload_mb_s / baseline["mb_per_s"], 3)
                if baseline["mb_per_s"] else None,
                "shoal_upload_path": upload_path,
                "upload_path_vs_baseline": round(upload_path["mb_per_s"] / baseline["mb_per_s"], 3)
                if baseline["mb_per_s"] else None,
            }
            print(json.dumps(run))
            runs.append(run)
    finally:
        s3.terminate()
        s3.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "workload": {
            "tool": "scripts/s3_bench.py", "s3_server": "s3s-fs 0.14.1 on loopback",
            "record_bytes": 1024, "partitions": 8, "acks": "all", "linger_ms": 5,
            "seconds_per_phase": args.seconds, "paced_rate_records_per_s": args.paced_rate,
            "producer": "one confluent-kafka (Python) producer, closed loop then paced",
            "baseline": "boto3 put_object, 8 threads (= 2 shards x 4 uploads in flight), "
                        "objects of Shoal's average object size, same server, same run",
            "shoal_upload_path": "wal/benches/s3_upload.rs: Shoal's S3 client alone, 8 "
                                 "concurrent puts of the same size from one executor",
            "cores": "broker (2 shards, coordinator on CPU 0), s3s-fs, producer and boto3 share "
                     "the machine's CPUs",
        },
        "machine": {"cores": os.cpu_count(), "kernel": platform.release()},
        "runs": runs,
    }
    out = ROOT / "perf-results" / f"{time.strftime('%Y-%m-%d')}-s3-produce.json"
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
