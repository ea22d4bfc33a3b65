#!/usr/bin/env python3
"""A/B of broker binaries on a catch-up read from the local store: shoal-bench produce for
--seconds (default flags, 8 partitions), then shoal-bench consume of every record from offset
0; rounds alternate. Broker one shard + coordinator on CPU 0, generator on CPU 1. Reports
the consumer's MB/s and the broker's CPU per GB consumed (steadier on a shared machine).

    python3 scripts/catchup_ab.py [--seconds 6] [--rounds 2] [--broker-config TOML] --label NAME
        BIN_A BIN_B

--broker-config is appended to both brokers' configs (such as '[object_store]\nlocal_layout =
"segments"' when one build's default differs).

Writes perf-results/<date>-catchup-<label>.json."""

import argparse
import json
import pathlib
import shutil
import statistics
import subprocess
import tempfile

from ab_produce import BENCH, start
from benchlib import alternating_rounds, cpu_seconds, write_results


def bench(args):
    out = pathlib.Path(tempfile.mktemp(suffix=".json"))
    subprocess.run([BENCH, *args, "--cpus", "1", "--output", out], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.loads(out.read_text())["results"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs=2)
    ap.add_argument("--label", required=True)
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--broker-config", default="", help="TOML appended to both configs")
    args = ap.parse_args()
    runs = {"a": [], "b": []}
    for _, side in alternating_rounds(args.rounds):
        binary = args.binaries["ab".index(side)]
        work = pathlib.Path(tempfile.mkdtemp())
        process, bootstrap, _ = start(binary, work, args.broker_config.replace("\\n", "\n"))
        try:
            produced = bench(["produce", "--bootstrap", bootstrap, "--create",
                              "--duration-s", str(args.seconds)])
            records = produced["produce"]["records"]
            subprocess.run(["sync"], check=True)
            cpu_before = cpu_seconds(process.pid)
            consumed = bench(["consume", "--bootstrap", bootstrap, "--records",
                              str(records), "--duration-s", "120"])["consume"]
            cpu = cpu_seconds(process.pid) - cpu_before
            runs[side].append({"mb_per_s": consumed["mb_per_s"],
                               "broker_cpu_s_per_gb": round(cpu / (consumed["bytes"] / 1e9), 3),
                               "records": consumed["records"], "written": records})
        finally:
            process.terminate()
            process.wait(30)
            shutil.rmtree(work, ignore_errors=True)
    summary = {side: {"mb_per_s_median": statistics.median(r["mb_per_s"] for r in rs),
                      "broker_cpu_s_per_gb_median":
                          statistics.median(r["broker_cpu_s_per_gb"] for r in rs)}
               for side, rs in runs.items()}
    summary["b_over_a"] = round(summary["b"]["mb_per_s_median"] / summary["a"]["mb_per_s_median"],
                                3)
    summary["b_over_a_cpu_per_byte"] = round(summary["b"]["broker_cpu_s_per_gb_median"]
                                             / summary["a"]["broker_cpu_s_per_gb_median"], 3)
    workload = {"produce": f"shoal-bench produce, default flags, {args.seconds} s",
                "consume": "shoal-bench consume of every record from offset 0 (catch-up)",
                "cores": "broker one shard + coordinator on CPU 0, generator on CPU 1",
                "rounds": args.rounds, "broker_config": args.broker_config,
                "a": args.binaries[0], "b": args.binaries[1]}
    write_results(f"catchup-{args.label}", "scripts/catchup_ab.py", workload, summary, runs)


if __name__ == "__main__":
    main()
