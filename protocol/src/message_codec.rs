//! The primitives the generated Kafka message codecs (`crate::messages`) are written in: the
//! classic encodings (`i16`/`i32` lengths, -1 for null) and the flexible ones (unsigned varint
//! lengths plus one, 0 for null), chosen per call by `flex`, and tagged fields.
//!
//! Decoding trusts no length. A string, byte array or array that claims more than the bytes
//! left is refused before anything is allocated, as Kafka's own readers refuse it ("tried to
//! allocate a collection of size N, but there are only M bytes remaining"). Strings and byte
//! arrays are split off the request buffer without copying when it is a `Bytes`, so record
//! data in Produce and Fetch stays zero-copy.

use std::collections::BTreeMap;
use std::iter::Peekable;

use anyhow::{bail, Result};
use bytes::{Buf, BufMut, Bytes};
use kafka_protocol::protocol::StrBytes;

pub use crate::wire::{
    get_bool, get_f64, get_int, get_uuid, get_uvarint, put_bool, put_f64, put_int, put_uuid,
    put_uvarint, uvarint_size,
};

/// Refuses a version outside the message's range before any byte is read or written.
pub fn check_version(message: &str, version: i16, min: i16, max: i16) -> Result<()> {
    if version < min || version > max {
        bail!("{message} has versions {min}-{max}, not {version}");
    }
    Ok(())
}

/// A length or count as written: `None` is null.
fn put_length<B: BufMut>(buf: &mut B, len: Option<usize>, flex: bool, short: bool) -> Result<()> {
    if flex {
        match len {
            None => put_uvarint(buf, 0),
            Some(n) => match u32::try_from(n).ok().and_then(|n| n.checked_add(1)) {
                Some(n) => put_uvarint(buf, n),
                None => bail!("{n} elements cannot be encoded"),
            },
        }
    } else if short {
        match len {
            None => buf.put_i16(-1),
            Some(n) => match i16::try_from(n) {
                Ok(n) => buf.put_i16(n),
                Err(_) => bail!("a {n}-byte string is too long for a classic string"),
            },
        }
    } else {
        match len {
            None => buf.put_i32(-1),
            Some(n) => match i32::try_from(n) {
                Ok(n) => buf.put_i32(n),
                Err(_) => bail!("{n} elements cannot be encoded"),
            },
        }
    }
    Ok(())
}

fn length_size(len: Option<usize>, flex: bool, short: bool) -> usize {
    match (flex, short) {
        (true, _) => uvarint_size(len.map_or(0, |n| n as u32 + 1)),
        (false, true) => 2,
        (false, false) => 4,
    }
}

/// Reads a length or count, refusing one larger than the bytes left.
fn get_length<B: Buf>(buf: &mut B, flex: bool, short: bool, what: &str) -> Result<Option<usize>> {
    let len: i64 = if flex {
        get_uvarint(buf)? as i64 - 1
    } else if short {
        get_int::<i16, _>(buf)? as i64
    } else {
        get_int::<i32, _>(buf)? as i64
    };
    if len < 0 {
        return Ok(None);
    }
    let len = len as usize;
    if len > buf.remaining() {
        bail!(
            "{what} claims {len} with only {} bytes remaining",
            buf.remaining()
        );
    }
    Ok(Some(len))
}

pub fn put_str<B: BufMut>(buf: &mut B, v: Option<&StrBytes>, flex: bool) -> Result<()> {
    put_length(buf, v.map(|s| s.len()), flex, true)?;
    if let Some(s) = v {
        buf.put_slice(s.as_bytes());
    }
    Ok(())
}

pub fn str_size(v: Option<&StrBytes>, flex: bool) -> usize {
    length_size(v.map(|s| s.len()), flex, true) + v.map_or(0, |s| s.len())
}

pub fn get_str<B: Buf>(buf: &mut B, flex: bool) -> Result<Option<StrBytes>> {
    let Some(len) = get_length(buf, flex, true, "a string")? else {
        return Ok(None);
    };
    Ok(Some(StrBytes::from_utf8(buf.copy_to_bytes(len))?))
}

pub fn put_bytes<B: BufMut>(buf: &mut B, v: Option<&Bytes>, flex: bool) -> Result<()> {
    put_length(buf, v.map(|b| b.len()), flex, false)?;
    if let Some(b) = v {
        buf.put_slice(b);
    }
    Ok(())
}

pub fn bytes_size(v: Option<&Bytes>, flex: bool) -> usize {
    length_size(v.map(|b| b.len()), flex, false) + v.map_or(0, |b| b.len())
}

pub fn get_bytes<B: Buf>(buf: &mut B, flex: bool) -> Result<Option<Bytes>> {
    let Some(len) = get_length(buf, flex, false, "a byte array")? else {
        return Ok(None);
    };
    Ok(Some(buf.copy_to_bytes(len)))
}

pub fn put_array_len<B: BufMut>(buf: &mut B, len: Option<usize>, flex: bool) -> Result<()> {
    put_length(buf, len, flex, false)
}

pub fn array_len_size(len: Option<usize>, flex: bool) -> usize {
    length_size(len, flex, false)
}

/// An array's element count; every element takes at least one byte, so a count beyond the
/// bytes left is a lie told before any element is read.
pub fn get_array_len<B: Buf>(buf: &mut B, flex: bool) -> Result<Option<usize>> {
    get_length(buf, flex, false, "an array")
}

pub fn get_u16<B: Buf>(buf: &mut B) -> Result<u16> {
    Ok(get_int::<i16, _>(buf)? as u16)
}

pub fn put_u16<B: BufMut>(buf: &mut B, v: u16) {
    buf.put_u16(v);
}

/// A value that must be present at this version, read from a nullable encoding.
pub fn present<T>(value: Option<T>, field: &str) -> Result<T> {
    match value {
        Some(v) => Ok(v),
        None => bail!("non-nullable field {field} was serialized as null"),
    }
}

/// The fault for a field that holds a value the chosen version cannot carry.
pub fn unsupported_field(field: &str, version: i16) -> anyhow::Error {
    anyhow::anyhow!(
        "field {field} is set to a non-default value that version {version} cannot carry"
    )
}

/// One tagged field's header and body read off `buf`: its tag and exactly its bytes.
pub fn get_tagged<B: Buf>(buf: &mut B) -> Result<(u32, Bytes)> {
    let tag = get_uvarint(buf)?;
    let size = get_uvarint(buf)? as usize;
    if size > buf.remaining() {
        bail!(
            "tagged field {tag} claims {size} bytes with only {} remaining",
            buf.remaining()
        );
    }
    Ok((tag, buf.copy_to_bytes(size)))
}

/// A known tagged field's value must fill its bytes exactly.
pub fn tagged_done(tag: u32, rest: &Bytes) -> Result<()> {
    if !rest.is_empty() {
        bail!(
            "tagged field {tag} has {} bytes after its value",
            rest.len()
        );
    }
    Ok(())
}

/// Tagged fields not known to this version, kept so a message re-encodes to the same bytes.
pub type UnknownTags = BTreeMap<i32, Bytes>;
pub type UnknownTagIter<'a> = Peekable<std::collections::btree_map::Iter<'a, i32, Bytes>>;

/// Writes the unknown tagged fields whose tag is below `before` (all when `None`), so the
/// known and unknown fields together go out in ascending tag order.
pub fn put_unknown_tags<B: BufMut>(
    buf: &mut B,
    unknown: &mut UnknownTagIter<'_>,
    before: Option<u32>,
) -> Result<()> {
    while let Some((tag, _)) = unknown.peek() {
        if before.is_some_and(|b| **tag as i64 >= b as i64) {
            break;
        }
        let (tag, value) = unknown.next().expect("peeked");
        let Ok(tag) = u32::try_from(*tag) else {
            bail!("tag {tag} is negative");
        };
        put_uvarint(buf, tag);
        put_uvarint(buf, value.len() as u32);
        buf.put_slice(value);
    }
    Ok(())
}

pub fn unknown_tags_size(unknown: &UnknownTags) -> usize {
    unknown
        .iter()
        .map(|(tag, v)| uvarint_size(*tag as u32) + uvarint_size(v.len() as u32) + v.len())
        .sum()
}

/// The bytes a known tagged field takes: its tag, its size, then `size` bytes of value.
pub fn tagged_size(tag: u32, size: usize) -> usize {
    uvarint_size(tag) + uvarint_size(size as u32) + size
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use super::*;

    #[test]
    fn classic_and_compact_strings_round_trip_with_null() {
        for flex in [false, true] {
            for v in [
                None,
                Some(StrBytes::from_static_str("")),
                Some("topic".into()),
            ] {
                let mut buf = BytesMut::new();
                put_str(&mut buf, v.as_ref(), flex).unwrap();
                assert_eq!(buf.len(), str_size(v.as_ref(), flex));
                assert_eq!(get_str(&mut buf.freeze(), flex).unwrap(), v);
            }
        }
    }

    #[test]
    fn counts_beyond_the_bytes_left_are_refused_before_allocating() {
        let mut classic = BytesMut::new();
        classic.put_i32(i32::MAX);
        classic.put_slice(b"abc");
        assert!(get_array_len(&mut classic.clone().freeze(), false).is_err());
        assert!(get_bytes(&mut classic.freeze(), false).is_err());
        let mut compact = BytesMut::new();
        put_uvarint(&mut compact, 1 << 31);
        compact.put_slice(b"abc");
        assert!(get_array_len(&mut compact.clone().freeze(), true).is_err());
        assert!(get_str(&mut compact.freeze(), true).is_err());
    }

    #[test]
    fn byte_arrays_are_split_off_without_copying() {
        let mut buf = BytesMut::new();
        put_bytes(&mut buf, Some(&Bytes::from_static(b"records")), true).unwrap();
        let frame = buf.freeze();
        let start = frame.as_ptr() as usize;
        let got = get_bytes(&mut frame.clone(), true).unwrap().unwrap();
        assert_eq!(got.as_ptr() as usize, start + 1, "a view into the frame");
    }
}
