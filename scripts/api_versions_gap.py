#!/usr/bin/env python3
"""Shoal's ApiVersions against Apache Kafka's message specifications (issue 64's table).

Reads every request spec (`common/message/*Request.json`) from the kafka-clients jar the Java
tests fetch, keeps the APIs a Kafka broker serves to clients (those whose `listeners` name
"broker"), and asks a Shoal broker ApiVersions v0. Prints, per API, Kafka's newest version
(unstable ones excluded, as a Kafka broker does by default), Shoal's, and whether Shoal is
behind, ahead or does not serve it; then the totals.

    python3 scripts/api_versions_gap.py [--bootstrap HOST:PORT] [--jar kafka-clients.jar] [--json]

Without --bootstrap it starts the release binary on a scratch directory.
"""

import argparse
import json
import pathlib
import re
import shutil
import struct
import sys
import tempfile
import zipfile

from benchlib import ROOT, stop, wait_for_port
from client_produce import start_shoal

sys.path.insert(0, str(ROOT / "tests" / "integration"))
import kafka_wire as wire  # noqa: E402

CLASSPATH = ROOT / "tests" / "java" / "target" / "kafka.classpath"
API_VERSIONS_KEY = 18


def kafka_clients_jar(given):
    if given:
        return pathlib.Path(given)
    if not CLASSPATH.exists():
        sys.exit(f"{CLASSPATH} is missing: run scripts/java_tests.sh once (or pass --jar)")
    for entry in CLASSPATH.read_text().strip().split(":"):
        if re.search(r"/kafka-clients-[\d.]+\.jar$", entry):
            return pathlib.Path(entry)
    sys.exit("no kafka-clients jar on the Java tests' classpath")


def newest_version(spec):
    """The newest version a Kafka broker advertises: `validVersions`' top, less one when the
    newest is marked unstable (served only with unstable.api.versions.enable)."""
    top = int(spec["validVersions"].split("-")[-1])
    return top - 1 if spec.get("latestVersionUnstable") else top


def kafka_broker_apis(jar):
    """{api key: (name, newest version)} for requests a broker listener serves."""
    apis = {}
    with zipfile.ZipFile(jar) as archive:
        for name in archive.namelist():
            if not re.fullmatch(r"common/message/\w+Request\.json", name):
                continue
            # The specs carry // comments, which JSON does not allow.
            text = re.sub(r"^\s*//.*$", "", archive.read(name).decode(), flags=re.M)
            spec = json.loads(text)
            if "broker" in spec.get("listeners", []):
                api = spec["name"].removesuffix("Request")
                apis[spec["apiKey"]] = (api, newest_version(spec))
    return apis


def shoal_api_versions(bootstrap):
    """{api key: max version} from ApiVersions v0."""
    conn = wire.Connection(bootstrap)
    conn.send(wire.request(API_VERSIONS_KEY, 0, 1, b"", client_id="api-versions-gap"))
    answer = conn.recv_response()
    conn.close()
    if answer is None:
        sys.exit("the broker closed the connection")
    _, body = answer
    error, count = struct.unpack(">hi", body[:6])
    if error:
        sys.exit(f"ApiVersions answered error {error}")
    served = {}
    for i in range(count):
        key, _, top = struct.unpack(">hhh", body[6 + 6 * i: 12 + 6 * i])
        served[key] = top
    return served


def compare(kafka, shoal):
    rows = []
    for key in sorted(kafka):
        name, top = kafka[key]
        mine = shoal.get(key)
        status = ("not served" if mine is None else "behind" if mine < top
                  else "ahead" if mine > top else "level")
        rows.append({"api_key": key, "api": name, "kafka": top, "shoal": mine, "status": status})
    for key in sorted(set(shoal) - set(kafka)):
        rows.append({"api_key": key, "api": "(not a Kafka broker API)", "kafka": None,
                     "shoal": shoal[key], "status": "shoal only"})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", help="a running Shoal broker; default: start one")
    ap.add_argument("--jar", help="kafka-clients jar; default: the Java tests' classpath")
    ap.add_argument("--json", action="store_true", help="the rows as JSON")
    args = ap.parse_args()
    kafka = kafka_broker_apis(kafka_clients_jar(args.jar))
    if args.bootstrap:
        shoal = shoal_api_versions(args.bootstrap)
    else:
        work = pathlib.Path(tempfile.mkdtemp())
        process, port = start_shoal(ROOT / "target" / "release" / "shoal", work)
        try:
            wait_for_port(port, 60)
            shoal = shoal_api_versions(f"127.0.0.1:{port}")
        finally:
            stop(process)
            shutil.rmtree(work, ignore_errors=True)
    rows = compare(kafka, shoal)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'key':>4}  {'API':34} {'Kafka':>5} {'Shoal':>5}  status")
    for row in rows:
        shoal_top = "-" if row["shoal"] is None else row["shoal"]
        kafka_top = "-" if row["kafka"] is None else row["kafka"]
        print(f"{row['api_key']:>4}  {row['api']:34} {kafka_top:>5} {shoal_top:>5}  "
              f"{row['status']}")
    counts = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    print(f"\nKafka broker APIs: {len(kafka)}; Shoal advertises {len(shoal)}; "
          + ", ".join(f"{status}: {n}" for status, n in sorted(counts.items())))


if __name__ == "__main__":
    main()
