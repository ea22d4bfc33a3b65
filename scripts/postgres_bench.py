#!/usr/bin/env python3
"""Max produce through the whole broker with the coordinator's log local (A) and in PostgreSQL
(B), same binary, alternating rounds (scripts/ab_produce.py). PostgreSQL (Debian's package) is
started in a temporary directory as the tests start it, pinned to the generator's CPU.

    python3 scripts/postgres_bench.py [--seconds 8] [--rounds 3]

Writes perf-results/<date>-ab-coordinator-postgres-max.json.
"""

import argparse
import os
import shutil
import subprocess
import sys

from benchlib import ROOT

sys.path.insert(0, str(ROOT / "tests" / "integration"))
from conftest import PostgresServer  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.sched_setaffinity(0, {1 % os.cpu_count()})  # PostgreSQL inherits the generator's CPU
    server = PostgresServer().start()
    os.sched_setaffinity(0, set(range(os.cpu_count())))
    try:
        shoal = str(ROOT / "target" / "release" / "shoal")
        subprocess.run([sys.executable, str(ROOT / "scripts" / "ab_produce.py"),
                        "--label", "coordinator-postgres-max", "--seconds", str(args.seconds),
                        "--rounds", str(args.rounds),
                        # ab_produce's config ends inside [coordinator] (core = 0).
                        "--broker-config-b", server.broker_config(header=""), shoal, shoal],
                       check=True)
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
