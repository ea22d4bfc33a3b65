#!/usr/bin/env python3
"""The schema registry in the broker (issue 49): one broker (local store, one shard and the
coordinator on --broker-cpus, the load on --bench-cpus), fresh per round. Per round:

- registrations: --schemas distinct Avro record schemas, each its own subject's first version,
  POSTed one after another over one keep-alive connection: registrations/s and the broker's
  CPU per registration;
- lookups: GET /schemas/ids/{id} of random registered ids over one keep-alive connection for
  --seconds (what a consumer without the schema in its cache asks; the broker answers from
  the coordinator's memory): lookups/s and CPU per lookup; and the same ids through
  confluent-kafka's SchemaRegistryClient, whose cache answers after the first (no requests);
- produce with validation on against off: shoal-bench produce (default flags, values starting
  with a registered schema id) to a topic with confluent.value.schema.validation=true, to one
  that also decodes each value (shoal.schema.validation.decode=true; the value schema is an
  Avro fixed of the values' size, so shoal-bench's bytes decode: this measures the decoding
  machinery per record, not a field-rich schema), and to one without, in rotating order: MB/s
  and the broker's CPU per GB, as ratios.

    python3 scripts/schema_registry_bench.py [--rounds 3] [--seconds 8] [--schemas 2000]
        [--label NAME]

Writes perf-results/<date>-schema-registry[-LABEL].json.
"""

import argparse
import http.client
import json
import pathlib
import random
import shutil
import statistics
import subprocess
import tempfile
import time

from benchlib import cpu_seconds, free_port, stop, wait_for_port, write_results
from peer_compare import bench, start_shoal

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def schema(i):
    return json.dumps({"type": "record", "name": f"R{i}", "namespace": "bench",
                       "fields": [{"name": "id", "type": "long"},
                                  {"name": f"f{i}", "type": "string", "default": ""}]})


def call(connection, method, path, body=None):
    data = json.dumps(body) if body is not None else None
    connection.request(method, path, body=data, headers={"Content-Type": CONTENT_TYPE})
    response = connection.getresponse()
    answer = json.loads(response.read())
    assert response.status == 200, (path, response.status, answer)
    return answer


def registrations(port, process, count):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    before, started = cpu_seconds(process.pid), time.perf_counter()
    ids = [call(connection, "POST", f"/subjects/s{i}-value/versions",
                {"schema": schema(i)})["id"] for i in range(count)]
    took, cpu = time.perf_counter() - started, cpu_seconds(process.pid) - before
    connection.close()
    return ids, {"registrations_per_s": round(count / took, 1),
                 "broker_cpu_us_per_registration": round(cpu / count * 1e6, 1)}


def lookups(port, process, ids, seconds):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    rng = random.Random(7)
    done = 0
    before, started = cpu_seconds(process.pid), time.perf_counter()
    while time.perf_counter() - started < seconds:
        call(connection, "GET", f"/schemas/ids/{rng.choice(ids)}")
        done += 1
    took, cpu = time.perf_counter() - started, cpu_seconds(process.pid) - before
    connection.close()
    return {"lookups_per_s": round(done / took, 1),
            "broker_cpu_us_per_lookup": round(cpu / done * 1e6, 1)}


def client_lookups(port, ids, seconds):
    """confluent-kafka's client: the first lookup of an id asks, later ones are its cache's."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    client = SchemaRegistryClient({"url": f"http://127.0.0.1:{port}"})
    rng = random.Random(11)
    done = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        client.get_schema(rng.choice(ids))
        done += 1
    return {"client_cached_lookups_per_s": round(done / (time.perf_counter() - started), 1)}


def produce(port, process, work, args, topic, schema_id):
    before = cpu_seconds(process.pid)
    result = bench("produce", port, work, args, "--topic", topic, "--duration-s", args.seconds,
                   "--schema-id", schema_id)
    cpu = cpu_seconds(process.pid) - before
    produced = result["produce"]
    assert result.get("produce_errors", 0) == 0, result
    return {"mb_per_s": produced["mb_per_s"],
            "broker_cpu_s_per_gb": round(cpu * 1e9 / max(produced["bytes"], 1), 3)}


def create_topics(bootstrap):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic("validated", num_partitions=8,
                       config={"confluent.value.schema.validation": "true"}),
              NewTopic("decoded", num_partitions=8,
                       config={"confluent.value.schema.validation": "true",
                               "shoal.schema.validation.decode": "true"}),
              NewTopic("plain", num_partitions=8)]
    for future in admin.create_topics(topics).values():
        future.result(30)


def one_round(args, round_):
    work = pathlib.Path(tempfile.mkdtemp())
    registry_port = free_port()
    extra = f'[schema_registry]\nlisten = "127.0.0.1:{registry_port}"\n'
    process, port = start_shoal(work, args.broker_cpus, None, extra)
    try:
        wait_for_port(port, 30)
        wait_for_port(registry_port, 30)
        create_topics(f"127.0.0.1:{port}")
        ids, result = registrations(registry_port, process, args.schemas)
        result.update(lookups(registry_port, process, ids, args.seconds))
        result.update(client_lookups(registry_port, ids, args.seconds / 4))
        # The value schema of the validated topic, so its records pass.
        connection = http.client.HTTPConnection("127.0.0.1", registry_port, timeout=30)
        value_id = call(connection, "POST", "/subjects/validated-value/versions",
                        {"schema": schema(0)})["id"]
        # shoal-bench's values: 1,024 bytes, the first 5 the prefix.
        blob = json.dumps({"type": "fixed", "name": "Blob", "size": 1024 - 5})
        blob_id = call(connection, "POST", "/subjects/decoded-value/versions",
                       {"schema": blob})["id"]
        connection.close()
        bench("produce", port, work, args, "--topic", "warmup", "--create", "--duration-s", 3)
        ids = {"validated": value_id, "decoded": blob_id, "plain": value_id}
        order = ["validated", "decoded", "plain"]
        order = order[round_ % 3:] + order[:round_ % 3]
        for topic in order:
            measured = produce(port, process, work, args, topic, ids[topic])
            result.update({f"{topic}_{k}": v for k, v in measured.items()})
        return result
    finally:
        stop(process)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--schemas", type=int, default=2000)
    ap.add_argument("--broker-cpus", default="0")
    ap.add_argument("--bench-cpus", default="1")
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    runs = []
    for round_ in range(args.rounds):
        run = one_round(args, round_)
        print(round_, json.dumps(run), flush=True)
        runs.append(run)
    medians = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    results = {
        **medians,
        "validated_over_plain_mb_per_s": round(
            medians["validated_mb_per_s"] / medians["plain_mb_per_s"], 3),
        "validated_over_plain_cpu_per_gb": round(
            medians["validated_broker_cpu_s_per_gb"] / medians["plain_broker_cpu_s_per_gb"], 3),
        "decoded_over_plain_mb_per_s": round(
            medians["decoded_mb_per_s"] / medians["plain_mb_per_s"], 3),
        "decoded_over_plain_cpu_per_gb": round(
            medians["decoded_broker_cpu_s_per_gb"] / medians["plain_broker_cpu_s_per_gb"], 3),
    }
    workload = {
        "registrations": f"{args.schemas} distinct Avro records, one subject each, POSTed in "
                         "turn over one keep-alive connection (Python http.client)",
        "lookups": "GET /schemas/ids/{id} of random registered ids over one keep-alive "
                   "connection; then confluent-kafka SchemaRegistryClient.get_schema (cached)",
        "produce": "shoal-bench produce, default flags (1 KiB records, 100 per batch, 8 "
                   "partitions, 4 connections x 8 in flight, acks=all), values prefixed with a "
                   "registered id; topic 'validated' (confluent.value.schema.validation=true), "
                   "'decoded' (and shoal.schema.validation.decode=true, an Avro fixed(1019) "
                   "value schema) and 'plain', in an order rotating per round",
        "seconds": args.seconds, "rounds": args.rounds,
        "broker": "local store, one shard and the coordinator on the broker CPU",
        "broker_cpus": args.broker_cpus, "generator_cpus": args.bench_cpus,
    }
    name = "schema-registry" + (f"-{args.label}" if args.label else "")
    write_results(name, "scripts/schema_registry_bench.py", workload, results, runs)


if __name__ == "__main__":
    main()
