use serde_json::{json, Value};

use super::*;
use crate::reference::Referenced;

fn problems(old: &Value, new: &Value) -> Vec<&'static str> {
    let old = JsonSchema::parse(&old.to_string(), &[]).unwrap();
    let new = JsonSchema::parse(&new.to_string(), &[]).unwrap();
    let mut found: Vec<&'static str> = compatibility::problems(&old, &new)
        .iter()
        .map(|p| p.error_type)
        .collect();
    found.sort_unstable();
    found.dedup();
    found
}

/// `base` with the member at `path` set (added when it is not there).
fn with(base: &Value, path: &str, value: Value) -> Value {
    let mut out = base.clone();
    let (parent, key) = path.rsplit_once('/').unwrap();
    out.pointer_mut(parent)
        .unwrap()
        .as_object_mut()
        .unwrap()
        .insert(key.to_string(), value);
    out
}

fn without(base: &Value, parent: &str, key: &str) -> Value {
    let mut out = base.clone();
    out.pointer_mut(parent)
        .unwrap()
        .as_object_mut()
        .unwrap()
        .remove(key);
    out
}

/// Confluent's rules, one change each: (what changed, old, new, the error types).
#[test]
fn changes_are_judged_by_confluents_rules() {
    let open = json!({"type": "object", "properties": {
        "id": {"type": "integer"}, "name": {"type": "string", "maxLength": 10},
        "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["id"]});
    let closed = with(&open, "/additionalProperties", json!(false));
    let open_with_age = with(&open, "/properties/age", json!({"type": "integer"}));
    let closed_with_age = with(&closed, "/properties/age", json!({"type": "integer"}));
    let closed_with_required_age = with(&closed_with_age, "/required", json!(["id", "age"]));
    let nullable_name = with(&open, "/properties/name/type", json!(["string", "null"]));
    let cases: Vec<(&str, &Value, Value, &[&str])> = vec![
        ("nothing", &open, open.clone(), &[]),
        ("a title", &open, with(&open, "/title", json!("T")), &[]),
        (
            "integer widened to number",
            &open,
            with(&open, "/properties/id/type", json!("number")),
            &[],
        ),
        (
            "number narrowed to integer",
            &open_with_age,
            with(&open_with_age, "/properties/age/type", json!("number")),
            &[],
        ),
        (
            "a type changed",
            &open,
            with(&open, "/properties/id/type", json!("string")),
            &["TYPE_CHANGED"],
        ),
        (
            "a type list extended",
            &open,
            with(&open, "/properties/name/type", json!(["string", "null"])),
            &[],
        ),
        (
            "a type list narrowed",
            &nullable_name,
            open.clone(),
            &["SUM_TYPE_NARROWED"],
        ),
        (
            "maxLength raised",
            &open,
            with(&open, "/properties/name/maxLength", json!(20)),
            &[],
        ),
        (
            "maxLength lowered",
            &open,
            with(&open, "/properties/name/maxLength", json!(5)),
            &["MAX_LENGTH_DECREASED"],
        ),
        (
            "maxLength removed",
            &open,
            without(&open, "/properties/name", "maxLength"),
            &[],
        ),
        (
            "a pattern added",
            &open,
            with(&open, "/properties/name/pattern", json!("^a")),
            &["PATTERN_ADDED"],
        ),
        (
            "a minimum added",
            &open,
            with(&open, "/properties/id/minimum", json!(0)),
            &["MINIMUM_ADDED"],
        ),
        (
            "required dropped",
            &open,
            with(&open, "/required", json!([])),
            &[],
        ),
        (
            "a property made required",
            &open,
            with(&open, "/required", json!(["id", "name"])),
            &["REQUIRED_ATTRIBUTE_ADDED"],
        ),
        (
            "a property added to an open model",
            &open,
            open_with_age.clone(),
            &["PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"],
        ),
        (
            "an untyped property added to an open model",
            &open,
            with(&open, "/properties/any", json!({})),
            &[],
        ),
        (
            "a property removed from an open model",
            &open_with_age,
            open.clone(),
            &[],
        ),
        (
            "an optional property added to a closed model",
            &closed,
            closed_with_age.clone(),
            &[],
        ),
        (
            "a required property added to a closed model",
            &closed,
            closed_with_required_age,
            &["REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"],
        ),
        (
            "a property removed from a closed model",
            &closed_with_age,
            closed.clone(),
            &["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"],
        ),
        (
            "the model closed",
            &open,
            closed.clone(),
            &["ADDITIONAL_PROPERTIES_REMOVED"],
        ),
        ("the model opened", &closed, open.clone(), &[]),
        (
            "an array's items changed",
            &open,
            with(&open, "/properties/tags/items/type", json!("integer")),
            &["TYPE_CHANGED"],
        ),
        (
            "uniqueItems added",
            &open,
            with(&open, "/properties/tags/uniqueItems", json!(true)),
            &["UNIQUE_ITEMS_ADDED"],
        ),
        (
            "maxItems added",
            &open,
            with(&open, "/properties/tags/maxItems", json!(3)),
            &["MAX_ITEMS_ADDED"],
        ),
    ];
    for (what, old, new, expected) in cases {
        assert_eq!(problems(old, &new), expected, "{what}");
    }
}

#[test]
fn enums_sums_and_nots() {
    let colours = json!({"enum": ["red", "blue"]});
    assert!(problems(&colours, &json!({"enum": ["red", "blue", "green"]})).is_empty());
    assert_eq!(
        problems(&colours, &json!({"enum": ["red"]})),
        ["ENUM_ARRAY_NARROWED"]
    );
    let sum = json!({"oneOf": [{"type": "string"}, {"type": "integer"}]});
    let wider = json!({"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]});
    assert!(problems(&sum, &wider).is_empty());
    assert_eq!(problems(&wider, &sum), ["SUM_TYPE_NARROWED"]);
    // A plain type into a sum that holds it: extended.
    assert!(problems(&json!({"type": "string"}), &sum).is_empty());
    // oneOf to anyOf accepts more; anyOf to allOf does not.
    assert!(problems(
        &sum,
        &json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
    )
    .is_empty());
    assert_eq!(
        problems(
            &json!({"anyOf": [{"type": "string"}, {"minLength": 1}]}),
            &json!({"allOf": [{"type": "string"}, {"minLength": 1}]})
        ),
        ["COMBINED_TYPE_CHANGED"]
    );
    assert_eq!(
        problems(&json!({"not": {"type": "string"}}), &json!({"not": {}})),
        ["NOT_TYPE_EXTENDED"]
    );
    // Anything to something narrower is a changed type; anything from nothing is fine.
    assert_eq!(
        problems(&json!(true), &json!({"type": "string"})),
        ["TYPE_CHANGED"]
    );
    assert!(problems(&json!(false), &json!({"type": "string"})).is_empty());
}

#[test]
fn references_resolve_locally_and_across_schemas() {
    let local = json!({"type": "object", "additionalProperties": false,
        "properties": {"home": {"$ref": "#/definitions/address"}},
        "definitions": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}}});
    let changed = with(
        &local,
        "/definitions/address/properties/city/type",
        json!("integer"),
    );
    assert_eq!(problems(&local, &changed), ["TYPE_CHANGED"]);
    // A recursive schema compares without end.
    let tree = json!({"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}});
    assert!(problems(&tree, &tree).is_empty());
    // A $ref to another registered schema, by the reference's name.
    let address = json!({"type": "object", "properties": {"city": {"type": "string"}}}).to_string();
    let text =
        json!({"type": "object", "properties": {"home": {"$ref": "address.json"}}}).to_string();
    let reference = Referenced {
        name: "address.json",
        text: &address,
    };
    JsonSchema::parse(&text, &[reference]).unwrap();
    let error = JsonSchema::parse(&text, &[]).unwrap_err();
    assert!(error.to_string().contains("does not resolve"), "{error}");
}

#[test]
fn combinations_past_the_budget_are_refused_not_run_forever() {
    // Nested anyOfs whose members differ: every pair compares every nested pair.
    let mut schema = json!({"type": "string"});
    for depth in 0..4 {
        let members: Vec<Value> = (0..6)
            .map(|i| json!({"anyOf": [schema.clone(), {"minLength": i + depth}]}))
            .collect();
        schema = json!({"anyOf": members});
    }
    let other = with(&schema, "/anyOf/0/anyOf/1/minLength", json!(99));
    let started = std::time::Instant::now();
    let found = problems(&schema, &other);
    assert!(!found.is_empty());
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}
