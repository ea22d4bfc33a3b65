"""Each data file's column metrics in the table's manifests: value and null counts for every
column, as pyiceberg computes them from the same Parquet file, and lower and upper bounds for
the columns outside lists, equal to the file's own minimum and maximum in Iceberg's
single-value form (strings cut to 16 characters). A reader's filter on a value column then
skips the files whose bounds miss it."""

import pyarrow.parquet as pq
from pyiceberg.conversions import to_bytes
from pyiceberg.expressions import EqualTo, GreaterThanOrEqual
from pyiceberg.io.pyarrow import (compute_statistics_plan,
                                  data_file_statistics_from_parquet_metadata,
                                  parquet_path_to_id_mapping)
from pyiceberg.utils.truncate import truncate_upper_bound_text_string

import duckdb_iceberg
from test_iceberg_avro import produce, rows_of, start
from test_iceberg import create_table_topic

ORDER = {
    "type": "record", "name": "Order", "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "city", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "items", "type": {"type": "array", "items": "string"}},
    ],
}
CITIES = ["Oslo", "Zürich", "Ålesund-øst-øst-øst-øst", "Bergen", "São Paulo"]
BURST = 1_000
TRUNCATE = 16


def order(i):
    return {"id": i, "city": f"{CITIES[i % len(CITIES)]}-{i}", "amount": i / 4 - 100,
            "note": f"n{i}" if i % 3 == 0 else None, "items": [f"i{i}"] * (i % 3)}


def expected_bounds(rows, field_type, low_high=lambda values: (min(values), max(values))):
    """(lower, upper) of the non-null `rows` as Iceberg writes them; None when all are null."""
    values = [v for v in rows if v is not None]
    if not values:
        return None
    low, high = low_high(values)
    if isinstance(low, str):
        cut = high[:TRUNCATE] if len(high) <= TRUNCATE else \
            truncate_upper_bound_text_string(high, TRUNCATE)
        return to_bytes(field_type, low[:TRUNCATE]), to_bytes(field_type, cut)
    return to_bytes(field_type, low), to_bytes(field_type, high)


def test_files_carry_counts_and_bounds_and_filters_skip_files(make_broker):
    broker = start(make_broker)
    create_table_topic(broker, "orders", partitions=1)
    # Three bursts, each committed before the next: at least three files of distinct ids.
    for burst in range(3):
        ids = range(burst * BURST, (burst + 1) * BURST)
        produce(broker, "orders", ORDER, [order(i) for i in ids], partitions=1,
                start=burst * BURST)
        table, _ = rows_of(broker, "orders", (burst + 1) * BURST)
    schema = table.schema()
    tasks = list(table.scan().plan_files())
    assert len(tasks) >= 3, tasks
    field = schema.find_field
    checked = {"value.id", "value.city", "value.amount", "value.note", "kafka.offset",
               "kafka.partition"}
    ids_by_file = {}
    for task in tasks:
        data = task.file
        local = data.file_path.removeprefix("file://")
        rows = pq.read_table(local).to_pylist()
        assert data.record_count == len(rows)
        ids_by_file[data.file_path] = [r["value"]["id"] for r in rows]
        for name in checked:
            top, leaf = name.split(".")
            column = field(name)
            want = expected_bounds([r[top][leaf] for r in rows], column.field_type)
            got_low = data.lower_bounds.get(column.field_id)
            got_high = data.upper_bounds.get(column.field_id)
            if want is None:
                assert (got_low, got_high) == (None, None), name
            else:
                assert (got_low, got_high) == want, (name, got_low, got_high, want)
        # A list's elements have counts only, as Iceberg's own writers keep them.
        element = schema.find_field("value.items.element")
        assert element.field_id not in data.lower_bounds
        # Counts for every column, as pyiceberg's own writer computes them from the footer.
        statistics = data_file_statistics_from_parquet_metadata(
            pq.read_metadata(local),
            compute_statistics_plan(schema, table.properties),
            parquet_path_to_id_mapping(schema))
        assert data.value_counts == statistics.value_counts
        assert data.null_value_counts == statistics.null_value_counts
        assert data.null_value_counts[field("value.note").field_id] == \
            sum(1 for r in rows if r["value"]["note"] is None)
        # Float and double columns count their NaNs apart (pyiceberg's writer counts none).
        assert data.nan_value_counts == {field("value.amount").field_id: 0}

    # A filter on a value column plans only the files whose bounds can hold it, and they
    # hold every row it selects. (pyiceberg plans by nested columns but cannot yet apply
    # such a filter to rows, so the planned files' rows are counted here.)
    def planned(row_filter):
        return {task.file.file_path for task in table.scan(row_filter=row_filter).plan_files()}
    late = planned(GreaterThanOrEqual("value.id", 2 * BURST))
    assert late == {path for path, ids in ids_by_file.items() if max(ids) >= 2 * BURST}
    assert len(late) < len(tasks)
    assert sum(1 for path in late for i in ids_by_file[path] if i >= 2 * BURST) == BURST
    [one] = planned(EqualTo("value.id", 1_500))
    assert 1_500 in ids_by_file[one]
    # Below every city's lower bound ("Bergen-…"): no file.
    assert planned(EqualTo("value.city", "Aachen")) == set()

    # DuckDB reads through the bounds to the same rows: a city longer than its bounds' 16
    # characters is found (the upper bound was raised above it), and so are a range's rows.
    long_city = order(2_002)["city"]
    assert len(long_city) > TRUNCATE
    assert duckdb_iceberg.query(
        table.metadata_location,
        f"SELECT value.id FROM t WHERE value.city = '{long_city}'") == [(2_002,)]
    assert duckdb_iceberg.query(
        table.metadata_location,
        f"SELECT count(*) FROM t WHERE value.id >= {2 * BURST}") == [(BURST,)]
