//! Confluent's wire format for a serialized key or value: magic byte 0, the schema's id in 4
//! bytes (big-endian), then the data. The one place that knows that prefix.

/// The schema id `bytes` start with, when they are in the wire format.
pub fn schema_id(bytes: Option<&[u8]>) -> Option<i32> {
    match bytes? {
        [0, a, b, c, d, ..] => Some(i32::from_be_bytes([*a, *b, *c, *d])),
        _ => None,
    }
}

/// The data after the prefix, when `bytes` are in the wire format.
pub fn data(bytes: &[u8]) -> Option<&[u8]> {
    schema_id(Some(bytes)).map(|_| &bytes[PREFIX_BYTES..])
}

const PREFIX_BYTES: usize = 5;

/// The prefix a serializer writes before data of schema `id`.
pub fn prefix(id: i32) -> [u8; 5] {
    let [a, b, c, d] = id.to_be_bytes();
    [0, a, b, c, d]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_is_magic_zero_and_four_bytes() {
        assert_eq!(schema_id(Some(&[0, 0, 0, 1, 7, 9])), Some(263));
        assert_eq!(schema_id(Some(&prefix(3))), Some(3));
        assert_eq!(schema_id(Some(&[1, 0, 0, 0, 3])), None);
        assert_eq!(schema_id(Some(&[0, 0, 0])), None);
        assert_eq!(schema_id(None), None);
        assert_eq!(data(&[0, 0, 0, 0, 1, 42]), Some(&[42u8][..]));
    }
}
