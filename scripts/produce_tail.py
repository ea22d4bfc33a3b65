#!/usr/bin/env python3
"""Where produce's tail at half load goes (issue 46): one Shoal broker (local store, one shard
and the coordinator on --broker-cpus), shoal-bench on --bench-cpus. Per round: max produce for
--seconds, then shoal-bench produce --rate at half that (open loop) while the broker's stage
histograms are scraped before and after, and the kernel's dirty and writeback page counts are
sampled every 50 ms. Reports, per round, the client's p50/p99 beside each stage's p50/p99 over
the half-load phase alone:

- request: Produce handled (buffered, uploaded, committed, answered: what the client waits for
  on the broker), shoal_request_duration_seconds{api="Produce"};
- upload: one object written and fsynced with its directory, shoal_wal_upload_duration_seconds;
- commit: the coordinator's commit of one object's batches, shoal_commit_duration_seconds;

and, once before the rounds, the disk's own floor for an upload (create, write, fdatasync,
close, directory fsync; 64 KiB, 256 KiB, 1 MiB) from Python, without the broker;

a stage's quantile is the upper bound of the histogram bucket it falls in (buckets: 0.1, 0.25,
0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 10000 ms), so read it as "at most".

    python3 scripts/produce_tail.py [--rounds 3] [--seconds 8] [--layout files|segments]
        [--label NAME]

Writes perf-results/<date>-produce-tail-<layout>.json.
"""

import argparse
import os
import pathlib
import shutil
import statistics
import tempfile
import threading
import time
import urllib.request

from benchlib import free_port, histogram_buckets, percentile, stop, wait_for_port, write_results
from peer_compare import bench, start_shoal

STAGES = {
    "request": ("shoal_request_duration_seconds", 'api="Produce"'),
    "upload": ("shoal_wal_upload_duration_seconds", ""),
    "commit": ("shoal_commit_duration_seconds", ""),
}


def buckets(metrics_port):
    """Each stage's cumulative bucket counts: {stage: {upper bound s: count}}."""
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    return {stage: histogram_buckets(text, family, selector)
            for stage, (family, selector) in STAGES.items()}


def quantiles(before, after):
    """p50/p99 in ms (a bucket's upper bound) of what was observed between two scrapes."""
    counts = sorted((bound, after[bound] - before.get(bound, 0)) for bound in after)
    total = counts[-1][1] if counts else 0
    result = {"count": int(total)}
    for name, q in (("p50_ms", 0.5), ("p99_ms", 0.99)):
        result[name] = None
        for bound, cumulative in counts:
            if total and cumulative >= q * total:
                result[name] = bound * 1000 if bound != float("inf") else "over 10000"
                break
    return result


class PageCacheSampler(threading.Thread):
    """The largest Dirty and Writeback (kB, /proc/meminfo) seen while it runs."""

    def __init__(self):
        super().__init__(daemon=True)
        self.done = threading.Event()
        self.peak = {"Dirty": 0, "Writeback": 0}

    def run(self):
        while not self.done.wait(0.05):
            for line in pathlib.Path("/proc/meminfo").read_text().splitlines():
                key, value = line.split(":", 1)
                if key in self.peak:
                    self.peak[key] = max(self.peak[key], int(value.split()[0]))


def disk_floor(size, count=400):
    """The disk's own latency for what an upload does, without the broker: create a file,
    write `size` bytes, fdatasync, close, fsync the directory; p50/p99 ms over `count`."""
    work = pathlib.Path(tempfile.mkdtemp())
    data = os.urandom(size)
    took = []
    try:
        directory = os.open(work, os.O_RDONLY)
        for i in range(count):
            started = time.perf_counter()
            fd = os.open(work / f"{i}.obj", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, data)
            os.fdatasync(fd)
            os.close(fd)
            os.fsync(directory)
            took.append((time.perf_counter() - started) * 1000)
        os.close(directory)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"object_bytes": size, "p50_ms": round(percentile(took, 0.5), 2),
            "p99_ms": round(percentile(took, 0.99), 2)}


def one_round(args):
    work = pathlib.Path(tempfile.mkdtemp())
    metrics = free_port()
    layout = f'[object_store]\nlocal_layout = "{args.layout}"\n'
    layout += args.broker_config.replace("\\n", "\n")
    process, port = start_shoal(work, args.broker_cpus, None, layout, metrics_port=metrics)
    try:
        wait_for_port(port, 30)
        bench("produce", port, work, args, "--topic", "warmup", "--create", "--duration-s", 3)
        os.sync()
        peak = bench("produce", port, work, args, "--topic", "max", "--create",
                     "--duration-s", args.seconds)
        rate = max(1, int(peak["produce"]["records"] / args.seconds / 2))
        bench("produce", port, work, args, "--topic", "half", "--create", "--duration-s", 0.1)
        os.sync()
        before = buckets(metrics)
        sampler = PageCacheSampler()
        sampler.start()
        half = bench("produce", port, work, args, "--topic", "half", "--rate", rate,
                     "--duration-s", args.seconds)
        sampler.done.set()
        sampler.join()
        after = buckets(metrics)
        return {
            "max_mb_per_s": peak["produce"]["mb_per_s"],
            "half_load_records_per_s": rate,
            "client_p50_ms": half["produce_latency_ms"]["p50"],
            "client_p99_ms": half["produce_latency_ms"]["p99"],
            "stages": {stage: quantiles(before[stage], after[stage]) for stage in STAGES},
            "peak_dirty_kb": sampler.peak["Dirty"],
            "peak_writeback_kb": sampler.peak["Writeback"],
        }
    finally:
        stop(process)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--broker-cpus", default="0")
    ap.add_argument("--bench-cpus", default="1")
    ap.add_argument("--layout", choices=["files", "segments"], default="segments",
                    help="the local store's object layout")
    ap.add_argument("--broker-config", default="",
                    help="TOML appended to the broker's config (a section other than object_store)")
    ap.add_argument("--label", default="", help="the result file's name ends -LAYOUT-LABEL")
    args = ap.parse_args()
    floors = [disk_floor(size) for size in (64 << 10, 256 << 10, 1 << 20)]
    print("disk floor", floors, flush=True)
    runs = []
    for round_ in range(args.rounds):
        run = one_round(args)
        print(round_, run, flush=True)
        runs.append(run)
    results = {
        "client_p50_ms": statistics.median(r["client_p50_ms"] for r in runs),
        "client_p99_ms": statistics.median(r["client_p99_ms"] for r in runs),
        "half_load_records_per_s": statistics.median(r["half_load_records_per_s"] for r in runs),
        "disk_floor": floors,
    }
    workload = {
        "broker": f"Shoal, local store (local_layout = {args.layout}), defaults, one shard "
                  f"and the coordinator on CPU {args.broker_cpus}",
        "load": f"shoal-bench produce (1 KiB records, acks=all) on CPU {args.bench_cpus}: max for "
                f"{args.seconds} s, then --rate at half of it for {args.seconds} s",
        "stages": "histogram quantiles over the half-load phase, bucket upper bounds",
        "rounds": args.rounds, "broker_config": args.broker_config,
    }
    suffix = f"-{args.layout}" + (f"-{args.label}" if args.label else "")
    write_results(f"produce-tail{suffix}", "scripts/produce_tail.py", workload, results, runs)


if __name__ == "__main__":
    main()
