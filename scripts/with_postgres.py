#!/usr/bin/env python3
"""Runs a command with a PostgreSQL server of the integration tests' kind beside it, and the
[coordinator] section of a broker that keeps its log there in $SHOAL_JAVA_EXTRA_CONFIG (the Java
harness appends it to Shoal's config). scripts/test.sh runs the Java tests' coordinator-heavy
classes again this way.

    scripts/with_postgres.py -- mvn -B -o test
"""
import os
import pathlib
import shutil
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "integration"))
from conftest import PostgresServer  # noqa: E402  (the tests' own server, not a copy)


def main():
    args = sys.argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        sys.exit(__doc__)
    server = PostgresServer().start()
    try:
        env = dict(os.environ, SHOAL_JAVA_EXTRA_CONFIG=server.new_database_config())
        code = subprocess.run(args, env=env).returncode
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
