#!/usr/bin/env python3
"""What recompression costs: max produce of lz4-compressed batches (shoal-bench produce
--compression lz4, default flags otherwise) into a topic with each `compression.type`, same
binary, rounds alternating over the cases so machine drift hits all alike. "producer" (batches
stored as sent) is the baseline; "lz4" matches the producer's codec, so nothing is
recompressed; the others recompress every batch. Broker on CPU 0 (one shard, coordinator
beside it), generator on CPU 1.

    python3 scripts/recompress_bench.py [--seconds 6] [--rounds 3]

Writes perf-results/<date>-recompress.json with the workload.
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

BENCH = ROOT / "target" / "release" / "shoal-bench"
SHOAL = ROOT / "target" / "release" / "shoal"
CASES = ["producer", "lz4", "zstd", "snappy", "gzip", "uncompressed"]


def create_topic(bootstrap, compression):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic("shoal-bench", num_partitions=8, config={"compression.type": compression})
    admin.create_topics([topic])["shoal-bench"].result(15)


def run_case(compression, seconds):
    work = pathlib.Path(tempfile.mkdtemp())
    port = free_port()
    config = work / "shoal.toml"
    config.write_text(f'listen = "127.0.0.1:{port}"\ndata_dir = "{work / "data"}"\n'
                      "[shards]\ncores = [0]\n[coordinator]\ncore = 0\n")
    process = subprocess.Popen([SHOAL, "--config", config], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        bootstrap = f"127.0.0.1:{port}"
        create_topic(bootstrap, compression)
        out = work / "result.json"
        cpu_before = cpu_seconds(process.pid)
        subprocess.run([BENCH, "produce", "--bootstrap", bootstrap, "--compression", "lz4",
                        "--duration-s", str(seconds), "--cpus", "1", "--output", out],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        result = json.loads(out.read_text())["results"]
        cpu = cpu_seconds(process.pid) - cpu_before
        stored = sum(f.stat().st_size for f in (work / "data").rglob("*") if f.is_file())
        gigabytes = result["produce"]["bytes"] / 1e9
        return {"mb_per_s": result["produce"]["mb_per_s"],
                "p99_ms": result["produce_latency_ms"]["p99"],
                "broker_cpu_ms_per_gb": round(cpu * 1000 / gigabytes, 1),
                "stored_bytes_per_sent_byte": round(stored / result["produce"]["bytes"], 3)}
    finally:
        process.terminate()
        process.wait(30)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "tests" / "integration"))
    runs = {case: [] for case in CASES}
    for _ in range(args.rounds):
        for case in CASES:
            runs[case].append(run_case(case, args.seconds))
    baseline = statistics.median(r["mb_per_s"] for r in runs["producer"])
    summary = {}
    for case, rs in runs.items():
        mb = statistics.median(r["mb_per_s"] for r in rs)
        summary[case] = {
            "mb_per_s_median": mb,
            "over_producer": round(mb / baseline, 3),
            "p99_ms_median": statistics.median(r["p99_ms"] for r in rs),
            "broker_cpu_ms_per_gb_median": statistics.median(r["broker_cpu_ms_per_gb"] for r in rs),
            "stored_bytes_per_sent_byte_median": statistics.median(
                r["stored_bytes_per_sent_byte"] for r in rs),
        }
    workload = {"generator": "shoal-bench produce --compression lz4 (1 KiB records, half text "
                             "half noise, 100 per batch, 8 partitions, 4 connections x 8 in "
                             "flight, acks=all), closed loop (max)",
                "topic": "compression.type per case; 'producer' keeps the lz4 batches as sent",
                "seconds": args.seconds, "rounds": args.rounds,
                "cores": "broker one shard + coordinator on CPU 0, generator on CPU 1"}
    write_results("recompress", "scripts/recompress_bench.py", workload, summary, runs)


if __name__ == "__main__":
    main()
