//! Each data file's bounds on the `kafka` struct's partition, offset and timestamp columns, as
//! a manifest's `lower_bounds` / `upper_bounds` (Iceberg's single-value binary form: little-
//! endian ints and longs, timestamps in microseconds) with their value and null counts. They
//! let a reader skip the files outside a query's offsets or times instead of opening every one.

use crate::Row;

/// The field ids the bounds are kept for, as `table_schema::kafka_column` gives them.
const PARTITION_ID: i32 = 2;
const OFFSET_ID: i32 = 3;
const TIMESTAMP_ID: i32 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KafkaBounds {
    pub partition: (i32, i32),
    pub offset: (i64, i64),
    pub timestamp_micros: (i64, i64),
}

impl KafkaBounds {
    /// The bounds of `rows`; None for none.
    pub fn of(rows: &[Row]) -> Option<KafkaBounds> {
        let first = rows.first()?;
        let start = KafkaBounds {
            partition: (first.partition, first.partition),
            offset: (first.offset, first.offset),
            timestamp_micros: (first.timestamp_ms * 1_000, first.timestamp_ms * 1_000),
        };
        Some(rows.iter().fold(start, |bounds, row| {
            bounds.merge(KafkaBounds {
                partition: (row.partition, row.partition),
                offset: (row.offset, row.offset),
                timestamp_micros: (row.timestamp_ms * 1_000, row.timestamp_ms * 1_000),
            })
        }))
    }

    /// The bounds of two files' rows together (a compaction's).
    pub fn merge(self, other: KafkaBounds) -> KafkaBounds {
        fn span<T: Ord>(a: (T, T), b: (T, T)) -> (T, T) {
            (a.0.min(b.0), a.1.max(b.1))
        }
        KafkaBounds {
            partition: span(self.partition, other.partition),
            offset: span(self.offset, other.offset),
            timestamp_micros: span(self.timestamp_micros, other.timestamp_micros),
        }
    }

    /// (field id, lower, upper) in Iceberg's single-value binary form.
    pub fn encoded(&self) -> [(i32, Vec<u8>, Vec<u8>); 3] {
        [
            (
                PARTITION_ID,
                self.partition.0.to_le_bytes().to_vec(),
                self.partition.1.to_le_bytes().to_vec(),
            ),
            (
                OFFSET_ID,
                self.offset.0.to_le_bytes().to_vec(),
                self.offset.1.to_le_bytes().to_vec(),
            ),
            (
                TIMESTAMP_ID,
                self.timestamp_micros.0.to_le_bytes().to_vec(),
                self.timestamp_micros.1.to_le_bytes().to_vec(),
            ),
        ]
    }

    /// The bounds back from a manifest's (field id, bytes) maps; None unless all are there.
    pub fn decoded(lower: &[(i32, Vec<u8>)], upper: &[(i32, Vec<u8>)]) -> Option<KafkaBounds> {
        let find = |map: &[(i32, Vec<u8>)], id: i32| {
            map.iter()
                .find(|(key, _)| *key == id)
                .map(|(_, v)| v.clone())
        };
        let int = |bytes: Vec<u8>| Some(i32::from_le_bytes(bytes.try_into().ok()?));
        let long = |bytes: Vec<u8>| Some(i64::from_le_bytes(bytes.try_into().ok()?));
        Some(KafkaBounds {
            partition: (
                int(find(lower, PARTITION_ID)?)?,
                int(find(upper, PARTITION_ID)?)?,
            ),
            offset: (
                long(find(lower, OFFSET_ID)?)?,
                long(find(upper, OFFSET_ID)?)?,
            ),
            timestamp_micros: (
                long(find(lower, TIMESTAMP_ID)?)?,
                long(find(upper, TIMESTAMP_ID)?)?,
            ),
        })
    }

    /// The ids of the columns the bounds cover (none of them is ever null).
    pub fn field_ids() -> [i32; 3] {
        [PARTITION_ID, OFFSET_ID, TIMESTAMP_ID]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(partition: i32, offset: i64, timestamp_ms: i64) -> Row {
        Row {
            partition,
            offset,
            timestamp_ms,
            key: None,
            value: None,
            headers: Vec::new(),
        }
    }

    #[test]
    fn bounds_span_the_rows_and_survive_their_encoding() {
        let bounds = KafkaBounds::of(&[row(2, 10, 5), row(0, 12, 3), row(1, 11, 9)]).unwrap();
        assert_eq!(bounds.partition, (0, 2));
        assert_eq!(bounds.offset, (10, 12));
        assert_eq!(bounds.timestamp_micros, (3_000, 9_000));
        let (lower, upper): (Vec<_>, Vec<_>) = (bounds.encoded().into_iter())
            .map(|(id, low, high)| ((id, low), (id, high)))
            .unzip();
        assert_eq!(KafkaBounds::decoded(&lower, &upper), Some(bounds));
        assert_eq!(KafkaBounds::decoded(&lower[..2], &upper), None);
        let later = KafkaBounds::of(&[row(1, 40, 20)]).unwrap();
        assert_eq!(bounds.merge(later).offset, (10, 40));
        assert_eq!(KafkaBounds::of(&[]), None);
    }
}
