#!/usr/bin/env python3
"""Mirroring benchmark (KIP-1279): two Shoal brokers on loopback, source and destination.

1. Baseline, same run: shoal-bench produces to the source alone (closed loop) -> MB/s.
2. Catch-up: the destination mirrors the topic the baseline filled -> mirroring MB/s (source
   bytes / time from AddTopicsToMirror to lag 0), and its ratio to the baseline.
3. Steady state: shoal-bench produces to the source at a fixed share of the baseline rate
   while the mirror runs; every 100 ms the source's and then the destination's end offsets
   are read (ListOffsets) and their difference summed over partitions is the lag, reported
   as p50/p99/max records and as time at that rate. (The broker's own
   shoal_mirror_lag_records is the lag as of each fetch, which is 0 whenever a fetch
   returned everything the source had; it is recorded too.)

Cores: the source broker on CPU 0, the destination broker on CPU 1, the generator on CPU 0
(2-core VM). Writes perf-results/<date>-mirror.json."""

import argparse
import datetime
import json
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

from confluent_kafka import Consumer, TopicPartition

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from benchlib import free_port, percentile, wait_for_port  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHOAL = ROOT / "target" / "release" / "shoal"
BENCH = ROOT / "target" / "release" / "shoal-bench"


def start_broker(workdir, name, core, metrics_port=None):
    port = free_port()
    config = workdir / f"{name}.toml"
    text = f'listen = "127.0.0.1:{port}"\ndata_dir = "{workdir / name}"\n'
    if metrics_port:
        text += f'metrics_listen = "127.0.0.1:{metrics_port}"\n'
    text += f"[shards]\ncores = [{core}]\n[coordinator]\ncore = {core}\n"
    config.write_text(text)
    log = open(workdir / f"{name}.log", "wb")
    process = subprocess.Popen([str(SHOAL), "--config", str(config)], stdout=log,
                               stderr=subprocess.STDOUT)
    wait_for_port(port)
    return process, f"127.0.0.1:{port}", config


def bench_produce(bootstrap, seconds, partitions, rate, output, config, label):
    subprocess.run([str(BENCH), "produce", "--bootstrap", bootstrap, "--topic", "mirrored",
                    "--partitions", str(partitions), "--create", "--duration-s", str(seconds),
                    "--cpus", "0", "--rate", str(rate), "--output", str(output),
                    "--broker-config", str(config), "--label", label],
                   check=True, capture_output=True, timeout=seconds + 120)
    return json.loads(output.read_text())


def mirror_cli(bootstrap, *args):
    subprocess.run([str(SHOAL), "mirror", "--bootstrap", bootstrap, *args], check=True,
                   capture_output=True, timeout=60)


def lag(metrics_url):
    text = urllib.request.urlopen(metrics_url, timeout=5).read().decode()
    values = [int(v) for v in re.findall(r'^shoal_mirror_lag_records\{[^}]*\} (\d+)$', text,
                                         re.M)]
    return values


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--steady-share", type=float, default=0.5)
    args = parser.parse_args()
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="shoal-mirror-bench-"))
    metrics_port = free_port()
    source, source_addr, source_config = start_broker(workdir, "source", 0)
    destination, dest_addr, dest_config = start_broker(workdir, "destination", 1, metrics_port)
    metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    try:
        baseline = bench_produce(source_addr, args.seconds, args.partitions, 0,
                                 workdir / "baseline.json", source_config, "baseline")
        produced = baseline["results"]["produce"]
        mirror_cli(dest_addr, "create", "bench", "--source", source_addr,
                   "--set", "mirror.fetch.wait.max.ms=100")
        started = time.time()
        mirror_cli(dest_addr, "add", "bench", "mirrored")
        deadline = started + 600
        while time.time() < deadline:
            values = lag(metrics_url)
            if len(values) == args.partitions and all(v == 0 for v in values):
                break
            time.sleep(0.05)
        catch_up_s = time.time() - started
        catch_up_mb_s = produced["bytes"] / catch_up_s / 1e6

        rate = int(produced["records_per_s"] * args.steady_share)
        samples = []
        steady = subprocess.Popen(
            [str(BENCH), "produce", "--bootstrap", source_addr, "--topic", "mirrored",
             "--partitions", str(args.partitions), "--duration-s", str(args.seconds),
             "--cpus", "0", "--rate", str(rate), "--output", str(workdir / "steady.json"),
             "--broker-config", str(source_config), "--label", "steady"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)  # past the generator's start
        watch_source = Consumer({"bootstrap.servers": source_addr, "group.id": "lag"})
        watch_destination = Consumer({"bootstrap.servers": dest_addr, "group.id": "lag"})
        fetch_time_lag = []

        def ends(consumer):
            return sum(consumer.get_watermark_offsets(TopicPartition("mirrored", p),
                                                      timeout=5, cached=False)[1]
                       for p in range(args.partitions))

        while steady.poll() is None:
            source_end = ends(watch_source)
            samples.append(max(0, source_end - ends(watch_destination)))
            fetch_time_lag.append(sum(lag(metrics_url)))
            time.sleep(0.1)
        watch_source.close()
        watch_destination.close()
        steady_result = json.loads((workdir / "steady.json").read_text())["results"]
        steady_rate = steady_result["produce"]["records_per_s"]
        result = {
            "tool": "scripts/mirror_bench.py",
            "workload": {
                "record_bytes": baseline["workload"].get("message_bytes", 1024),
                "records_per_batch": baseline["workload"].get("records_per_batch", 100),
                "partitions": args.partitions,
                "acks": -1,
                "baseline_and_steady_seconds": args.seconds,
                "steady_rate_share_of_baseline": args.steady_share,
                "mirror_settings": {"mirror.fetch.wait.max.ms": 100},
                "cores": "source broker (shards + coordinator) on CPU 0, destination broker "
                         "on CPU 1, shoal-bench pinned to CPU 0; 2-core VM, loopback",
            },
            "machine": {"cpus": __import__("os").cpu_count(), "platform": platform.platform()},
            "results": {
                "baseline_produce_mb_per_s": produced["mb_per_s"],
                "catch_up_bytes": produced["bytes"],
                "catch_up_seconds": round(catch_up_s, 3),
                "mirror_catch_up_mb_per_s": round(catch_up_mb_s, 1),
                "mirror_to_produce_ratio": round(catch_up_mb_s / produced["mb_per_s"], 2),
                "steady_produce_mb_per_s": steady_result["produce"]["mb_per_s"],
                "steady_lag_records": {
                    "samples": len(samples),
                    "p50": percentile(samples, 0.5),
                    "p99": percentile(samples, 0.99),
                    "max": max(samples) if samples else None,
                },
                "broker_reported_lag_records_max": max(fetch_time_lag) if fetch_time_lag
                else None,
                "steady_lag_ms_at_rate": {
                    "p50": round(percentile(samples, 0.5) / steady_rate * 1000, 1)
                    if samples and steady_rate else None,
                    "p99": round(percentile(samples, 0.99) / steady_rate * 1000, 1)
                    if samples and steady_rate else None,
                },
            },
        }
        out = ROOT / "perf-results" / f"{datetime.date.today()}-mirror.json"
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result["results"], indent=2))
    finally:
        for p in (source, destination):
            p.terminate()
            p.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
