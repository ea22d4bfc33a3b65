//! JSON Schemas: parsed as JSON, with their `$ref`s resolved against the schema itself
//! (`#/definitions/...`, `#/$defs/...`) and against the schemas its references name (a `$ref`
//! equal to a reference's name, with an optional `#/...` pointer into it); compared by
//! Confluent's rules (`compatibility`).

pub mod compatibility;
mod model;

use serde_json::Value;

use crate::reference::Referenced;
use crate::RegistryError;

pub use model::{Criterion, Kind, Node};

/// A parsed JSON Schema and the schemas its references name, by the names they are
/// referred to by.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonSchema {
    pub root: Value,
    pub referenced: Vec<(String, Value)>,
}

impl JsonSchema {
    /// `text` parsed; every `$ref` in it must resolve.
    pub fn parse(text: &str, references: &[Referenced<'_>]) -> Result<JsonSchema, RegistryError> {
        let invalid =
            |detail: String| RegistryError::InvalidSchema(format!("{text}, details: {detail}"));
        let root: Value = serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
        if !(root.is_object() || root.is_boolean()) {
            return Err(invalid(
                "a JSON Schema is an object or a boolean".to_string(),
            ));
        }
        let referenced = references
            .iter()
            .map(|r| {
                serde_json::from_str(r.text)
                    .map(|value| (r.name.to_string(), value))
                    .map_err(|e| invalid(format!("reference {}: {e}", r.name)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let schema = JsonSchema { root, referenced };
        schema
            .check_references(&schema.root, &schema.root, 0)
            .map_err(invalid)?;
        for (_, referenced) in &schema.referenced {
            schema
                .check_references(referenced, referenced, 0)
                .map_err(invalid)?;
        }
        Ok(schema)
    }

    /// The node for the whole schema.
    pub fn node(&self) -> Node<'_> {
        Node {
            value: &self.root,
            document: &self.root,
        }
    }

    /// Where `reference` (a `$ref`'s value) points, from within `document`.
    pub fn resolve<'a>(&'a self, reference: &str, document: &'a Value) -> Option<Node<'a>> {
        let (name, pointer) = reference.split_once('#').unwrap_or((reference, ""));
        let document = if name.is_empty() {
            document
        } else {
            self.referenced
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, value)| value)?
        };
        let value = if pointer.is_empty() {
            document
        } else {
            document.pointer(pointer)?
        };
        Some(Node { value, document })
    }

    /// Every `$ref` in the subschemas of `value` resolves.
    fn check_references(
        &self,
        value: &Value,
        document: &Value,
        depth: usize,
    ) -> Result<(), String> {
        if depth > crate::canonical::MAX_NESTING {
            return Err("the schema nests too deep".to_string());
        }
        let Some(object) = value.as_object() else {
            return Ok(());
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            if self.resolve(reference, document).is_none() {
                return Err(format!("$ref {reference} does not resolve"));
            }
        }
        for child in model::subschemas(value) {
            self.check_references(child, document, depth + 1)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
