#!/usr/bin/env python3
"""What two broker binaries cost in S3 requests, on one s3s-fs: PUTs per second at low load
(shoal-bench produce at 100 one-record 1 KiB batches a second over 4 connections, acks=all)
and PUTs per GB at maximum load (closed loop, 64 requests in flight per connection), with the
throughput of that phase. The broker's settings are the README's S3 example (commit_interval_ms, 250 unless
--interval-ms says otherwise). With --shards 1 the broker's one shard and its coordinator run
on CPU 0 and the generator and s3s-fs on CPU 1; with --shards 2 the broker has a shard on each
CPU and shares them. PUTs are the objects the broker stored (no object here reaches the
multipart threshold), counted in s3s-fs's directory.

    python3 scripts/s3_requests.py [--seconds 8] [--rounds 2] [--shards 1] [--interval-ms 250]
                                   [--label NAME] BIN_A BIN_B

Rounds alternate the order (a b, b a, ...) on an emptied bucket; the results are medians.

Writes perf-results/<date>-s3-requests[-NAME].json."""

import argparse
import json
import pathlib
import shutil
import statistics
import subprocess
import tempfile

from benchlib import (ROOT, alternating_rounds, cpu_seconds, free_port, s3s_fs_binary,
                      scrape_metrics, start_s3s_fs, stop, wait_for_port, write_results)

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


def mean_ms(before, after, histogram):
    """A histogram's mean, in ms, over what it observed between two scrapes."""
    count = after.get(f"{histogram}_count", 0) - before.get(f"{histogram}_count", 0)
    total = after.get(f"{histogram}_sum", 0) - before.get(f"{histogram}_sum", 0)
    return round(1000 * total / count, 2) if count else None


def measure(binary, s3_root, endpoint, args, work):
    seconds = args.seconds
    work.mkdir(parents=True)
    port = free_port()
    metrics_port = free_port()
    config = work / "shoal.toml"
    config.write_text(
        f'listen = "127.0.0.1:{port}"\nmetrics_listen = "127.0.0.1:{metrics_port}"\n'
        f'data_dir = "{work / "data"}"\n'
        f"[shards]\ncores = {list(range(args.shards))}\n[coordinator]\ncore = 0\n"
        f"[produce]\ncommit_interval_ms = {args.interval_ms}\n"
        f'[object_store]\nkind = "s3"\nendpoint = "{endpoint}"\nbucket = "{BUCKET}"\n')
    env = {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "PATH": "/usr/bin:/bin"}
    cpus = ",".join(str(c) for c in range(args.shards))
    broker = subprocess.Popen(["taskset", "-c", cpus, binary, "--config", config], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        bootstrap = f"127.0.0.1:{port}"
        before = objects(s3_root)
        low = produce(bootstrap, "low", seconds,
                      ["--rate", "100", "--records-per-batch", "1", "--connections", "4"])
        low_puts = objects(s3_root) - before
        before = objects(s3_root)
        timings_before = scrape_metrics(metrics_port)
        cpu_before = cpu_seconds(broker.pid)
        # Enough in flight to fill an interval at speed (4 x 64 x 100 KiB = 26 MB, which
        # librdkafka's defaults allow): a closed loop of less is bound by in-flight / interval.
        high = produce(bootstrap, "high", seconds, ["--max-in-flight", str(args.max_in_flight)])
        high_puts = objects(s3_root) - before
        timings = scrape_metrics(metrics_port)
        cpu = cpu_seconds(broker.pid) - cpu_before
        return {
            "low_load_puts_per_s": round(low_puts / seconds, 1),
            "low_load_p50_ms": low["produce_latency_ms"]["p50"],
            "max_mb_per_s": high["produce"]["mb_per_s"],
            "max_puts_per_s": round(high_puts / seconds, 1),
            "max_puts_per_gb": round(high_puts / (high["produce"]["bytes"] / 1e9), 1),
            "max_broker_cpu_s_per_gb": round(cpu / (high["produce"]["bytes"] / 1e9), 2),
            # Where a max-load produce's time goes: one object's PUT, then its commit.
            "max_upload_ms_mean": mean_ms(timings_before, timings,
                                          "shoal_wal_upload_duration_seconds"),
            "max_commit_ms_mean": mean_ms(timings_before, timings, "shoal_commit_duration_seconds"),
        }
    finally:
        stop(broker)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs=2)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--shards", type=int, default=1, choices=[1, 2])
    ap.add_argument("--interval-ms", type=int, default=250)
    ap.add_argument("--label", default="")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-in-flight", type=int, default=64,
                    help="requests in flight per connection in the max-load phase")
    ap.add_argument("--s3s-fs-bin", default=s3s_fs_binary())
    args = ap.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="shoal-s3-requests-"))
    s3_root = work / "s3"
    (s3_root / BUCKET).mkdir(parents=True)
    s3, endpoint = start_s3s_fs(s3_root, KEY, SECRET, binary=args.s3s_fs_bin)
    try:
        runs = {"a": [], "b": []}
        # Alternating order (a b, b a, ...) on an emptied bucket each time: s3s-fs slows as
        # its directory fills, which would otherwise favour whichever ran first.
        for round_, name in alternating_rounds(args.rounds):
            shutil.rmtree(s3_root / BUCKET)
            (s3_root / BUCKET).mkdir()
            binary = args.binaries["ab".index(name)]
            runs[name].append(measure(binary, s3_root, endpoint, args, work / f"{name}{round_}"))
    finally:
        stop(s3)
        shutil.rmtree(work, ignore_errors=True)
    workload = {
        "store": "s3s-fs 0.14.1 on loopback", "commit_interval_ms": args.interval_ms,
        "seconds": args.seconds, "shards": args.shards, "rounds": args.rounds,
        "low_load": "shoal-bench produce --rate 100 --records-per-batch 1 --connections 4 "
                    "(1 KiB records, acks=all)",
        "max_load": f"shoal-bench produce --max-in-flight {args.max_in_flight} (closed loop, "
                    "4 connections, 100 KiB batches of 1 KiB records)",
        "cores": "broker one shard + coordinator on CPU 0; generator and s3s-fs on CPU 1"
                 if args.shards == 1 else
                 "broker shards on CPUs 0 and 1 (coordinator on 0); generator and s3s-fs on 1",
        "a": args.binaries[0], "b": args.binaries[1],
    }
    name = "s3-requests" + (f"-{args.label}" if args.label else "")
    medians = {side: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
               for side, rs in runs.items()}
    write_results(name, "scripts/s3_requests.py", workload, medians, runs)


if __name__ == "__main__":
    main()
