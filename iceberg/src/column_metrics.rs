//! A data file's column metrics, as its manifest entry carries them and as Iceberg's own
//! Parquet writer keeps them: each leaf column's value and null counts (and NaN counts of
//! float and double columns), and lower and upper
//! bounds for each primitive column whose path holds only structs (no list or map), in
//! Iceberg's single-value binary form. Readers skip the files whose bounds miss a query's
//! filter, on any such column (`kafka.offset`, `value.customer_id`), instead of opening every
//! one. The metrics come from the Parquet footer the file was written with, so appended and
//! compacted files get them alike.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use parquet::basic::{LogicalType, Type as PhysicalType};
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData};
use parquet::file::statistics::Statistics;
use parquet::schema::types::ColumnDescriptor;

use crate::columns::unscaled_decimal;

/// Strings and binaries keep bounds of at most this many characters or bytes: Iceberg's
/// default metrics mode, `truncate(16)`, so a manifest does not grow with every long value.
const TRUNCATE_LENGTH: usize = 16;

/// Bounds are kept for at most this many columns, the first in the file; the rest keep
/// counts only, as Iceberg's `write.metadata.metrics.max-inferred-column-defaults` does, so
/// a wide schema's manifests stay small.
const MAX_COLUMNS_WITH_BOUNDS: usize = 100;

/// Maps from field id, as a manifest entry's `value_counts`, `null_value_counts`,
/// `nan_value_counts`, `lower_bounds` and `upper_bounds` hold them (empty when not known).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ColumnMetrics {
    pub value_counts: BTreeMap<i32, i64>,
    pub null_value_counts: BTreeMap<i32, i64>,
    /// Float and double columns' NaNs, which the bounds leave out.
    pub nan_value_counts: BTreeMap<i32, i64>,
    pub lower_bounds: BTreeMap<i32, Vec<u8>>,
    pub upper_bounds: BTreeMap<i32, Vec<u8>>,
}

impl ColumnMetrics {
    /// The metrics of a Parquet file from its metadata; a leaf without a field id is left
    /// out, and a column some row group has no statistics for has no null count or bounds.
    pub fn of_parquet(metadata: &ParquetMetaData) -> ColumnMetrics {
        let descriptor = metadata.file_metadata().schema_descr();
        let mut metrics = ColumnMetrics::default();
        let mut bounded = 0;
        for (index, column) in descriptor.columns().iter().enumerate() {
            let info = column.self_type().get_basic_info();
            if !info.has_id() {
                continue;
            }
            let id = info.id();
            let chunks = || metadata.row_groups().iter().map(|g| g.column(index));
            metrics
                .value_counts
                .insert(id, chunks().map(|c| c.num_values()).sum());
            let statistics: Option<Vec<&Statistics>> = chunks().map(|c| c.statistics()).collect();
            let Some(statistics) = statistics else {
                continue;
            };
            let nulls: Option<u64> = statistics.iter().map(|s| s.null_count_opt()).sum();
            if let Some(nulls) = nulls {
                metrics
                    .null_value_counts
                    .insert(id, i64::try_from(nulls).unwrap_or(i64::MAX));
            }
            let nans: Option<u64> = statistics.iter().map(|s| s.nan_count_opt()).sum();
            if let Some(nans) = nans {
                metrics
                    .nan_value_counts
                    .insert(id, i64::try_from(nans).unwrap_or(i64::MAX));
            }
            let Some(kind) = Kind::of(column) else {
                continue;
            };
            if column.max_rep_level() > 0 || bounded == MAX_COLUMNS_WITH_BOUNDS {
                continue;
            }
            bounded += 1;
            let Some((low, high)) = bounds_of(kind, chunks().zip(&statistics)) else {
                continue;
            };
            if let Some(lower) = kind.lower_bound(low) {
                metrics.lower_bounds.insert(id, lower);
            }
            if let Some(upper) = kind.upper_bound(high) {
                metrics.upper_bounds.insert(id, upper);
            }
        }
        metrics
    }
}

/// The least minimum and greatest maximum of a column's row groups; None when no row group
/// has one, or when one whose values are not all null (or NaN, which bounds leave out) has
/// none: its values would be outside the bounds.
fn bounds_of<'a>(
    kind: Kind,
    chunks: impl Iterator<Item = (&'a ColumnChunkMetaData, &'a &'a Statistics)>,
) -> Option<(Bound, Bound)> {
    let mut range: Option<(Bound, Bound)> = None;
    for (chunk, statistics) in chunks {
        let (Some(low), Some(high)) = (kind.min(statistics), kind.max(statistics)) else {
            let unbounded = statistics.null_count_opt()? + statistics.nan_count_opt().unwrap_or(0);
            if unbounded < u64::try_from(chunk.num_values()).unwrap_or(u64::MAX) {
                return None;
            }
            continue;
        };
        range = Some(match range {
            None => (low, high),
            Some((lower, upper)) => (lower.least(low), upper.greatest(high)),
        });
    }
    range
}

/// How a leaf's values compare and are written as a bound: Iceberg's type of the column, as
/// the Parquet writer stored it (`columns::ColumnType::parquet_leaf`).
#[derive(Debug, Clone, Copy)]
enum Kind {
    Boolean,
    /// int, date: four bytes little-endian.
    Int32,
    /// long, time, timestamp(tz): eight bytes little-endian.
    Int64,
    Float,
    Double,
    /// Its unscaled value in the fewest big-endian two's complement bytes.
    Decimal,
    String,
    /// binary and fixed.
    Bytes,
}

/// A bound while row groups are compared, in an order that agrees with Iceberg's.
#[derive(Debug, Clone, PartialEq)]
enum Bound {
    Integer(i128),
    Real(f64),
    Bytes(Vec<u8>),
}

impl Bound {
    fn order(&self, other: &Bound) -> Ordering {
        match (self, other) {
            (Bound::Integer(a), Bound::Integer(b)) => a.cmp(b),
            (Bound::Real(a), Bound::Real(b)) => a.total_cmp(b),
            (Bound::Bytes(a), Bound::Bytes(b)) => a.cmp(b),
            _ => Ordering::Equal,
        }
    }

    fn least(self, other: Bound) -> Bound {
        match self.order(&other) {
            Ordering::Greater => other,
            _ => self,
        }
    }

    fn greatest(self, other: Bound) -> Bound {
        match self.order(&other) {
            Ordering::Less => other,
            _ => self,
        }
    }
}

impl Kind {
    fn of(column: &ColumnDescriptor) -> Option<Kind> {
        let decimal = matches!(column.logical_type_ref(), Some(LogicalType::Decimal { .. }));
        Some(match column.physical_type() {
            _ if decimal => Kind::Decimal,
            PhysicalType::BOOLEAN => Kind::Boolean,
            PhysicalType::INT32 => Kind::Int32,
            PhysicalType::INT64 => Kind::Int64,
            PhysicalType::FLOAT => Kind::Float,
            PhysicalType::DOUBLE => Kind::Double,
            PhysicalType::BYTE_ARRAY
                if matches!(column.logical_type_ref(), Some(LogicalType::String)) =>
            {
                Kind::String
            }
            PhysicalType::BYTE_ARRAY | PhysicalType::FIXED_LEN_BYTE_ARRAY => Kind::Bytes,
            PhysicalType::INT96 => return None,
        })
    }

    fn min(self, statistics: &Statistics) -> Option<Bound> {
        self.bound(statistics, true)
    }

    fn max(self, statistics: &Statistics) -> Option<Bound> {
        self.bound(statistics, false)
    }

    fn bound(self, statistics: &Statistics, min: bool) -> Option<Bound> {
        if statistics.is_min_max_deprecated() {
            // Written by old writers with an order that may not be Iceberg's.
            return None;
        }
        fn pick<T>(min: bool, low: T, high: T) -> T {
            if min {
                low
            } else {
                high
            }
        }
        match statistics {
            Statistics::Boolean(s) => {
                pick(min, s.min_opt(), s.max_opt()).map(|v| Bound::Integer(i128::from(*v)))
            }
            Statistics::Int32(s) => {
                pick(min, s.min_opt(), s.max_opt()).map(|v| Bound::Integer(i128::from(*v)))
            }
            Statistics::Int64(s) => {
                pick(min, s.min_opt(), s.max_opt()).map(|v| Bound::Integer(i128::from(*v)))
            }
            Statistics::Float(s) => (pick(min, s.min_opt(), s.max_opt()))
                .filter(|v| !v.is_nan())
                .map(|v| Bound::Real(f64::from(*v))),
            Statistics::Double(s) => (pick(min, s.min_opt(), s.max_opt()))
                .filter(|v| !v.is_nan())
                .map(|v| Bound::Real(*v)),
            Statistics::ByteArray(_) | Statistics::FixedLenByteArray(_) => {
                let bytes = pick(min, statistics.min_bytes_opt(), statistics.max_bytes_opt())?;
                match self {
                    Kind::Decimal => signed_big_endian(bytes).map(Bound::Integer),
                    _ => Some(Bound::Bytes(bytes.to_vec())),
                }
            }
            Statistics::Int96(_) => None,
        }
    }

    /// Iceberg's single-value form of a lower bound (strings and binaries cut short); None
    /// for a string bound that is not UTF-8, which no string column of ours holds.
    fn lower_bound(self, bound: Bound) -> Option<Vec<u8>> {
        match (self, bound) {
            (Kind::String, Bound::Bytes(text)) => {
                let text = std::str::from_utf8(&text).ok()?;
                Some(
                    text.chars()
                        .take(TRUNCATE_LENGTH)
                        .collect::<String>()
                        .into_bytes(),
                )
            }
            (Kind::Bytes, Bound::Bytes(mut bytes)) => {
                bytes.truncate(TRUNCATE_LENGTH);
                Some(bytes)
            }
            (kind, bound) => Some(kind.encode(bound)),
        }
    }

    /// Iceberg's single-value form of an upper bound; one cut short is raised to stay above
    /// every value, and None when nothing that short is (all 0xff bytes, say).
    fn upper_bound(self, bound: Bound) -> Option<Vec<u8>> {
        match (self, bound) {
            (Kind::String, Bound::Bytes(text)) => {
                let text = std::str::from_utf8(&text).ok()?;
                let chars: Vec<char> = text.chars().collect();
                if chars.len() <= TRUNCATE_LENGTH {
                    return Some(text.as_bytes().to_vec());
                }
                raised_string(&chars[..TRUNCATE_LENGTH])
            }
            (Kind::Bytes, Bound::Bytes(bytes)) => {
                if bytes.len() <= TRUNCATE_LENGTH {
                    return Some(bytes);
                }
                raised_bytes(&bytes[..TRUNCATE_LENGTH])
            }
            (kind, bound) => Some(kind.encode(bound)),
        }
    }

    fn encode(self, bound: Bound) -> Vec<u8> {
        match (self, bound) {
            (Kind::Boolean, Bound::Integer(v)) => vec![u8::from(v != 0)],
            (Kind::Int32, Bound::Integer(v)) => (v as i32).to_le_bytes().to_vec(),
            (Kind::Int64, Bound::Integer(v)) => (v as i64).to_le_bytes().to_vec(),
            (Kind::Float, Bound::Real(v)) => (v as f32).to_le_bytes().to_vec(),
            (Kind::Double, Bound::Real(v)) => v.to_le_bytes().to_vec(),
            (Kind::Decimal, Bound::Integer(v)) => fewest_big_endian(v),
            (_, Bound::Bytes(bytes)) => bytes,
            (kind, bound) => unreachable!("{kind:?} bounds are not {bound:?}"),
        }
    }
}

/// A decimal bound's unscaled value; None for no bytes, which bound nothing.
fn signed_big_endian(bytes: &[u8]) -> Option<i128> {
    if bytes.is_empty() {
        return None;
    }
    unscaled_decimal(bytes)
}

/// `value` in the fewest big-endian two's complement bytes, as Iceberg writes a decimal.
fn fewest_big_endian(value: i128) -> Vec<u8> {
    let bytes = value.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (byte, next) = (bytes[start], bytes[start + 1]);
        let redundant = (byte == 0 && next & 0x80 == 0) || (byte == 0xff && next & 0x80 != 0);
        if !redundant {
            break;
        }
        start += 1;
    }
    bytes[start..].to_vec()
}

/// The shortest bytes above every value that starts with `prefix`: its last byte below 0xff
/// raised by one, the bytes after it dropped.
fn raised_bytes(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|b| *b != 0xff)?;
    let mut raised = prefix[..=last].to_vec();
    raised[last] += 1;
    Some(raised)
}

/// The shortest string above every string that starts with `prefix`: its last character
/// that has a next one raised to it (over the surrogates), the characters after it dropped.
fn raised_string(prefix: &[char]) -> Option<Vec<u8>> {
    for last in (0..prefix.len()).rev() {
        let next = match prefix[last] as u32 + 1 {
            0xd800 => Some('\u{e000}'),
            code => char::from_u32(code),
        };
        if let Some(next) = next {
            let mut raised: String = prefix[..last].iter().collect();
            raised.push(next);
            return Some(raised.into_bytes());
        }
    }
    None
}

#[cfg(test)]
mod tests;
