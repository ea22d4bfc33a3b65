//! What a JSON Schema value is, as the compatibility rules tell schemas apart: the kinds of
//! the everit library Confluent's registry reads schemas with (a schema's `type`, or the
//! keywords it uses when it names none), and the subschemas a schema holds.

use serde_json::{Map, Value};

/// A schema value and the document its local `$ref`s point into.
#[derive(Debug, Clone, Copy)]
pub struct Node<'a> {
    pub value: &'a Value,
    pub document: &'a Value,
}

impl<'a> Node<'a> {
    pub fn with(self, value: &'a Value) -> Node<'a> {
        Node {
            value,
            document: self.document,
        }
    }

    pub fn object(self) -> Option<&'a Map<String, Value>> {
        self.value.as_object()
    }

    pub fn get(self, key: &str) -> Option<&'a Value> {
        self.value.as_object()?.get(key)
    }

    pub fn number(self, key: &str) -> Option<f64> {
        self.get(key)?.as_f64()
    }

    pub fn child(self, key: &str) -> Option<Node<'a>> {
        self.get(key).map(|value| self.with(value))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Criterion {
    All,
    Any,
    One,
}

impl Criterion {
    pub fn keyword(self) -> &'static str {
        match self {
            Criterion::All => "allOf",
            Criterion::Any => "anyOf",
            Criterion::One => "oneOf",
        }
    }
}

/// A schema's kind. Two schemas of different kinds are a changed type unless the old one
/// accepts nothing or the new one accepts anything.
#[derive(Debug, Clone)]
pub enum Kind<'a> {
    /// `true`, `{}`, or a schema with no keyword that constrains.
    Empty,
    /// `false`.
    False,
    Reference(&'a str),
    Combined(Criterion, Vec<Node<'a>>),
    Not,
    Enum,
    Const,
    String,
    /// `integer` when the flag is set.
    Number(bool),
    Boolean,
    Null,
    Object,
    Array,
    /// A list of types (`"type": ["string", "null"]`): any of them, each with the schema's
    /// keywords.
    Types(Vec<Kind<'a>>),
}

const COMBINERS: [Criterion; 3] = [Criterion::All, Criterion::Any, Criterion::One];
const OBJECT_KEYWORDS: [&str; 7] = [
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "minProperties",
    "maxProperties",
    "dependencies",
];
const ARRAY_KEYWORDS: [&str; 6] = [
    "items",
    "additionalItems",
    "prefixItems",
    "minItems",
    "maxItems",
    "uniqueItems",
];
const STRING_KEYWORDS: [&str; 3] = ["minLength", "maxLength", "pattern"];
const NUMBER_KEYWORDS: [&str; 5] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// The kind of `node`. A schema with a combiner and other keywords is all of its parts (as
/// everit reads it); a list of types is any of them.
pub fn kind(node: Node<'_>) -> Kind<'_> {
    let object = match node.value {
        Value::Bool(true) => return Kind::Empty,
        Value::Bool(false) => return Kind::False,
        Value::Object(object) => object,
        _ => return Kind::Empty,
    };
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        return Kind::Reference(reference);
    }
    let combiners: Vec<Criterion> = COMBINERS
        .into_iter()
        .filter(|c| object.get(c.keyword()).is_some_and(Value::is_array))
        .collect();
    if let Some(&only) = combiners.first() {
        let members = |c: Criterion| -> Vec<Node<'_>> {
            object[c.keyword()]
                .as_array()
                .map(|a| a.iter().map(|v| node.with(v)).collect())
                .unwrap_or_default()
        };
        if combiners.len() == 1 && !constrains_otherwise(object) {
            return Kind::Combined(only, members(only));
        }
    }
    if object.contains_key("enum") {
        return Kind::Enum;
    }
    if object.contains_key("const") {
        return Kind::Const;
    }
    if object.contains_key("not") {
        return Kind::Not;
    }
    match object.get("type") {
        Some(Value::String(name)) => named_kind(name),
        Some(Value::Array(names)) if names.len() == 1 => {
            names[0].as_str().map_or(Kind::Empty, named_kind)
        }
        Some(Value::Array(names)) => Kind::Types(
            names
                .iter()
                .filter_map(Value::as_str)
                .map(named_kind)
                .collect(),
        ),
        _ => inferred_kind(object),
    }
}

fn named_kind(name: &str) -> Kind<'static> {
    match name {
        "string" => Kind::String,
        "number" => Kind::Number(false),
        "integer" => Kind::Number(true),
        "boolean" => Kind::Boolean,
        "null" => Kind::Null,
        "object" => Kind::Object,
        "array" => Kind::Array,
        _ => Kind::Empty,
    }
}

/// A schema without `type`: the kind its keywords belong to.
fn inferred_kind(object: &Map<String, Value>) -> Kind<'static> {
    let uses = |keywords: &[&str]| keywords.iter().any(|k| object.contains_key(*k));
    if uses(&OBJECT_KEYWORDS) {
        Kind::Object
    } else if uses(&ARRAY_KEYWORDS) {
        Kind::Array
    } else if uses(&STRING_KEYWORDS) {
        Kind::String
    } else if uses(&NUMBER_KEYWORDS) {
        Kind::Number(false)
    } else {
        Kind::Empty
    }
}

/// Keywords beside a combiner that constrain on their own.
fn constrains_otherwise(object: &Map<String, Value>) -> bool {
    object.contains_key("type")
        || object.contains_key("enum")
        || object.contains_key("const")
        || object.contains_key("not")
        || [
            &OBJECT_KEYWORDS[..],
            &ARRAY_KEYWORDS[..],
            &STRING_KEYWORDS[..],
            &NUMBER_KEYWORDS[..],
        ]
        .iter()
        .any(|keywords| keywords.iter().any(|k| object.contains_key(*k)))
}

/// The subschemas `value` holds, wherever the vocabulary puts them.
pub fn subschemas(value: &Value) -> Vec<&Value> {
    let Some(object) = value.as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for key in [
        "additionalProperties",
        "additionalItems",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "unevaluatedProperties",
        "unevaluatedItems",
    ] {
        if let Some(child) = object.get(key) {
            out.push(child);
        }
    }
    for key in [
        "properties",
        "patternProperties",
        "definitions",
        "$defs",
        "dependencies",
    ] {
        if let Some(Value::Object(children)) = object.get(key) {
            out.extend(children.values().filter(|v| !v.is_array()));
        }
    }
    for key in ["allOf", "anyOf", "oneOf", "prefixItems"] {
        if let Some(Value::Array(children)) = object.get(key) {
            out.extend(children);
        }
    }
    match object.get("items") {
        Some(Value::Array(children)) => out.extend(children),
        Some(child) => out.push(child),
        None => {}
    }
    out
}
