#!/usr/bin/env python3
"""Max produce through the whole broker with the coordinator's log local (A) and in PostgreSQL
(B), same binary, alternating rounds (scripts/ab_produce.py); then one more max-produce run
of each with the broker's metrics scraped, for the commit latency at that load (the share of
commits answered within each bucket of `shoal_commit_duration_seconds`). PostgreSQL (Debian's package)
is started in a temporary directory as the tests start it, pinned to the generator's CPU.

    python3 scripts/postgres_bench.py [--seconds 8] [--rounds 3]

Writes perf-results/<date>-ab-coordinator-postgres-max.json and
<date>-coordinator-commit-latency.json.
"""

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

from benchlib import ROOT, free_port, histogram_buckets, wait_for_port, write_results

sys.path.insert(0, str(ROOT / "tests" / "integration"))
from conftest import PostgresServer  # noqa: E402


def commit_latency(extra, seconds):
    """Max produce once with the broker's metrics scraped; the cumulative share of commits
    answered within each latency bucket."""
    work = pathlib.Path(tempfile.mkdtemp())
    port, metrics = free_port(), free_port()
    config = work / "shoal.toml"
    config.write_text(f'listen = "127.0.0.1:{port}"\nmetrics_listen = "127.0.0.1:{metrics}"\n'
                      f'data_dir = "{work / "data"}"\n[shards]\ncores = [0]\n'
                      f"[coordinator]\ncore = 0\n{extra}")
    broker = subprocess.Popen([ROOT / "target" / "release" / "shoal", "--config", config],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        out = work / "run.json"
        subprocess.run([ROOT / "target" / "release" / "shoal-bench", "produce", "--bootstrap",
                        f"127.0.0.1:{port}", "--create", "--duration-s", str(seconds), "--cpus",
                        "1", "--metrics", f"127.0.0.1:{metrics}", "--output", out],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        scrape = next(work.glob("*.metrics.txt")).read_text()
        buckets = sorted((le, n) for le, n in
                         histogram_buckets(scrape, "shoal_commit_duration_seconds").items()
                         if le != float("inf"))
        total = max(n for _, n in buckets)
        shares = {f"<= {le * 1000:g} ms": round(n / total, 4) for le, n in buckets if total}
        return {"commits": total, "within": shares, "p99_ms_interpolated": quantile(buckets, 0.99)}
    finally:
        broker.terminate()
        broker.wait(30)
        shutil.rmtree(work, ignore_errors=True)


def quantile(buckets, q):
    """Prometheus's histogram_quantile: linear within the bucket that holds the quantile."""
    total = max(n for _, n in buckets)
    rank, lower, below = q * total, 0.0, 0.0
    for upper, count in buckets:
        if count >= rank:
            share = (rank - below) / (count - below) if count > below else 1.0
            return round((lower + (upper - lower) * share) * 1000, 2)
        lower, below = upper, count
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--latency-only", action="store_true", help="skip the A/B throughput runs")
    ap.add_argument("--pool-sizes", default="1,2",
                    help="[coordinator] pool_size values for the latency runs (rounds in flight)")
    args = ap.parse_args()
    os.sched_setaffinity(0, {1 % os.cpu_count()})  # PostgreSQL inherits the generator's CPU
    server = PostgresServer().start()
    os.sched_setaffinity(0, set(range(os.cpu_count())))
    try:
        shoal = str(ROOT / "target" / "release" / "shoal")
        if not args.latency_only:
            subprocess.run([sys.executable, str(ROOT / "scripts" / "ab_produce.py"),
                            "--label", "coordinator-postgres-max", "--seconds", str(args.seconds),
                            "--rounds", str(args.rounds),
                            # ab_produce's config ends inside [coordinator] (core = 0).
                            "--broker-config-b", server.broker_config(header=""), shoal, shoal],
                           check=True)
        results = {"local": commit_latency("", args.seconds)}
        for pool_size in args.pool_sizes.split(","):
            extra = server.broker_config(header="") + f"pool_size = {pool_size}\n"
            results[f"postgres, pool_size {pool_size}"] = commit_latency(extra, args.seconds)
        write_results("coordinator-commit-latency", "scripts/postgres_bench.py",
                      {"load": "shoal-bench produce defaults, closed loop (max)",
                       "cores": "broker on CPU 0, generator and PostgreSQL on CPU 1",
                       "metric": "shoal_commit_duration_seconds: CommitFile round trip as a "
                                 "shard sees it",
                       "seconds": args.seconds}, results, [])
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
