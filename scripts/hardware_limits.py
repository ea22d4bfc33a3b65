#!/usr/bin/env python3
"""The machine's limits and Shoal's fraction of them, in one run: loopback TCP (shoal-bench
tcp-baseline: 4 connections writing 1 MiB at an in-process sink, on both CPUs), sequential
O_DIRECT writes to the data directory's filesystem (dd, 1 GiB, fsync at the end) and reads of
the same GiB back (O_DIRECT, 8 MiB requests: the ceiling of a catch-up from the device), and Shoal's
max produce on the default local store (shoal-bench produce, default flags, closed loop; the
broker's shard and coordinator on CPU 0, the generator on CPU 1). Rounds alternate the three
so machine drift hits each alike; results are medians.

    python3 scripts/hardware_limits.py [--seconds 8] [--rounds 3] [BIN]

Writes perf-results/<date>-hardware-limits.json.
"""

import argparse
import json
import pathlib
import re
import shutil
import statistics
import subprocess
import tempfile

from ab_produce import produce_run
from benchlib import ROOT, write_results

BENCH = ROOT / "target" / "release" / "shoal-bench"


def tcp_loopback(seconds):
    work = pathlib.Path(tempfile.mkdtemp())
    try:
        out = work / "tcp.json"
        subprocess.run([BENCH, "tcp-baseline", "--connections", "4", "--duration-s",
                        str(seconds), "--cpus", "0,1", "--output", out],
                       check=True, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())["results"]["tcp_loopback"]["mb_per_s"]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def dd_mb_per_s(*args):
    done = subprocess.run(["dd", *args], check=True, capture_output=True, text=True)
    # "1073741824 bytes (1.1 GB, 1.0 GiB) copied, 2.1 s, 511 MB/s"
    seconds = float(re.search(r"copied, ([0-9.]+) s", done.stderr).group(1))
    return round(1073741824 / seconds / 1e6, 1)


def direct_write_and_read():
    """MB/s of 1 GiB written with O_DIRECT and one fsync where the broker's data goes, then of
    the same GiB read back with O_DIRECT (from the device: the page cache never held it), in
    8 MiB requests (a fetch's size; the block layer splits them, so several are in flight)."""
    work = pathlib.Path(tempfile.mkdtemp())
    try:
        path = work / "dd.bin"
        write = dd_mb_per_s("if=/dev/zero", f"of={path}", "bs=1M", "count=1024", "oflag=direct",
                            "conv=fsync")
        read = dd_mb_per_s(f"if={path}", "of=/dev/null", "bs=8M", "iflag=direct")
        return write, read
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary", nargs="?", default=str(ROOT / "target" / "release" / "shoal"))
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    runs = {"tcp_loopback_mb_per_s": [], "direct_write_mb_per_s": [], "direct_read_mb_per_s": [],
            "shoal_produce_mb_per_s": [], "shoal_broker_cpu_ms_per_gb": []}
    for _ in range(args.rounds):
        runs["tcp_loopback_mb_per_s"].append(tcp_loopback(args.seconds))
        write, read = direct_write_and_read()
        runs["direct_write_mb_per_s"].append(write)
        runs["direct_read_mb_per_s"].append(read)
        shoal = produce_run(args.binary, "", args.seconds)
        runs["shoal_produce_mb_per_s"].append(shoal["mb_per_s"])
        runs["shoal_broker_cpu_ms_per_gb"].append(shoal["broker_cpu_ms_per_gb"])
    medians = {name: statistics.median(values) for name, values in runs.items()}
    shoal = medians["shoal_produce_mb_per_s"]
    results = {
        **medians,
        "shoal_of_tcp_loopback": round(shoal / medians["tcp_loopback_mb_per_s"], 3),
        "shoal_of_direct_write": round(shoal / medians["direct_write_mb_per_s"], 3),
    }
    workload = {
        "tcp_loopback": "shoal-bench tcp-baseline: 4 connections x 1 MiB writes to an "
                        "in-process sink, threads on CPUs 0 and 1",
        "direct_write": "dd if=/dev/zero bs=1M count=1024 oflag=direct conv=fsync, in a "
                        "temporary directory (the broker's data directory's filesystem)",
        "direct_read": "dd of the same file to /dev/null, bs=8M iflag=direct (from the device)",
        "shoal": "shoal-bench produce, default flags (1 KiB records, 100 per batch, 8 "
                 "partitions, 4 connections x 8 in flight, acks=all), closed loop; broker one "
                 "shard + coordinator on CPU 0, generator on CPU 1; default local store",
        "seconds": args.seconds, "rounds": args.rounds, "binary": args.binary,
    }
    print(json.dumps(results, indent=2))
    write_results("hardware-limits", "scripts/hardware_limits.py", workload, results, runs)


if __name__ == "__main__":
    main()
