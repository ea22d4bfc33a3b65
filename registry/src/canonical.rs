//! The form a JSON-written schema (Avro, JSON Schema) is stored and compared in: the client's
//! text checked to be JSON and stripped of the whitespace between tokens, key order and number
//! spelling kept, so that the same schema sent twice, however indented, gets one id.

use crate::RegistryError;

/// Arrays and objects nested deeper than this are refused: a schema is read by recursive
/// parsers (ours and every client's), and no real schema comes near it.
pub const MAX_NESTING: usize = 64;

/// `text` without insignificant whitespace; an error when it is not one JSON value or nests
/// deeper than `MAX_NESTING`.
pub fn compact_json(text: &str) -> Result<String, RegistryError> {
    let invalid = |why: String| RegistryError::InvalidSchema(format!("{text}, details: {why}"));
    // A full parse first: the scan below assumes valid JSON.
    serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|e| invalid(e.to_string()))?;
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut depth = 0usize;
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            match c {
                '[' | '{' => depth += 1,
                ']' | '}' => depth -= 1,
                _ => {}
            }
            if depth > MAX_NESTING {
                return Err(invalid(format!("nested deeper than {MAX_NESTING}")));
            }
            out.push(c);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_between_tokens_goes_and_strings_keep_theirs() {
        let text = "{ \"type\" : \"record\",\n  \"doc\": \"a \\\" b\\\\\",\"fields\" : [ 1.50 ] }";
        assert_eq!(
            compact_json(text).unwrap(),
            "{\"type\":\"record\",\"doc\":\"a \\\" b\\\\\",\"fields\":[1.50]}"
        );
    }

    #[test]
    fn what_is_not_json_is_an_invalid_schema() {
        assert!(matches!(
            compact_json("{\"type\": "),
            Err(RegistryError::InvalidSchema(_))
        ));
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        assert!(compact_json(&deep).is_err());
    }
}
