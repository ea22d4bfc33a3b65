//! Records as one JSON object a line, the form `shoal consume --format json` prints and
//! `shoal produce --input json` reads: keys, values and header values are JSON strings when
//! they are UTF-8 and `{"base64": "..."}` when not, so any bytes round-trip.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde_json::{json, Value};

/// Bytes (or null) as JSON.
pub fn bytes_to_json(bytes: Option<&[u8]>) -> Value {
    match bytes.map(std::str::from_utf8) {
        None => Value::Null,
        Some(Ok(text)) => Value::String(text.to_string()),
        Some(Err(_)) => json!({"base64": BASE64.encode(bytes.unwrap_or_default())}),
    }
}

/// JSON as bytes (or null): a string, `{"base64": ...}` or null.
pub fn bytes_from_json(value: &Value, what: &str) -> Result<Option<Vec<u8>>, String> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) => Ok(Some(text.clone().into_bytes())),
        Value::Object(o) => match o.get("base64") {
            Some(Value::String(encoded)) => BASE64
                .decode(encoded)
                .map(Some)
                .map_err(|e| format!("{what}: not base64: {e}")),
            _ => Err(format!("{what}: an object must be {{\"base64\": \"...\"}}")),
        },
        _ => Err(format!("{what}: a string, {{\"base64\": ...}} or null")),
    }
}

/// A record to produce, as read from a line.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RecordToSend {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    pub partition: Option<i32>,
}

impl RecordToSend {
    /// A JSON line: `{"key": .., "value": .., "headers": [{"key": .., "value": ..}],
    /// "partition": n}`, every field optional; other fields (offset, timestamp) are ignored.
    pub fn from_json_line(line: &[u8]) -> Result<RecordToSend, String> {
        let object: Value = serde_json::from_slice(line).map_err(|e| {
            // The input is one line: its column is the place, serde's "line 1" is noise.
            let message = e.to_string();
            let message = message.split(" at line ").next().unwrap_or_default();
            format!("not JSON: {message} at column {}", e.column())
        })?;
        let Value::Object(fields) = object else {
            return Err("a line must be a JSON object".into());
        };
        let field = |name: &str| fields.get(name).unwrap_or(&Value::Null);
        let mut headers = Vec::new();
        match field("headers") {
            Value::Null => {}
            Value::Array(list) => {
                for header in list {
                    let name = bytes_from_json(&header["key"], "a header's key")?
                        .ok_or("a header's key may not be null")?;
                    headers.push((name, bytes_from_json(&header["value"], "a header's value")?));
                }
            }
            _ => return Err("headers: a list of {\"key\": .., \"value\": ..}".into()),
        }
        let partition = match field("partition") {
            Value::Null => None,
            p => Some(
                p.as_i64()
                    .and_then(|p| i32::try_from(p).ok())
                    .ok_or("partition: a number")?,
            ),
        };
        Ok(RecordToSend {
            key: bytes_from_json(field("key"), "key")?,
            value: bytes_from_json(field("value"), "value")?,
            headers,
            partition,
        })
    }

    /// Bytes this record adds to a batch, about.
    pub fn size(&self) -> usize {
        let len = |b: &Option<Vec<u8>>| b.as_ref().map_or(0, Vec::len);
        let headers: usize = self.headers.iter().map(|(k, v)| k.len() + len(v)).sum();
        len(&self.key) + len(&self.value) + headers + 16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_that_are_not_utf8_round_trip_as_base64() {
        for bytes in [None, Some(&b"text"[..]), Some(&[0xff, 0x00, 0xc3][..])] {
            let json = bytes_to_json(bytes);
            let back = bytes_from_json(&json, "value").unwrap();
            assert_eq!(back.as_deref(), bytes);
        }
    }

    #[test]
    fn a_json_line_gives_key_value_headers_and_partition() {
        let line = br#"{"key":"k","value":{"base64":"/w=="},"headers":[{"key":"h","value":null}],"partition":2,"offset":9}"#;
        let record = RecordToSend::from_json_line(line).unwrap();
        assert_eq!(
            record,
            RecordToSend {
                key: Some(b"k".to_vec()),
                value: Some(vec![0xff]),
                headers: vec![(b"h".to_vec(), None)],
                partition: Some(2),
            }
        );
        assert!(RecordToSend::from_json_line(b"[1]").is_err());
        assert!(RecordToSend::from_json_line(br#"{"headers":[{"value":"x"}]}"#).is_err());
    }
}
