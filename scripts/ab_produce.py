#!/usr/bin/env python3
"""A/B of broker binaries on max produce: shoal-bench produce (default flags, closed loop)
against each binary in turn, rounds alternating so machine drift hits both alike. Broker on
CPU 0 (one shard, coordinator beside it), generator on CPU 1.

    python3 scripts/ab_produce.py --label NAME [--seconds 8] [--rounds 3] [--rate R] BIN_A BIN_B

--rate runs open loop at R records/s instead (latency at a fixed load). --quotas-b holds
B's clients to quotas they never reach (every client id's producer_byte_rate and
request_percentage, set by AlterClientQuotas), so B pays for measuring them. Writes
perf-results/<date>-ab-<label>.json with the workload.
"""

import argparse
import json
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

from benchlib import ROOT, cpu_seconds, free_port, wait_for_port, write_results

sys.path.insert(0, str(ROOT / "tests" / "integration"))
from kafka_wire import (Connection, alter_client_quotas_v0,  # noqa: E402
                        parse_alter_client_quotas_v0, request)

BENCH = ROOT / "target" / "release" / "shoal-bench"


def start(binary, work, extra, metrics_port=None):
    """`binary` on CPU 0 (one shard, the coordinator beside it) over `work`, `extra` appended
    to its config, /metrics on `metrics_port` if given: (process, bootstrap, config path)."""
    port = free_port()
    config = work / "shoal.toml"
    metrics = f'metrics_listen = "127.0.0.1:{metrics_port}"\n' if metrics_port else ""
    config.write_text(f'listen = "127.0.0.1:{port}"\n{metrics}data_dir = "{work / "data"}"\n'
                      "[shards]\ncores = [0]\n[coordinator]\ncore = 0\n" + extra)
    process = subprocess.Popen([binary, "--config", config], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    wait_for_port(port)
    return process, f"127.0.0.1:{port}", config


def hold_to_unreachable_quotas(bootstrap):
    """Every client id (the default entity) gets quotas far above what it can send."""
    body = alter_client_quotas_v0([([("client-id", None)], [("producer_byte_rate", 1e12),
                                                            ("request_percentage", 1e6)])])
    conn = Connection(bootstrap)
    conn.send(request(49, 0, 1, body))
    _, answer = conn.recv_response()
    conn.close()
    assert [code for code, _, _ in parse_alter_client_quotas_v0(answer)] == [0], answer


def produce_run(binary, extra, seconds, rate=0, setup=None):
    """One broker on an empty data directory, shoal-bench produce against it (closed loop, or
    open at `rate` records/s); `setup(bootstrap)` runs first. MB/s, latency, CPU per GB."""
    work = pathlib.Path(tempfile.mkdtemp())
    process, bootstrap, config = start(binary, work, extra)
    out = work / "result.json"
    try:
        if setup:
            setup(bootstrap)
        rate_flags = ["--rate", str(rate)] if rate else []
        cpu_before = cpu_seconds(process.pid)
        subprocess.run([BENCH, "produce", "--bootstrap", bootstrap, "--create",
                        "--duration-s", str(seconds), "--cpus", "1",
                        "--output", out, "--broker-config", config, *rate_flags],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        result = json.loads(out.read_text())["results"]
        cpu = cpu_seconds(process.pid) - cpu_before
        gigabytes = result["produce"]["bytes"] / 1e9
        return {"mb_per_s": result["produce"]["mb_per_s"],
                "latency_ms": result["produce_latency_ms"],
                "broker_cpu_ms_per_gb": round(cpu * 1000 / gigabytes, 1)}
    finally:
        process.terminate()
        process.wait(30)
        shutil.rmtree(work, ignore_errors=True)  # gigabytes of WAL objects


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs=2)
    ap.add_argument("--label", required=True)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rate", type=float, default=0)
    ap.add_argument("--broker-config", default="", help="extra TOML for both brokers")
    ap.add_argument("--broker-config-b", default="", help="extra TOML for B only (A and B "
                    "may then be the same binary)")
    ap.add_argument("--quotas-b", action="store_true", help="B's clients have quotas")
    args = ap.parse_args()
    sides = {"a": (args.binaries[0], args.broker_config),
             "b": (args.binaries[1], args.broker_config + "\n" + args.broker_config_b)}
    runs = {side: [] for side in sides}
    for _ in range(args.rounds):
        for side, (binary, extra) in sides.items():
            setup = hold_to_unreachable_quotas if side == "b" and args.quotas_b else None
            runs[side].append(produce_run(binary, extra, args.seconds, args.rate, setup))
    summary = {}
    for side, rs in runs.items():
        summary[side] = {
            "mb_per_s_median": statistics.median(r["mb_per_s"] for r in rs),
            "p99_ms_median": statistics.median(r["latency_ms"]["p99"] for r in rs),
            "p999_ms_median": statistics.median(r["latency_ms"]["p999"] for r in rs),
            "max_ms_median": statistics.median(r["latency_ms"]["max"] for r in rs),
            "broker_cpu_ms_per_gb_median": statistics.median(
                r["broker_cpu_ms_per_gb"] for r in rs),
        }
    summary["b_over_a_throughput"] = round(
        summary["b"]["mb_per_s_median"] / summary["a"]["mb_per_s_median"], 3)
    summary["b_over_a_cpu_per_byte"] = round(
        summary["b"]["broker_cpu_ms_per_gb_median"] / summary["a"]["broker_cpu_ms_per_gb_median"], 3)
    workload = {"generator": "shoal-bench produce, default flags (1 KiB records, 100 per "
                             "batch, 8 partitions, 4 connections x 8 in flight, acks=all)",
                "rate_records_per_s": args.rate or "max (closed loop)",
                "seconds": args.seconds, "rounds": args.rounds,
                "cores": "broker one shard + coordinator on CPU 0, generator on CPU 1",
                "extra_broker_config": args.broker_config,
                "extra_broker_config_b": args.broker_config_b,
                "b_clients_have_quotas": args.quotas_b,
                "a": args.binaries[0], "b": args.binaries[1]}
    write_results(f"ab-{args.label}", "scripts/ab_produce.py", workload, summary, runs)

if __name__ == "__main__":
    main()
