#!/usr/bin/env python3
"""What making values columns costs the Iceberg table writer (issue 51), on one broker as
scripts/iceberg_bench.py runs it: a table catching up with --seconds of records whose values
are about 1 KiB, alternating for --rounds rounds between

  a. values as bytes (the table keeps them whole), and
  b. Avro records (confluent-kafka's AvroSerializer; 8 fields: strings, longs, a double, a
     list of strings, a nested record) of about the same size, which the writer decodes into
     columns.

Reports each side's rows/s, MB/s and the broker's CPU s per GB while catching up, and the
ratios b/a.

    python3 scripts/iceberg_columns_bench.py [--seconds 10] [--rounds 2]

Writes perf-results/<date>-iceberg-columns.json.
"""

import json
import os
import statistics

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from benchlib import alternating_rounds, write_results
from iceberg_bench import TOPIC, arguments, catch_up

SCHEMA = {
    "type": "record", "name": "Order", "namespace": "bench",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "customer", "type": "string"},
        {"name": "units", "type": "long"},
        {"name": "price", "type": "double"},
        {"name": "placed_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "ship_to", "type": {"type": "record", "name": "Address", "fields": [
            {"name": "city", "type": "string"}, {"name": "street", "type": "string"}]}},
        {"name": "note", "type": "string"},
    ],
}
DISTINCT = 1000


def avro_values(registry_url):
    """DISTINCT serialized orders of about 1 KiB each (the note carries most of it)."""
    serializer = AvroSerializer(SchemaRegistryClient({"url": registry_url}), json.dumps(SCHEMA))
    context = SerializationContext(TOPIC, MessageField.VALUE)
    return tuple(serializer({
        "id": f"order-{i}", "customer": f"customer-{i % 97}", "units": i % 50,
        "price": i * 0.25, "placed_at": 1_700_000_000_000 + i,
        "tags": [f"tag-{i % 7}", f"tag-{i % 11}"],
        "ship_to": {"city": f"city-{i % 13}", "street": f"{i} long street name"},
        "note": os.urandom(440).hex()}, context) for i in range(DISTINCT))


def main():
    args = arguments(seconds=10)
    runs = [{} for _ in range(args.rounds)]
    for round_, side in alternating_rounds(args.rounds):
        name = "bytes" if side == "a" else "avro"
        measured = catch_up(args, values=None if side == "a" else avro_values)
        runs[round_].update({f"{name}_{k}": v for k, v in measured.items()})
        print(json.dumps(runs[round_]), flush=True)
    results = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    for figure in ("writer_rows_per_s", "writer_mb_per_s", "writer_broker_cpu_s_per_gb"):
        results[f"avro_over_bytes_{figure}"] = round(
            results[f"avro_{figure}"] / results[f"bytes_{figure}"], 3)
    print(json.dumps(results), flush=True)
    workload = {
        "records": f"--seconds {args.seconds} of confluent-kafka produce (acks=all, linger.ms=5, "
                   "3 partitions) before the table is enabled, then the writer catches up",
        "bytes": "1 KiB values kept as the table's binary value column",
        "avro": f"{DISTINCT} distinct AvroSerializer records of about 1 KiB cycled (schema in "
                "scripts/iceberg_columns_bench.py), decoded into 8 value columns",
        "table": f"[iceberg] commit_interval_ms {args.commit_interval_ms}, local warehouse, "
                 "SQLite catalog",
        "rounds": args.rounds, "broker_cpus": args.broker_cpus, "client_cpus": args.bench_cpus,
        "writer_thread": "not pinned (the broker's other threads' affinity: every CPU)",
    }
    write_results("iceberg-columns", "scripts/iceberg_columns_bench.py", workload, results, runs)


if __name__ == "__main__":
    main()
