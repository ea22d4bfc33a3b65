//! The JSON the registry's routes take and give: a schema as clients send it, and a stored
//! schema or version as Confluent's registry shows it (`schemaType` only when not Avro,
//! `references` only when there are some).

use serde::Deserialize;
use serde_json::{json, Map, Value};
use shoal_coordinator::commands::VersionView;
use shoal_coordinator::state::schema_registry::StoredSchema;
use shoal_registry::{ParsedSchema, RegistryError, SchemaReference, SchemaType};

use super::http::Request;

/// `POST /subjects/{subject}/versions`, `POST /subjects/{subject}` and the compatibility
/// routes' body.
#[derive(Debug, Deserialize)]
pub struct SchemaBody {
    pub schema: String,
    #[serde(rename = "schemaType")]
    pub schema_type: Option<String>,
    #[serde(default)]
    pub references: Vec<ReferenceBody>,
    /// IMPORT mode: the id to keep.
    pub id: Option<i32>,
    /// IMPORT mode: the version to keep.
    pub version: Option<i32>,
}

#[derive(Debug, Deserialize)]
pub struct ReferenceBody {
    pub name: String,
    pub subject: String,
    pub version: i32,
}

impl SchemaBody {
    pub fn parse(body: &[u8]) -> Result<SchemaBody, RegistryError> {
        serde_json::from_slice(body).map_err(|e| RegistryError::BadRequest(e.to_string()))
    }

    /// The schema in its stored form; `max_bytes` bounds its text.
    pub fn stored(&self, max_bytes: usize) -> Result<StoredSchema, RegistryError> {
        if self.schema.len() > max_bytes {
            return Err(RegistryError::SchemaTooLarge(format!(
                "Schema of {} bytes is over the limit of {max_bytes} bytes",
                self.schema.len()
            )));
        }
        let schema_type = SchemaType::parse(self.schema_type.as_deref())?;
        for r in &self.references {
            shoal_registry::check_subject(&r.subject)?;
        }
        Ok(StoredSchema {
            schema_type,
            text: ParsedSchema::canonical_text(schema_type, &self.schema)?.into(),
            references: self
                .references
                .iter()
                .map(|r| SchemaReference {
                    name: r.name.clone(),
                    subject: r.subject.clone(),
                    version: r.version,
                })
                .collect(),
        })
    }
}

/// A body's `{"compatibility": ...}` or `{"mode": ...}`.
pub fn setting_value(body: &[u8], key: &str) -> Result<String, RegistryError> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| RegistryError::BadRequest(e.to_string()))?;
    value
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| RegistryError::BadRequest(format!("the body has no \"{key}\"")))
}

/// A schema's text as `?format=` asks for it: `serialized` answers a Protobuf schema as a
/// base64 `FileDescriptorProto` (what confluent-kafka's Python deserializer reads); other
/// formats and types answer the stored text.
pub fn schema_text(schema: &StoredSchema, request: &Request) -> Result<String, RegistryError> {
    let serialized = request
        .query
        .get("format")
        .is_some_and(|f| f.eq_ignore_ascii_case("serialized"));
    if serialized && schema.schema_type == SchemaType::Protobuf {
        shoal_registry::protobuf::serialized(&schema.text)
    } else {
        Ok(schema.text.to_string())
    }
}

/// The fields every view of a schema has: schema, schemaType, references.
fn schema_fields(
    schema: &StoredSchema,
    request: &Request,
    out: &mut Map<String, Value>,
) -> Result<(), RegistryError> {
    if schema.schema_type != SchemaType::Avro {
        out.insert("schemaType".into(), json!(schema.schema_type.name()));
    }
    if !schema.references.is_empty() {
        let references: Vec<Value> = schema
            .references
            .iter()
            .map(|r| json!({"name": r.name, "subject": r.subject, "version": r.version}))
            .collect();
        out.insert("references".into(), Value::Array(references));
    }
    out.insert("schema".into(), json!(schema_text(schema, request)?));
    Ok(())
}

/// `GET /schemas/ids/{id}`.
pub fn schema_json(schema: &StoredSchema, request: &Request) -> Result<Value, RegistryError> {
    let mut out = Map::new();
    schema_fields(schema, request, &mut out)?;
    Ok(Value::Object(out))
}

/// A subject's version.
pub fn version_json(view: &VersionView, request: &Request) -> Result<Value, RegistryError> {
    let mut out = Map::new();
    out.insert("subject".into(), json!(view.subject));
    out.insert("version".into(), json!(view.version));
    out.insert("id".into(), json!(view.id));
    schema_fields(&view.schema, request, &mut out)?;
    Ok(Value::Object(out))
}
