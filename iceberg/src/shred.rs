//! Decoded Avro values split into the Parquet leaves of the table's value columns: each
//! leaf's present values with a definition level (how many of its optional or repeated
//! ancestors are present) and a repetition level (which repeated ancestor a value starts a new
//! item of) per slot, as Parquet's nested encoding stores them.

use std::cell::Cell;

use apache_avro::types::Value as AvroValue;
use bytes::Bytes;
use parquet::data_type::{ByteArray, FixedLenByteArray};

use crate::avro_columns::DURATION_BYTES;
use crate::columns::{
    decimal_storage, unscaled_decimal, Column, ColumnType, DecimalStorage, Physical,
    DECIMAL_PRECISION_MAX,
};

/// A definition or repetition level.
pub type Level = i16;

/// One leaf's present values.
pub enum LeafValues {
    Boolean(Vec<bool>),
    Int32(Vec<i32>),
    Int64(Vec<i64>),
    Float(Vec<f32>),
    Double(Vec<f64>),
    Bytes(ByteValues),
    Fixed(Vec<FixedLenByteArray>),
}

/// A leaf's byte-array values end to end in one buffer: one allocation a leaf, reused from
/// commit to commit (`spare_buffers`), rather than one a value. Parquet's `ByteArray`s are
/// cut from it, without copying, only while the column is written.
pub struct ByteValues {
    /// In a Cell so that writing, which lends the buffer to the `ByteArray`s, can take it
    /// through a shared reference.
    data: Cell<Buffer>,
    /// Where each value ends in `data`.
    ends: Vec<usize>,
}

/// The buffer: owned while values are pushed; lent once written, because parquet keeps
/// handles on it (a column's minimum and maximum) until its file is written. It is taken
/// back, to be spare, when the values are dropped.
enum Buffer {
    Owned(Vec<u8>),
    Lent(Bytes),
}

impl Default for Buffer {
    fn default() -> Self {
        Buffer::Owned(Vec::new())
    }
}

impl ByteValues {
    fn new() -> ByteValues {
        ByteValues {
            data: Cell::new(Buffer::Owned(crate::spare_buffers::take())),
            ends: Vec::new(),
        }
    }

    /// The buffer to change (made owned again if it was lent).
    fn owned(&mut self) -> &mut Vec<u8> {
        let data = self.data.get_mut();
        if let Buffer::Lent(bytes) = data {
            *data = Buffer::Owned(bytes.to_vec());
        }
        match data {
            Buffer::Owned(vec) => vec,
            Buffer::Lent(_) => unreachable!("made owned above"),
        }
    }

    fn push(&mut self, value: &[u8]) {
        let data = self.owned();
        data.extend_from_slice(value);
        let end = data.len();
        self.ends.push(end);
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn truncate(&mut self, len: usize) {
        self.ends.truncate(len);
        let end = self.ends.last().copied().unwrap_or(0);
        self.owned().truncate(end);
    }

    /// `write` given the values as `ByteArray`s that share the buffer.
    pub fn write_with<T>(&self, write: impl FnOnce(&[ByteArray]) -> T) -> T {
        let shared = match self.data.take() {
            Buffer::Owned(vec) => Bytes::from(vec),
            Buffer::Lent(bytes) => bytes,
        };
        let mut start = 0;
        let values: Vec<ByteArray> = (self.ends.iter())
            .map(|&end| {
                let value = ByteArray::from(shared.slice(start..end));
                start = end;
                value
            })
            .collect();
        let written = write(&values);
        self.data.set(Buffer::Lent(shared));
        written
    }
}

impl Drop for ByteValues {
    fn drop(&mut self) {
        let buffer = match self.data.take() {
            Buffer::Owned(vec) => vec,
            // Unique once the file that lent it is written; else it is not kept.
            Buffer::Lent(bytes) => match bytes.try_into_mut() {
                Ok(unique) => Vec::from(unique),
                Err(_) => return,
            },
        };
        crate::spare_buffers::give(buffer);
    }
}

impl LeafValues {
    fn of(physical: Physical) -> LeafValues {
        match physical {
            Physical::Boolean => LeafValues::Boolean(Vec::new()),
            Physical::Int32 => LeafValues::Int32(Vec::new()),
            Physical::Int64 => LeafValues::Int64(Vec::new()),
            Physical::Float => LeafValues::Float(Vec::new()),
            Physical::Double => LeafValues::Double(Vec::new()),
            Physical::ByteArray => LeafValues::Bytes(ByteValues::new()),
            Physical::FixedLenByteArray => LeafValues::Fixed(Vec::new()),
        }
    }

    fn len(&self) -> usize {
        match self {
            LeafValues::Boolean(v) => v.len(),
            LeafValues::Int32(v) => v.len(),
            LeafValues::Int64(v) => v.len(),
            LeafValues::Float(v) => v.len(),
            LeafValues::Double(v) => v.len(),
            LeafValues::Bytes(v) => v.len(),
            LeafValues::Fixed(v) => v.len(),
        }
    }

    fn truncate(&mut self, len: usize) {
        match self {
            LeafValues::Boolean(v) => v.truncate(len),
            LeafValues::Int32(v) => v.truncate(len),
            LeafValues::Int64(v) => v.truncate(len),
            LeafValues::Float(v) => v.truncate(len),
            LeafValues::Double(v) => v.truncate(len),
            LeafValues::Bytes(v) => v.truncate(len),
            LeafValues::Fixed(v) => v.truncate(len),
        }
    }
}

pub struct Leaf {
    pub values: LeafValues,
    pub definitions: Vec<Level>,
    pub repetitions: Vec<Level>,
}

/// The value column's leaves for the rows pushed so far.
pub struct ValueLeaves {
    /// The value column's type: a struct of the table's value fields.
    kind: ColumnType,
    pub leaves: Vec<Leaf>,
    /// Each leaf's lengths before the row being pushed, to undo a row that fails halfway.
    undo: Vec<(usize, usize)>,
}

/// Where a value's slots go: the leaf the next primitive fills, the definition level of the
/// enclosing present value, the repetition level of its first slot, and how many repeated
/// ancestors enclose it.
#[derive(Clone, Copy)]
struct Place {
    definition: Level,
    repetition: Level,
    repeated_depth: Level,
}

impl ValueLeaves {
    pub fn new(fields: &[Column]) -> ValueLeaves {
        let kind = ColumnType::Struct(fields.to_vec());
        let mut physical = Vec::new();
        kind.leaves(&mut physical);
        ValueLeaves {
            kind,
            leaves: (physical.into_iter())
                .map(|p| Leaf {
                    values: LeafValues::of(p),
                    definitions: Vec::new(),
                    repetitions: Vec::new(),
                })
                .collect(),
            undo: Vec::new(),
        }
    }

    /// One row's value: a decoded record, or None for a record without a value. A value that
    /// does not fit the columns is refused and leaves nothing behind.
    pub fn push(&mut self, value: Option<AvroValue>) -> Result<(), String> {
        self.undo.clear();
        self.undo
            .extend((self.leaves.iter()).map(|l| (l.values.len(), l.definitions.len())));
        let start = Place {
            definition: 0,
            repetition: 0,
            repeated_depth: 0,
        };
        let kind = std::mem::replace(&mut self.kind, ColumnType::Boolean);
        let mut cursor = 0;
        let pushed = self.shred(&mut cursor, false, &kind, value, start);
        self.kind = kind;
        if pushed.is_err() {
            for (leaf, (values, levels)) in self.leaves.iter_mut().zip(&self.undo) {
                leaf.values.truncate(*values);
                leaf.definitions.truncate(*levels);
                leaf.repetitions.truncate(*levels);
            }
        }
        pushed
    }

    /// Every leaf under `kind` gets an empty slot at `place` (the value is null, or a list or
    /// map is empty).
    fn absent(&mut self, cursor: &mut usize, kind: &ColumnType, place: Place) {
        let count = kind.leaf_count();
        for leaf in &mut self.leaves[*cursor..*cursor + count] {
            leaf.definitions.push(place.definition);
            leaf.repetitions.push(place.repetition);
        }
        *cursor += count;
    }

    fn shred(
        &mut self,
        cursor: &mut usize,
        required: bool,
        kind: &ColumnType,
        value: Option<AvroValue>,
        place: Place,
    ) -> Result<(), String> {
        let value = value.map(without_union).filter(|v| *v != AvroValue::Null);
        let Some(value) = value else {
            if required {
                return Err("a required field is null".into());
            }
            self.absent(cursor, kind, place);
            return Ok(());
        };
        let present = Place {
            definition: place.definition + Level::from(!required),
            ..place
        };
        match (kind, value) {
            (ColumnType::Struct(fields), AvroValue::Record(mut values)) => {
                for field in fields {
                    let value = (values.iter_mut())
                        .find(|(name, _)| *name == field.name)
                        .map(|(_, v)| std::mem::replace(v, AvroValue::Null));
                    self.shred(cursor, field.required, &field.kind, value, present)?;
                }
                Ok(())
            }
            (ColumnType::List(element), AvroValue::Array(items)) => {
                if items.is_empty() {
                    self.absent(cursor, &element.kind, present);
                    return Ok(());
                }
                let start = *cursor;
                for (i, item) in items.into_iter().enumerate() {
                    *cursor = start;
                    let slot = repeated_slot(present, i);
                    self.shred(cursor, element.required, &element.kind, Some(item), slot)?;
                }
                Ok(())
            }
            (ColumnType::Map(key, value_type), AvroValue::Map(entries)) => {
                if entries.is_empty() {
                    self.absent(cursor, &key.kind, present);
                    self.absent(cursor, &value_type.kind, present);
                    return Ok(());
                }
                let start = *cursor;
                for (i, (name, item)) in entries.into_iter().enumerate() {
                    *cursor = start;
                    let slot = repeated_slot(present, i);
                    let name = Some(AvroValue::String(name));
                    self.shred(cursor, true, &key.kind, name, slot)?;
                    self.shred(
                        cursor,
                        value_type.required,
                        &value_type.kind,
                        Some(item),
                        slot,
                    )?;
                }
                Ok(())
            }
            (primitive, value) => {
                let leaf = &mut self.leaves[*cursor];
                push_primitive(&mut leaf.values, primitive, value)?;
                leaf.definitions.push(present.definition);
                leaf.repetitions.push(present.repetition);
                *cursor += 1;
                Ok(())
            }
        }
    }
}

/// The place of item `index` of a list or map at `present`: one level deeper in both; every
/// item but the first starts a new item of this repeated level.
fn repeated_slot(present: Place, index: usize) -> Place {
    let repeated_depth = present.repeated_depth + 1;
    Place {
        definition: present.definition + 1,
        repetition: if index == 0 {
            present.repetition
        } else {
            repeated_depth
        },
        repeated_depth,
    }
}

fn without_union(value: AvroValue) -> AvroValue {
    match value {
        AvroValue::Union(_, inner) => without_union(*inner),
        other => other,
    }
}

fn push_primitive(
    values: &mut LeafValues,
    kind: &ColumnType,
    value: AvroValue,
) -> Result<(), String> {
    use AvroValue as A;
    match (values, kind, value) {
        (LeafValues::Boolean(out), _, A::Boolean(b)) => out.push(b),
        (LeafValues::Int32(out), ColumnType::Int, A::Int(i))
        | (LeafValues::Int32(out), ColumnType::Date, A::Date(i) | A::Int(i)) => out.push(i),
        (LeafValues::Int64(out), ColumnType::Long, A::Long(l)) => out.push(l),
        (LeafValues::Int64(out), ColumnType::Long, A::Int(i)) => out.push(i64::from(i)),
        (LeafValues::Int64(out), ColumnType::Time, A::TimeMillis(ms)) => {
            out.push(i64::from(ms) * 1_000)
        }
        (LeafValues::Int64(out), ColumnType::Time, A::TimeMicros(us)) => out.push(us),
        (
            LeafValues::Int64(out),
            ColumnType::TimestampTz | ColumnType::Timestamp,
            A::TimestampMillis(ms) | A::LocalTimestampMillis(ms),
        ) => out.push(ms.saturating_mul(1_000)),
        (
            LeafValues::Int64(out),
            ColumnType::TimestampTz | ColumnType::Timestamp,
            A::TimestampMicros(us) | A::LocalTimestampMicros(us),
        ) => out.push(us),
        (
            LeafValues::Int64(out),
            ColumnType::TimestampTz | ColumnType::Timestamp,
            A::TimestampNanos(ns) | A::LocalTimestampNanos(ns),
        ) => out.push(ns.div_euclid(1_000)),
        (LeafValues::Float(out), _, A::Float(f)) => out.push(f),
        (LeafValues::Double(out), _, A::Double(d)) => out.push(d),
        (LeafValues::Double(out), _, A::Float(f)) => out.push(f64::from(f)),
        (LeafValues::Bytes(out), ColumnType::String, A::String(s) | A::Enum(_, s)) => {
            out.push(s.as_bytes())
        }
        (LeafValues::Bytes(out), ColumnType::String, A::Uuid(u)) => {
            out.push(u.hyphenated().to_string().as_bytes())
        }
        (LeafValues::Bytes(out), ColumnType::Binary, A::Bytes(b) | A::Fixed(_, b)) => out.push(&b),
        (LeafValues::Fixed(out), ColumnType::Fixed(length), A::Fixed(size, b))
            if size == *length && b.len() == *length =>
        {
            out.push(FixedLenByteArray::from(b))
        }
        (LeafValues::Fixed(out), ColumnType::Fixed(DURATION_BYTES), A::Duration(duration)) => out
            .push(FixedLenByteArray::from(
                <[u8; DURATION_BYTES]>::from(duration).to_vec(),
            )),
        (LeafValues::Bytes(out), ColumnType::String, A::BigDecimal(number)) => {
            out.push(number.to_string().as_bytes())
        }
        (values, ColumnType::Decimal(precision, _), A::Decimal(decimal)) => {
            let bytes = Vec::<u8>::try_from(&decimal).map_err(|e| e.to_string())?;
            push_decimal(values, *precision, &bytes)?
        }
        (_, kind, value) => {
            return Err(format!(
                "a value {value:?} where the column is a {}",
                kind.describe()
            ))
        }
    }
    Ok(())
}

/// A decimal's unscaled value (big-endian two's complement) in the leaf its precision gives.
fn push_decimal(values: &mut LeafValues, precision: u32, bytes: &[u8]) -> Result<(), String> {
    let too_big = || format!("a decimal wider than its column's {precision} digits");
    let unscaled = unscaled_decimal(bytes).ok_or_else(too_big)?;
    if unscaled.unsigned_abs() >= 10u128.pow(precision.min(DECIMAL_PRECISION_MAX)) {
        return Err(too_big());
    }
    match (values, decimal_storage(precision)) {
        (LeafValues::Int32(out), DecimalStorage::Int32) => out.push(unscaled as i32),
        (LeafValues::Int64(out), DecimalStorage::Int64) => out.push(unscaled as i64),
        (LeafValues::Fixed(out), DecimalStorage::Fixed(length)) => out.push(
            FixedLenByteArray::from(unscaled.to_be_bytes()[16 - length..].to_vec()),
        ),
        _ => return Err("a decimal's leaf is not the one its precision gives".into()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::Element;

    fn column(id: i32, name: &str, kind: ColumnType) -> Column {
        Column {
            id,
            name: name.into(),
            required: false,
            kind,
        }
    }

    fn record(fields: Vec<(&str, AvroValue)>) -> AvroValue {
        AvroValue::Record(fields.into_iter().map(|(n, v)| (n.into(), v)).collect())
    }

    #[test]
    fn nested_lists_and_nulls_get_their_levels() {
        let tags = ColumnType::List(Box::new(Element {
            id: 13,
            required: false,
            kind: ColumnType::String,
        }));
        let mut leaves =
            ValueLeaves::new(&[column(11, "n", ColumnType::Long), column(12, "tags", tags)]);
        let strings = |items: &[&str]| {
            AvroValue::Array(
                (items.iter())
                    .map(|s| AvroValue::Union(1, Box::new(AvroValue::String(s.to_string()))))
                    .collect(),
            )
        };
        leaves
            .push(Some(record(vec![
                ("n", AvroValue::Int(7)),
                ("tags", strings(&["a", "b"])),
            ])))
            .unwrap();
        leaves
            .push(Some(record(vec![
                ("n", AvroValue::Null),
                ("tags", strings(&[])),
            ])))
            .unwrap();
        leaves.push(None).unwrap();
        // A list item of the wrong type undoes the whole row.
        let wrong = AvroValue::Array(vec![AvroValue::Int(1)]);
        assert!(leaves
            .push(Some(record(vec![
                ("n", AvroValue::Long(1)),
                ("tags", wrong)
            ])))
            .is_err());
        let n = &leaves.leaves[0];
        assert!(matches!(&n.values, LeafValues::Int64(v) if v == &[7]));
        assert_eq!(n.definitions, [2, 1, 0]);
        let tag = &leaves.leaves[1];
        assert_eq!(tag.values.len(), 2);
        // value present (1), tags present (2), an item (3), the item present (4).
        assert_eq!(tag.definitions, [4, 4, 2, 0]);
        assert_eq!(tag.repetitions, [0, 1, 0, 0]);
    }
}
