//! The flexible-version primitives of the Kafka protocol that the generated Diskless* and
//! mirror (KIP-1279) codecs use: big-endian integers, unsigned varints, compact strings and arrays, tagged fields.
//! Decoding checks every length against the bytes present.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use uuid::Uuid;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WireError {
    #[error("message ends early: {0}")]
    Truncated(&'static str),
    #[error("malformed message: {0}")]
    Malformed(&'static str),
}

pub trait WireEncode {
    fn encode(&self, buf: &mut BytesMut);
}

pub trait WireDecode: Sized {
    fn decode(buf: &mut Bytes) -> Result<Self, WireError>;
}

/// A fully populated example of a message, for round-trip tests.
#[cfg(test)]
pub trait Sample {
    fn sample(seed: i64) -> Self;
}

/// Big-endian integers of every width the schemas use.
pub trait WireInt: Sized + Copy {
    const BYTES: usize;
    fn put(self, buf: &mut BytesMut);
    fn get(buf: &mut Bytes) -> Self;
}

macro_rules! wire_int {
    ($t:ty, $put:ident, $get:ident) => {
        impl WireInt for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            fn put(self, buf: &mut BytesMut) {
                buf.$put(self);
            }
            fn get(buf: &mut Bytes) -> Self {
                buf.$get()
            }
        }
    };
}

wire_int!(i8, put_i8, get_i8);
wire_int!(i16, put_i16, get_i16);
wire_int!(i32, put_i32, get_i32);
wire_int!(i64, put_i64, get_i64);

/// No schema list comes near this; a larger count is a malformed message.
const ELEMENTS_MAX: usize = 1 << 20;

pub fn put_int<T: WireInt>(buf: &mut BytesMut, v: T) {
    v.put(buf);
}

pub fn get_int<T: WireInt>(buf: &mut Bytes) -> Result<T, WireError> {
    if buf.remaining() < T::BYTES {
        return Err(WireError::Truncated("integer"));
    }
    Ok(T::get(buf))
}

pub fn put_bool(buf: &mut BytesMut, v: bool) {
    buf.put_u8(v as u8);
}

pub fn get_bool(buf: &mut Bytes) -> Result<bool, WireError> {
    Ok(get_int::<i8>(buf)? != 0)
}

pub fn put_uuid(buf: &mut BytesMut, v: &Uuid) {
    buf.put_slice(v.as_bytes());
}

pub fn get_uuid(buf: &mut Bytes) -> Result<Uuid, WireError> {
    if buf.remaining() < 16 {
        return Err(WireError::Truncated("uuid"));
    }
    let mut bytes = [0u8; 16];
    buf.copy_to_slice(&mut bytes);
    Ok(Uuid::from_bytes(bytes))
}

pub fn put_uvarint(buf: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        buf.put_u8((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

pub fn get_uvarint(buf: &mut Bytes) -> Result<u64, WireError> {
    let mut v = 0u64;
    for shift in (0..35).step_by(7) {
        if !buf.has_remaining() {
            return Err(WireError::Truncated("varint"));
        }
        let byte = buf.get_u8();
        v |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(WireError::Malformed("varint longer than 5 bytes"))
}

pub fn put_string(buf: &mut BytesMut, v: &str) {
    put_uvarint(buf, v.len() as u64 + 1);
    buf.put_slice(v.as_bytes());
}

pub fn put_nullable_string(buf: &mut BytesMut, v: Option<&str>) {
    match v {
        Some(v) => put_string(buf, v),
        None => put_uvarint(buf, 0),
    }
}

pub fn get_nullable_string(buf: &mut Bytes) -> Result<Option<String>, WireError> {
    let n = get_uvarint(buf)? as usize;
    if n == 0 {
        return Ok(None);
    }
    let len = n - 1;
    if buf.remaining() < len {
        return Err(WireError::Truncated("string"));
    }
    let bytes = buf.split_to(len);
    String::from_utf8(bytes.to_vec())
        .map(Some)
        .map_err(|_| WireError::Malformed("string is not UTF-8"))
}

pub fn get_string(buf: &mut Bytes) -> Result<String, WireError> {
    get_nullable_string(buf)?.ok_or(WireError::Malformed("null in a non-nullable string"))
}

fn get_array_len(buf: &mut Bytes) -> Result<usize, WireError> {
    let n = get_uvarint(buf)? as usize;
    if n == 0 {
        return Err(WireError::Malformed("null in a non-nullable array"));
    }
    let len = n - 1;
    // Every element takes at least one byte; more elements than bytes is malformed.
    if len > ELEMENTS_MAX || len > buf.remaining() {
        return Err(WireError::Malformed("array longer than the message"));
    }
    Ok(len)
}

pub fn put_int_array<T: WireInt>(buf: &mut BytesMut, v: &[T]) {
    put_uvarint(buf, v.len() as u64 + 1);
    for x in v {
        x.put(buf);
    }
}

pub fn get_int_array<T: WireInt>(buf: &mut Bytes) -> Result<Vec<T>, WireError> {
    let len = get_array_len(buf)?;
    (0..len).map(|_| get_int::<T>(buf)).collect()
}

pub fn put_array<T: WireEncode>(buf: &mut BytesMut, v: &[T]) {
    put_uvarint(buf, v.len() as u64 + 1);
    for x in v {
        x.encode(buf);
    }
}

pub fn get_array<T: WireDecode>(buf: &mut Bytes) -> Result<Vec<T>, WireError> {
    let len = get_array_len(buf)?;
    (0..len).map(|_| T::decode(buf)).collect()
}

/// Strings as array elements (`[]string` fields).
impl WireEncode for String {
    fn encode(&self, buf: &mut BytesMut) {
        put_string(buf, self);
    }
}

impl WireDecode for String {
    fn decode(buf: &mut Bytes) -> Result<Self, WireError> {
        get_string(buf)
    }
}

#[cfg(test)]
impl Sample for String {
    fn sample(seed: i64) -> Self {
        format!("s{seed}")
    }
}

/// Encodes samples, decodes them back, and checks that every cut-short prefix, nothing at all
/// and garbage are refused with an error rather than a panic or a wrong message.
#[cfg(test)]
pub fn round_trip<T: WireEncode + WireDecode + Sample + PartialEq + std::fmt::Debug>() {
    for seed in [0, 1, 7, 1000] {
        let message = T::sample(seed);
        let mut buf = BytesMut::new();
        message.encode(&mut buf);
        let encoded = buf.freeze();
        let mut reading = encoded.clone();
        assert_eq!(T::decode(&mut reading).unwrap(), message);
        assert!(reading.is_empty(), "decode consumed every byte");
        for cut in 0..encoded.len() {
            let mut prefix = encoded.slice(..cut);
            assert!(
                T::decode(&mut prefix).is_err(),
                "a {cut}-byte prefix decoded"
            );
        }
    }
    assert!(T::decode(&mut Bytes::new()).is_err());
    assert!(T::decode(&mut Bytes::from_static(&[0xff; 9])).is_err());
}

pub fn put_empty_tagged_fields(buf: &mut BytesMut) {
    put_uvarint(buf, 0);
}

/// Tagged fields are optional extensions; none is defined for these messages, so all are
/// skipped.
pub fn skip_tagged_fields(buf: &mut Bytes) -> Result<(), WireError> {
    let count = get_uvarint(buf)?;
    for _ in 0..count {
        let _tag = get_uvarint(buf)?;
        let size = get_uvarint(buf)? as usize;
        if buf.remaining() < size {
            return Err(WireError::Truncated("tagged field"));
        }
        buf.advance(size);
    }
    Ok(())
}
