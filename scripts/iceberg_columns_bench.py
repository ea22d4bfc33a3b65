#!/usr/bin/env python3
"""What making values columns costs the Iceberg table writer (issue 51), on one broker as
scripts/iceberg_bench.py runs it: a table catching up with --seconds of records whose values
are about 1 KiB, for --rounds rounds (each round's order the last one's reversed) of

  bytes:      one 1 KiB value, kept as the table's binary value column;
  avro_bytes: the Avro records below with their first byte changed, so that they carry no
              schema id and are kept as bytes: the same data as `avro`, as compressible;
  avro:       Avro records (confluent-kafka's AvroSerializer; 8 fields: strings, longs, a
              double, a list of strings, a nested record; mostly random hex), which the writer
              decodes into columns.

Reports each side's rows/s, MB/s and the broker's CPU s per GB while catching up, and the
ratios avro/avro_bytes (what making columns costs) and avro/bytes. The one repeated value
compresses to almost nothing, so `bytes` writes far smaller data files than the other two.

    python3 scripts/iceberg_columns_bench.py [--seconds 10] [--rounds 2]

Writes perf-results/<date>-iceberg-columns.json.
"""

import json
import os
import statistics

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from benchlib import write_results
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


def avro_as_bytes(registry_url):
    """The Avro records with a first byte that is not the schema id's magic byte."""
    return tuple(b"\x01" + value[1:] for value in avro_values(registry_url))


SIDES = {"bytes": None, "avro_bytes": avro_as_bytes, "avro": avro_values}


def main():
    args = arguments(seconds=10)
    runs = [{} for _ in range(args.rounds)]
    for round_ in range(args.rounds):
        order = list(SIDES) if round_ % 2 == 0 else list(reversed(SIDES))
        for name in order:
            measured = catch_up(args, values=SIDES[name])
            runs[round_].update({f"{name}_{k}": v for k, v in measured.items()})
            print(json.dumps(runs[round_]), flush=True)
    results = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    for figure in ("writer_rows_per_s", "writer_mb_per_s", "writer_broker_cpu_s_per_gb"):
        for base in ("avro_bytes", "bytes"):
            results[f"avro_over_{base}_{figure}"] = round(
                results[f"avro_{figure}"] / results[f"{base}_{figure}"], 3)
    print(json.dumps(results), flush=True)
    workload = {
        "records": f"--seconds {args.seconds} of confluent-kafka produce (acks=all, linger.ms=5, "
                   "3 partitions) before the table is enabled, then the writer catches up",
        "bytes": "one 1 KiB value, kept as the table's binary value column",
        "avro_bytes": "the avro records with their first byte changed (no schema id), kept as "
                      "bytes",
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
