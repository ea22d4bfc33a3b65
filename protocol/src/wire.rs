//! The flexible-version primitives the generated Diskless* and mirror codecs are written in:
//! big-endian integers, unsigned varints, compact strings and arrays, tagged fields.
//!
//! Decoding trusts no length: a string or array that claims more than the bytes left is an
//! error before anything is allocated (every array element takes at least one byte).

use anyhow::{bail, Result};
use bytes::{Buf, BufMut};
use uuid::Uuid;

/// Big-endian integers of every width the schemas use.
pub trait WireInt: Sized + Copy {
    const BYTES: usize;
    fn put<B: BufMut>(self, buf: &mut B);
    fn get<B: Buf>(buf: &mut B) -> Self;
}

macro_rules! wire_int {
    ($t:ty, $put:ident, $get:ident) => {
        impl WireInt for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            fn put<B: BufMut>(self, buf: &mut B) {
                buf.$put(self);
            }
            fn get<B: Buf>(buf: &mut B) -> Self {
                buf.$get()
            }
        }
    };
}

wire_int!(i8, put_i8, get_i8);
wire_int!(i16, put_i16, get_i16);
wire_int!(i32, put_i32, get_i32);
wire_int!(i64, put_i64, get_i64);

/// Shoal's own messages exist only in version 0.
pub fn check_version(message: &str, version: i16) -> Result<()> {
    if version != 0 {
        bail!("{message} has only version 0, not {version}");
    }
    Ok(())
}

pub fn put_int<T: WireInt, B: BufMut>(buf: &mut B, v: T) {
    v.put(buf);
}

pub fn get_int<T: WireInt, B: Buf>(buf: &mut B) -> Result<T> {
    if buf.remaining() < T::BYTES {
        bail!("message ends inside an integer");
    }
    Ok(T::get(buf))
}

pub fn put_bool<B: BufMut>(buf: &mut B, v: bool) {
    buf.put_u8(v as u8);
}

pub fn get_bool<B: Buf>(buf: &mut B) -> Result<bool> {
    Ok(get_int::<i8, B>(buf)? != 0)
}

pub fn put_f64<B: BufMut>(buf: &mut B, v: f64) {
    buf.put_f64(v);
}

pub fn get_f64<B: Buf>(buf: &mut B) -> Result<f64> {
    if buf.remaining() < 8 {
        bail!("message ends inside a float64");
    }
    Ok(buf.get_f64())
}

pub fn put_uuid<B: BufMut>(buf: &mut B, v: &Uuid) {
    buf.put_slice(v.as_bytes());
}

pub fn get_uuid<B: Buf>(buf: &mut B) -> Result<Uuid> {
    if buf.remaining() < 16 {
        bail!("message ends inside a uuid");
    }
    let mut bytes = [0u8; 16];
    buf.copy_to_slice(&mut bytes);
    Ok(Uuid::from_bytes(bytes))
}

pub fn put_uvarint<B: BufMut>(buf: &mut B, mut v: u32) {
    while v >= 0x80 {
        buf.put_u8((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

pub fn uvarint_size(v: u32) -> usize {
    match v {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        0x4000..=0x1f_ffff => 3,
        0x20_0000..=0xfff_ffff => 4,
        _ => 5,
    }
}

pub fn get_uvarint<B: Buf>(buf: &mut B) -> Result<u32> {
    let mut v = 0u32;
    for shift in (0..35).step_by(7) {
        if !buf.has_remaining() {
            bail!("message ends inside a varint");
        }
        let byte = buf.get_u8();
        if shift == 28 && byte > 0x0f {
            bail!("varint overflows 32 bits");
        }
        v |= ((byte & 0x7f) as u32) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    bail!("varint longer than 5 bytes")
}

/// A compact length: the value written is `len + 1` (0 means null).
fn put_compact_len<B: BufMut>(buf: &mut B, len: usize) -> Result<()> {
    let Ok(n) = u32::try_from(len + 1) else {
        bail!("{len} elements cannot be encoded");
    };
    put_uvarint(buf, n);
    Ok(())
}

pub fn put_string<B: BufMut>(buf: &mut B, v: &str) -> Result<()> {
    put_compact_len(buf, v.len())?;
    buf.put_slice(v.as_bytes());
    Ok(())
}

pub fn put_nullable_string<B: BufMut>(buf: &mut B, v: Option<&str>) -> Result<()> {
    match v {
        Some(v) => put_string(buf, v),
        None => {
            put_uvarint(buf, 0);
            Ok(())
        }
    }
}

pub fn put_bytes<B: BufMut>(buf: &mut B, v: &[u8]) -> Result<()> {
    put_compact_len(buf, v.len())?;
    buf.put_slice(v);
    Ok(())
}

pub fn bytes_size(v: &[u8]) -> usize {
    uvarint_size(v.len() as u32 + 1) + v.len()
}

pub fn get_bytes<B: Buf>(buf: &mut B) -> Result<Vec<u8>> {
    let n = get_uvarint(buf)? as usize;
    if n == 0 {
        bail!("null in non-nullable bytes");
    }
    let len = n - 1;
    if buf.remaining() < len {
        bail!("{len} bytes claimed with {} left", buf.remaining());
    }
    let mut bytes = vec![0u8; len];
    buf.copy_to_slice(&mut bytes);
    Ok(bytes)
}

pub fn string_size(v: &str) -> usize {
    uvarint_size(v.len() as u32 + 1) + v.len()
}

pub fn nullable_string_size(v: Option<&str>) -> usize {
    v.map_or(1, string_size)
}

pub fn get_nullable_string<B: Buf>(buf: &mut B) -> Result<Option<String>> {
    let n = get_uvarint(buf)? as usize;
    if n == 0 {
        return Ok(None);
    }
    let len = n - 1;
    if buf.remaining() < len {
        bail!(
            "a {len}-byte string claims more than the {} bytes left",
            buf.remaining()
        );
    }
    let mut bytes = vec![0u8; len];
    buf.copy_to_slice(&mut bytes);
    Ok(Some(String::from_utf8(bytes)?))
}

pub fn get_string<B: Buf>(buf: &mut B) -> Result<String> {
    match get_nullable_string(buf)? {
        Some(s) => Ok(s),
        None => bail!("null in a non-nullable string"),
    }
}

pub fn put_array<B: BufMut, T>(
    buf: &mut B,
    items: &[T],
    mut put: impl FnMut(&mut B, &T) -> Result<()>,
) -> Result<()> {
    put_compact_len(buf, items.len())?;
    for item in items {
        put(buf, item)?;
    }
    Ok(())
}

pub fn array_size<T>(items: &[T], size: impl Fn(&T) -> Result<usize>) -> Result<usize> {
    let mut total = uvarint_size(items.len() as u32 + 1);
    for item in items {
        total += size(item)?;
    }
    Ok(total)
}

pub fn get_array<B: Buf, T>(
    buf: &mut B,
    mut element: impl FnMut(&mut B) -> Result<T>,
) -> Result<Vec<T>> {
    let n = get_uvarint(buf)? as usize;
    if n == 0 {
        bail!("null in a non-nullable array");
    }
    let len = n - 1;
    // Every element takes at least one byte: more elements than bytes is a lie.
    if len > buf.remaining() {
        bail!(
            "an array of {len} claims more than the {} bytes left",
            buf.remaining()
        );
    }
    let mut items = Vec::with_capacity(len);
    for _ in 0..len {
        items.push(element(buf)?);
    }
    Ok(items)
}

pub fn put_no_tagged_fields<B: BufMut>(buf: &mut B) {
    put_uvarint(buf, 0);
}

/// Reads the tagged fields: each known one is decoded by `field` from exactly its bytes
/// (`field` answers false for a tag it does not know, which is skipped, as Kafka's readers
/// skip what a newer writer added).
pub fn get_tagged_fields<B: Buf>(
    buf: &mut B,
    mut field: impl FnMut(u32, &mut bytes::Bytes) -> Result<bool>,
) -> Result<()> {
    let count = get_uvarint(buf)?;
    for _ in 0..count {
        let tag = get_uvarint(buf)?;
        let size = get_uvarint(buf)? as usize;
        if buf.remaining() < size {
            bail!("a {size}-byte tagged field claims more than the bytes left");
        }
        let mut bytes = buf.copy_to_bytes(size);
        if field(tag, &mut bytes)? && bytes.has_remaining() {
            bail!(
                "tagged field {tag} has {} bytes after its value",
                bytes.remaining()
            );
        }
    }
    Ok(())
}

/// Tagged fields are optional extensions; a message that defines none skips any a newer
/// peer sends, as Kafka's readers do.
pub fn skip_tagged_fields<B: Buf>(buf: &mut B) -> Result<()> {
    let count = get_uvarint(buf)?;
    for _ in 0..count {
        let _tag = get_uvarint(buf)?;
        let size = get_uvarint(buf)? as usize;
        if buf.remaining() < size {
            bail!("a {size}-byte tagged field claims more than the bytes left");
        }
        buf.advance(size);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use bytes::{Bytes, BytesMut};

    use super::*;

    #[test]
    fn varints_round_trip_and_refuse_overlong_encodings() {
        for v in [0, 1, 127, 128, 16_383, 16_384, u32::MAX] {
            let mut buf = BytesMut::new();
            put_uvarint(&mut buf, v);
            assert_eq!(buf.len(), uvarint_size(v));
            assert_eq!(get_uvarint(&mut buf.freeze()).unwrap(), v);
        }
        assert!(get_uvarint(&mut Bytes::from_static(&[0xff; 5])).is_err());
        assert!(get_uvarint(&mut Bytes::from_static(&[0x80; 6])).is_err());
    }

    #[test]
    fn lengths_beyond_the_message_are_refused_before_allocating() {
        // A string and an array each claiming 2^31 elements, followed by 3 bytes.
        let mut claim = BytesMut::new();
        put_uvarint(&mut claim, 1 << 31);
        claim.extend_from_slice(b"abc");
        let claim = claim.freeze();
        assert!(get_nullable_string(&mut claim.clone()).is_err());
        assert!(get_array(&mut claim.clone(), get_int::<i32, _>).is_err());
    }
}
