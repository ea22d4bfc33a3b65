#!/usr/bin/env python3
"""What two broker binaries cost in S3 GETs when reading, on one s3s-fs, rounds alternating on
an emptied bucket:

1. tailing: 10 shoal-bench consumers from the end of an 8-partition topic while one producer
   writes 20,000 1 KiB records a second (20 MB/s); GETs (the broker's store reads,
   `shoal_fetch_cache_misses_total`) per GB the consumers read;
2. catch-up: the broker restarted (a cold cache) and one consumer reading everything from
   offset 0; GETs per GB and MB/s.

The broker runs as the README's S3 example (commit_interval_ms = 250), one shard and the
coordinator on CPU 0 (--shards 1) or a shard on each CPU (--shards 2); load and s3s-fs on CPU 1.

    python3 scripts/s3_reads.py [--seconds 8] [--rounds 2] [--shards 1] [--label NAME] BIN_A BIN_B

Writes perf-results/<date>-s3-reads[-NAME].json."""

import argparse
import json
import pathlib
import shutil
import signal
import statistics
import subprocess
import tempfile
import time

from benchlib import (ROOT, alternating_rounds, free_port, s3s_fs_binary, scrape_metrics,
                      start_s3s_fs, stop, wait_for_port, write_results)

BENCH = ROOT / "target" / "release" / "shoal-bench"
KEY, SECRET, BUCKET = "KEY", "SECRET", "shoal"
TAILING_CONSUMERS = 10
TAILING_RATE = 20_000


class Broker:
    def __init__(self, binary, work, endpoint, shards):
        self.binary, self.work, self.shards = binary, work, shards
        work.mkdir(parents=True)
        self.port, self.metrics_port = free_port(), free_port()
        self.config = work / "shoal.toml"
        self.config.write_text(
            f'listen = "127.0.0.1:{self.port}"\ndata_dir = "{work / "data"}"\n'
            f'metrics_listen = "127.0.0.1:{self.metrics_port}"\n'
            f"[shards]\ncores = {list(range(shards))}\n[coordinator]\ncore = 0\n"
            "[produce]\ncommit_interval_ms = 250\n"
            f'[object_store]\nkind = "s3"\nendpoint = "{endpoint}"\nbucket = "{BUCKET}"\n')

    @property
    def bootstrap(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        env = {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "PATH": "/usr/bin:/bin"}
        cpus = ",".join(str(c) for c in range(self.shards))
        self.process = subprocess.Popen(["taskset", "-c", cpus, self.binary, "--config",
                                         self.config], env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        wait_for_port(self.port)
        return self

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(60)

    def gets(self):
        return scrape_metrics(self.metrics_port).get("shoal_fetch_cache_misses_total", 0.0)


def bench(args):
    out = pathlib.Path(tempfile.mktemp(suffix=".json"))
    return subprocess.Popen(["taskset", "-c", "1", BENCH] + args + ["--output", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), out


def results(started):
    process, out = started
    assert process.wait(600) == 0, "shoal-bench failed"
    return json.loads(out.read_text())["results"]


def measure(binary, endpoint, args, work):
    broker = Broker(binary, work, endpoint, args.shards).start()
    try:
        topic = ["--bootstrap", broker.bootstrap, "--topic", "reads", "--partitions", "8"]
        results(bench(["produce", *topic, "--create", "--duration-s", "0.2"]))
        before = broker.gets()
        tails = [bench(["consume", *topic, "--from-end", "--duration-s", str(args.seconds + 2)])
                 for _ in range(TAILING_CONSUMERS)]
        time.sleep(1)
        produced = results(bench(["produce", *topic, "--rate", str(TAILING_RATE),
                                  "--duration-s", str(args.seconds)]))
        tailed = [results(t)["consume"] for t in tails]
        tail_gets = broker.gets() - before
        tail_gb = sum(t["bytes"] for t in tailed) / 1e9
        broker.stop()
        broker.start()  # a cold cache
        before = broker.gets()
        records = produced["produce"]["records"]
        caught_up = results(bench(["consume", *topic, "--records", str(records),
                                   "--duration-s", "300"]))["consume"]
        catch_up_gets = broker.gets() - before
        return {
            "tailing_gets": int(tail_gets),
            "tailing_gb_read": round(tail_gb, 3),
            "tailing_gets_per_gb": round(tail_gets / max(tail_gb, 1e-9), 1),
            "catch_up_gets": int(catch_up_gets),
            "catch_up_gets_per_gb": round(catch_up_gets / (caught_up["bytes"] / 1e9), 1),
            "catch_up_mb_per_s": caught_up["mb_per_s"],
        }
    finally:
        broker.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs=2)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--shards", type=int, default=1, choices=[1, 2])
    ap.add_argument("--label", default="")
    ap.add_argument("--s3s-fs-bin", default=s3s_fs_binary())
    args = ap.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="shoal-s3-reads-"))
    s3_root = work / "s3"
    (s3_root / BUCKET).mkdir(parents=True)
    s3, endpoint = start_s3s_fs(s3_root, KEY, SECRET, binary=args.s3s_fs_bin)
    runs = {"a": [], "b": []}
    try:
        for round_, name in alternating_rounds(args.rounds):
            shutil.rmtree(s3_root / BUCKET)
            (s3_root / BUCKET).mkdir()
            binary = args.binaries["ab".index(name)]
            runs[name].append(measure(binary, endpoint, args, work / f"{name}{round_}"))
            print(name, runs[name][-1], flush=True)
    finally:
        stop(s3)
        shutil.rmtree(work, ignore_errors=True)
    medians = {side: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
               for side, rs in runs.items()}
    workload = {
        "store": "s3s-fs 0.14.1 on loopback", "commit_interval_ms": 250, "shards": args.shards,
        "tailing": f"{TAILING_CONSUMERS} x shoal-bench consume --from-end (8 partitions) while "
                   f"shoal-bench produce --rate {TAILING_RATE} (1 KiB records) for "
                   f"{args.seconds} s",
        "catch_up": "broker restarted, one shoal-bench consume of every record from offset 0",
        "gets": "shoal_fetch_cache_misses_total: one per store read",
        "rounds": args.rounds, "a": args.binaries[0], "b": args.binaries[1],
    }
    name = "s3-reads" + (f"-{args.label}" if args.label else "")
    write_results(name, "scripts/s3_reads.py", workload, medians, runs)


if __name__ == "__main__":
    main()
