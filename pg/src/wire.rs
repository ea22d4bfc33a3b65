//! The I/O-free half of the protocol: cutting whole messages out of what the server sent,
//! within size limits, and turning rows and errors into Shoal's types. Fuzzed by
//! `fuzz/fuzz_targets/pg_backend.rs`: the database's bytes are as hostile as a client's.

use bytes::{Buf, Bytes, BytesMut};
use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::{DataRowBody, ErrorResponseBody, Message};

use crate::PgError;

/// One whole message from `buffer`, or None when more bytes must arrive first. A declared
/// length beyond `max_message_bytes` fails before any of it is buffered.
pub fn take_message(
    buffer: &mut BytesMut,
    max_message_bytes: usize,
) -> Result<Option<Message>, PgError> {
    if buffer.len() < 5 {
        return Ok(None);
    }
    let declared = u32::from_be_bytes([buffer[1], buffer[2], buffer[3], buffer[4]]) as usize;
    if declared < 4 {
        return Err(PgError::Protocol(format!(
            "message length {declared} is below 4"
        )));
    }
    if declared + 1 > max_message_bytes {
        return Err(PgError::MessageTooLarge {
            len: declared + 1,
            limit: max_message_bytes,
        });
    }
    if buffer.len() < declared + 1 {
        return Ok(None);
    }
    match Message::parse(buffer) {
        Ok(Some(message)) => Ok(Some(message)),
        Ok(None) => Err(PgError::Protocol("a whole message did not parse".into())),
        Err(e) => {
            // The bytes of the bad message are gone with the connection.
            buffer.advance(buffer.len());
            Err(PgError::Protocol(e.to_string()))
        }
    }
}

/// A row's columns, each in the binary format, None for NULL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    columns: Vec<Option<Bytes>>,
}

impl Row {
    pub fn from_body(body: &DataRowBody) -> Result<Row, PgError> {
        let buffer = body.buffer_bytes();
        let mut columns = Vec::new();
        let mut ranges = body.ranges();
        while let Some(range) = ranges
            .next()
            .map_err(|e| PgError::Protocol(format!("data row: {e}")))?
        {
            columns.push(match range {
                Some(range) if range.end <= buffer.len() => Some(buffer.slice(range)),
                Some(_) => return Err(PgError::Protocol("data row column out of bounds".into())),
                None => None,
            });
        }
        Ok(Row { columns })
    }

    pub fn len(&self) -> usize {
        self.columns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// The column's raw bytes; None for NULL.
    pub fn bytes(&self, column: usize) -> Result<Option<&Bytes>, PgError> {
        self.columns
            .get(column)
            .map(Option::as_ref)
            .ok_or_else(|| PgError::Column {
                column,
                problem: format!("the row has {} columns", self.columns.len()),
            })
    }

    /// A non-NULL bigint, int or smallint column.
    pub fn i64(&self, column: usize) -> Result<i64, PgError> {
        let bytes = self.not_null(column)?;
        match bytes.len() {
            8 => Ok(i64::from_be_bytes(bytes[..8].try_into().expect("8 bytes"))),
            4 => Ok(i32::from_be_bytes(bytes[..4].try_into().expect("4 bytes")) as i64),
            2 => Ok(i16::from_be_bytes(bytes[..2].try_into().expect("2 bytes")) as i64),
            n => Err(PgError::Column {
                column,
                problem: format!("{n} bytes are no integer"),
            }),
        }
    }

    /// A non-NULL text column.
    pub fn text(&self, column: usize) -> Result<&str, PgError> {
        std::str::from_utf8(self.not_null(column)?).map_err(|e| PgError::Column {
            column,
            problem: e.to_string(),
        })
    }

    fn not_null(&self, column: usize) -> Result<&Bytes, PgError> {
        self.bytes(column)?.ok_or(PgError::Column {
            column,
            problem: "NULL".into(),
        })
    }
}

/// A query parameter, sent in the binary format with its type.
#[derive(Clone, Copy, Debug)]
pub enum Param<'a> {
    I64(i64),
    I32(i32),
    Bool(bool),
    Text(&'a str),
    Bytes(&'a [u8]),
    Null,
}

impl Param<'_> {
    /// The type's OID (int8, int4, bool, text, bytea; 0 lets the server decide for NULL).
    pub fn type_oid(&self) -> u32 {
        match self {
            Param::I64(_) => 20,
            Param::I32(_) => 23,
            Param::Bool(_) => 16,
            Param::Text(_) => 25,
            Param::Bytes(_) => 17,
            Param::Null => 0,
        }
    }

    pub fn encode(&self, out: &mut BytesMut) -> postgres_protocol::IsNull {
        use bytes::BufMut;
        match self {
            Param::I64(v) => out.put_i64(*v),
            Param::I32(v) => out.put_i32(*v),
            Param::Bool(v) => out.put_u8(*v as u8),
            Param::Text(v) => out.extend_from_slice(v.as_bytes()),
            Param::Bytes(v) => out.extend_from_slice(v),
            Param::Null => return postgres_protocol::IsNull::Yes,
        }
        postgres_protocol::IsNull::No
    }
}

/// The server's error as a PgError, with its SQLSTATE.
pub fn server_error(body: &ErrorResponseBody) -> PgError {
    let (mut severity, mut code, mut message, mut detail) =
        (String::new(), String::new(), String::new(), String::new());
    let mut fields = body.fields();
    while let Ok(Some(field)) = fields.next() {
        let value = String::from_utf8_lossy(field.value_bytes()).into_owned();
        match field.type_() {
            b'V' => severity = value,
            b'S' if severity.is_empty() => severity = value,
            b'C' => code = value,
            b'M' => message = value,
            b'D' => detail = format!(": {value}"),
            _ => {}
        }
    }
    PgError::Server {
        severity,
        code,
        message,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn messages_are_taken_whole_and_only_when_complete() {
        let ready = frame(b'Z', b"I");
        let mut buffer = BytesMut::from(&ready[..3]);
        assert!(take_message(&mut buffer, 1 << 20).unwrap().is_none());
        buffer.extend_from_slice(&ready[3..]);
        assert!(matches!(
            take_message(&mut buffer, 1 << 20).unwrap(),
            Some(Message::ReadyForQuery(_))
        ));
        assert!(buffer.is_empty());
    }

    #[test]
    fn a_declared_length_past_the_limit_fails_before_buffering() {
        let mut buffer = BytesMut::from(&[b'D', 0x7f, 0xff, 0xff, 0xff][..]);
        assert!(matches!(
            take_message(&mut buffer, 1 << 20),
            Err(PgError::MessageTooLarge { .. })
        ));
        let mut short = BytesMut::from(&[b'D', 0, 0, 0, 3][..]);
        assert!(matches!(
            take_message(&mut short, 1 << 20),
            Err(PgError::Protocol(_))
        ));
    }

    #[test]
    fn rows_decode_binary_integers_text_and_nulls() {
        let mut body = 3u16.to_be_bytes().to_vec();
        body.extend_from_slice(&8i32.to_be_bytes());
        body.extend_from_slice(&42i64.to_be_bytes());
        body.extend_from_slice(&2i32.to_be_bytes());
        body.extend_from_slice(b"hi");
        body.extend_from_slice(&(-1i32).to_be_bytes());
        let mut buffer = BytesMut::from(&frame(b'D', &body)[..]);
        let Some(Message::DataRow(row)) = take_message(&mut buffer, 1 << 20).unwrap() else {
            panic!("a data row");
        };
        let row = Row::from_body(&row).unwrap();
        assert_eq!(row.i64(0).unwrap(), 42);
        assert_eq!(row.text(1).unwrap(), "hi");
        assert!(row.bytes(2).unwrap().is_none());
        assert!(row.i64(2).is_err(), "NULL is no integer");
        assert!(row.bytes(3).is_err(), "no fourth column");
    }

    #[test]
    fn server_errors_keep_their_sqlstate() {
        let body = b"SERROR\0VERROR\0C40001\0Mcould not serialize access\0\0";
        let mut buffer = BytesMut::from(&frame(b'E', body)[..]);
        let Some(Message::ErrorResponse(e)) = take_message(&mut buffer, 1 << 20).unwrap() else {
            panic!("an error response");
        };
        let error = server_error(&e);
        assert_eq!(error.code(), Some("40001"));
        assert!(error.is_transient());
        assert!(error.to_string().contains("could not serialize access"));
    }
}
