//! The schemas a table's records name by id (Confluent's wire format), asked of the schema
//! registry: the broker's own, or `[iceberg] schema_registry_url`. An id never changes what it
//! stands for, so each is asked once for the writer's life.

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;
use shoal_cli::registry_client::{encode, Registry};
use shoal_cli::AdminError;
use shoal_iceberg::avro_columns::Names;
use shoal_iceberg::avro_unions;
use shoal_iceberg::json_columns::Documents;
use shoal_registry::reference::{REFERENCES_MAX_DEFAULT, REFERENCE_DEPTH_MAX_DEFAULT};
use shoal_registry::Referenced;

use super::registry_access::RegistryAccess;

/// An Avro schema ready to decode with: the schema and those it refers to.
pub struct AvroValueSchema {
    pub schema: apache_avro::Schema,
    pub referenced: Vec<apache_avro::Schema>,
    /// Whether it has unions of several types, whose values are rewritten as their struct
    /// columns hold them (`avro_unions::tag_unions`) before they are shredded.
    pub tagged_unions: bool,
}

impl AvroValueSchema {
    /// The named types the schema and those it refers to define.
    pub fn names(&self) -> Names<'_> {
        Names::of(std::iter::once(&self.schema).chain(&self.referenced))
    }
}

/// A JSON Schema and those its references name (by the names the references give).
pub struct JsonValueSchema {
    pub schema: Value,
    pub referenced: Vec<(String, Value)>,
}

impl JsonValueSchema {
    pub fn documents(&self) -> Documents<'_> {
        Documents {
            schema: &self.schema,
            referenced: &self.referenced,
        }
    }
}

/// What an id stands for, as far as the table is concerned.
#[derive(Clone)]
pub enum Lookup {
    Avro(Rc<AvroValueSchema>),
    Json(Rc<JsonValueSchema>),
    /// A Protobuf file (its imports compiled in).
    Protobuf(Rc<prost_reflect::FileDescriptor>),
    /// Records with this id cannot become columns, and why.
    Refused(String),
}

pub struct ValueSchemas {
    registry: Option<Registry>,
    known: HashMap<i32, Lookup>,
}

impl ValueSchemas {
    /// Schemas from the registry `access` names; none (every table keeps values as bytes)
    /// without.
    pub fn new(access: Option<&RegistryAccess>) -> Result<ValueSchemas, String> {
        let registry = match access {
            Some(access) => {
                let registry = Registry::at(&access.url, access.ca_file.as_deref())
                    .map_err(|e| e.to_string())?;
                Some(match &access.user_info {
                    Some(user_info) => registry.with_user_info(user_info),
                    None => registry,
                })
            }
            None => None,
        };
        Ok(ValueSchemas {
            registry,
            known: HashMap::new(),
        })
    }

    pub fn has_registry(&self) -> bool {
        self.registry.is_some()
    }

    /// What `id` stands for; Err when the registry could not be asked (try again later).
    pub fn lookup(&mut self, id: i32) -> Result<Lookup, String> {
        if let Some(known) = self.known.get(&id) {
            return Ok(known.clone());
        }
        let Some(registry) = &self.registry else {
            return Ok(Lookup::Refused("no schema registry to ask".into()));
        };
        let answer = match registry.call("GET", &format!("/schemas/ids/{id}"), None) {
            Ok(answer) => answer,
            // Not remembered: it may be registered again, or the id may come from elsewhere.
            Err(AdminError::Registry { status: 404, .. }) => {
                return Ok(Lookup::Refused(format!("schema id {id} is not registered")))
            }
            Err(error) => return Err(format!("the schema registry: {error}")),
        };
        let lookup = match answer["schemaType"].as_str().unwrap_or("AVRO") {
            "AVRO" => avro_schema(registry, &answer)?,
            "JSON" => json_schema(registry, id, &answer)?,
            "PROTOBUF" => protobuf_schema(registry, &answer)?,
            other => Lookup::Refused(format!("schema id {id} is of an unknown type {other}")),
        };
        self.known.insert(id, lookup.clone());
        Ok(lookup)
    }
}

/// An Avro schema from the registry's answer, with the schemas its references name.
fn avro_schema(registry: &Registry, answer: &Value) -> Result<Lookup, String> {
    let text = answer["schema"].as_str().unwrap_or_default();
    let mut referenced = Vec::new();
    referenced_schemas(registry, &answer["references"], 0, &mut referenced)?;
    let texts: Vec<&str> = referenced.iter().map(|(_, text)| text.as_str()).collect();
    Ok(
        match shoal_registry::avro::parse_with_referenced(text, &texts) {
            Ok((schema, referenced)) => {
                let mut avro = AvroValueSchema {
                    schema,
                    referenced,
                    tagged_unions: false,
                };
                avro.tagged_unions = avro_unions::has_tagged_unions(&avro.schema, &avro.names());
                Lookup::Avro(Rc::new(avro))
            }
            Err(error) => Lookup::Refused(error.to_string()),
        },
    )
}

/// A Protobuf schema from the registry's answer, with the files it imports.
fn protobuf_schema(registry: &Registry, answer: &Value) -> Result<Lookup, String> {
    let text = answer["schema"].as_str().unwrap_or_default();
    let mut referenced = Vec::new();
    referenced_schemas(registry, &answer["references"], 0, &mut referenced)?;
    let imports: Vec<Referenced<'_>> = (referenced.iter())
        .map(|(name, text)| Referenced { name, text })
        .collect();
    Ok(match shoal_registry::protobuf::parse(text, &imports) {
        Ok(file) => Lookup::Protobuf(Rc::new(file)),
        Err(error) => Lookup::Refused(error.to_string()),
    })
}

/// A JSON Schema from the registry's answer, with the schemas its references name.
fn json_schema(registry: &Registry, id: i32, answer: &Value) -> Result<Lookup, String> {
    let mut texts = Vec::new();
    referenced_schemas(registry, &answer["references"], 0, &mut texts)?;
    let parse = |text: &str| serde_json::from_str::<Value>(text);
    let mut referenced = Vec::with_capacity(texts.len());
    for (name, text) in texts {
        match parse(&text) {
            Ok(schema) => referenced.push((name, schema)),
            Err(error) => {
                return Ok(Lookup::Refused(format!(
                    "schema id {id} refers to {name}, which is not JSON: {error}"
                )))
            }
        }
    }
    let text = answer["schema"].as_str().unwrap_or_default();
    Ok(match parse(text) {
        Ok(schema) => Lookup::Json(Rc::new(JsonValueSchema { schema, referenced })),
        Err(error) => Lookup::Refused(format!("schema id {id} is not JSON: {error}")),
    })
}

/// The schemas `references` name, as (the name the reference gives, text), the deepest first.
fn referenced_schemas(
    registry: &Registry,
    references: &Value,
    depth: usize,
    out: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let Some(references) = references.as_array() else {
        return Ok(());
    };
    if !references.is_empty() && depth >= REFERENCE_DEPTH_MAX_DEFAULT {
        return Err(format!(
            "references nest deeper than {REFERENCE_DEPTH_MAX_DEFAULT}"
        ));
    }
    for reference in references {
        if out.len() >= REFERENCES_MAX_DEFAULT {
            return Err(format!("over {REFERENCES_MAX_DEFAULT} references"));
        }
        let subject = reference["subject"].as_str().unwrap_or_default();
        let version = reference["version"].as_i64().unwrap_or(-1);
        let path = format!(
            "/subjects/{}/versions/{version}?deleted=true",
            encode(subject)
        );
        let answer = registry
            .call("GET", &path, None)
            .map_err(|e| format!("the schema registry: {subject} version {version}: {e}"))?;
        referenced_schemas(registry, &answer["references"], depth + 1, out)?;
        let name = reference["name"].as_str().unwrap_or_default().to_string();
        let text = answer["schema"].as_str().unwrap_or_default().to_string();
        if !out.iter().any(|(known, _)| *known == name) {
            out.push((name, text));
        }
    }
    Ok(())
}
