//! The name a schema gives its record, which RecordNameStrategy and TopicRecordNameStrategy
//! make subjects of: an Avro named type's full name, a JSON Schema's `title`, a Protobuf
//! file's first message's full name (the message Confluent's registry names the schema by).

use crate::SchemaType;

/// The record name of a stored schema's text; None when the schema has none (an Avro
/// primitive, a JSON Schema without a title, a Protobuf file without messages).
pub fn record_name(schema_type: SchemaType, text: &str) -> Option<String> {
    if schema_type == SchemaType::Protobuf {
        let file = protox_parse::parse("record.proto", text).ok()?;
        let message = file.message_type.first()?.name();
        return Some(match file.package.as_deref() {
            Some(package) if !package.is_empty() => format!("{package}.{message}"),
            _ => message.to_string(),
        });
    }
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    match schema_type {
        SchemaType::Avro => {
            let name = value.get("name")?.as_str()?;
            if name.contains('.') {
                return Some(name.to_string());
            }
            match value.get("namespace").and_then(|n| n.as_str()) {
                Some(namespace) if !namespace.is_empty() => Some(format!("{namespace}.{name}")),
                _ => Some(name.to_string()),
            }
        }
        SchemaType::Json => value.get("title")?.as_str().map(str::to_string),
        SchemaType::Protobuf => None, // answered above
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_names() {
        let avro = r#"{"type":"record","name":"User","namespace":"a.b","fields":[]}"#;
        assert_eq!(
            record_name(SchemaType::Avro, avro).as_deref(),
            Some("a.b.User")
        );
        let dotted = r#"{"type":"record","name":"x.User","namespace":"a.b","fields":[]}"#;
        assert_eq!(
            record_name(SchemaType::Avro, dotted).as_deref(),
            Some("x.User")
        );
        assert_eq!(record_name(SchemaType::Avro, "\"int\""), None);
        let json = r#"{"title":"Event","type":"object"}"#;
        assert_eq!(
            record_name(SchemaType::Json, json).as_deref(),
            Some("Event")
        );
        let proto = "syntax = \"proto3\"; package shop; message Order {} message Line {}";
        assert_eq!(
            record_name(SchemaType::Protobuf, proto).as_deref(),
            Some("shop.Order")
        );
    }
}
