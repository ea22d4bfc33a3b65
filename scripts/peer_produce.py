#!/usr/bin/env python3
"""Shoal against a peer broker on max produce, in one run: shoal-bench produce (default flags,
closed loop) against Shoal (local store, fsync) and Tansu (memory engine) in alternating
rounds, each broker given the same cores.

    python3 scripts/peer_produce.py [--seconds 8] [--rounds 3] [--broker-cpus 0]

Tansu comes from `cargo install tansu --version 0.6.0 --no-default-features --features
dynostore --locked` (never vendored). Writes perf-results/<date>-peer-produce.json.
"""

import argparse
import json
import pathlib
import shutil
import statistics
import subprocess
import tempfile

from benchlib import ROOT, cpu_seconds, wait_for_port, write_results
from peer_compare import start_shoal, start_tansu

BIN = ROOT / "target" / "release"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--broker-cpus", default="0")
    ap.add_argument("--bench-cpus", default="1")
    args = ap.parse_args()
    if shutil.which("tansu") is None:
        raise SystemExit("tansu is not installed; see this script's docstring")
    brokers = {"shoal": start_shoal, "tansu": start_tansu}
    runs = {name: [] for name in brokers}
    for _ in range(args.rounds):
        for name, start in brokers.items():
            work = pathlib.Path(tempfile.mkdtemp())
            process, port = start(work, args.broker_cpus, None)
            try:
                wait_for_port(port)
                out = work / "result.json"
                before = cpu_seconds(process.pid)
                subprocess.run([BIN / "shoal-bench", "produce", "--bootstrap",
                                f"127.0.0.1:{port}", "--create", "--duration-s",
                                str(args.seconds), "--cpus", args.bench_cpus, "--output", out],
                               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                result = json.loads(out.read_text())["results"]
                cpu = cpu_seconds(process.pid) - before
                runs[name].append({
                    "mb_per_s": result["produce"]["mb_per_s"],
                    "latency_ms": result["produce_latency_ms"],
                    "errors": result.get("produce_errors"),
                    "broker_cpu_ms_per_gb": round(cpu * 1e12 / result["produce"]["bytes"], 1),
                })
            finally:
                process.terminate()
                process.wait(30)
                shutil.rmtree(work, ignore_errors=True)
    summary = {name: {"mb_per_s_median": statistics.median(r["mb_per_s"] for r in rs),
                      "p99_ms_median": statistics.median(r["latency_ms"]["p99"] for r in rs),
                      "p999_ms_median": statistics.median(r["latency_ms"]["p999"] for r in rs)}
               for name, rs in runs.items()}
    summary["shoal_over_tansu"] = round(
        summary["shoal"]["mb_per_s_median"] / summary["tansu"]["mb_per_s_median"], 3)
    workload = {"generator": "shoal-bench produce, default flags (1 KiB records, 100 per batch, "
                             "8 partitions, 4 connections x 8 in flight, acks=all, closed loop)",
                "seconds": args.seconds, "rounds": args.rounds,
                "shoal": "local store with fsync, shards and coordinator on the broker CPUs",
                "tansu": "0.6.0, memory storage engine, pinned to the broker CPUs (taskset)",
                "broker_cpus": args.broker_cpus, "generator_cpus": args.bench_cpus}
    write_results("peer-produce", "scripts/peer_produce.py", workload, summary, runs)


if __name__ == "__main__":
    main()
