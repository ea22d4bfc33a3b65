"""DuckDB's Iceberg reader over a table the broker wrote. DuckDB fetches its extensions from
its own site, which CI cannot reach, so its iceberg and avro extensions come from PyPI
(duckdb-extension-iceberg, duckdb-extension-avro: DuckDB's signed builds, which DuckDB checks
as it loads them)."""

import glob
import os

import duckdb
import duckdb_extension_avro
import duckdb_extension_iceberg


def connect():
    connection = duckdb.connect()
    for package in (duckdb_extension_avro, duckdb_extension_iceberg):
        [path] = glob.glob(os.path.join(os.path.dirname(package.__file__),
                                        "extensions", "*", "*.duckdb_extension"))
        connection.execute(f"LOAD '{path}'")
    return connection


def query(metadata_location, select):
    """`select` (naming the table `t`) over the table whose metadata is at
    `metadata_location`."""
    connection = connect()
    try:
        connection.execute(f"CREATE VIEW t AS SELECT * FROM iceberg_scan('{metadata_location}')")
        return connection.execute(select).fetchall()
    finally:
        connection.close()
