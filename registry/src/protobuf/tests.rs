use super::*;
use crate::compatibility::Problem;

fn compile(text: &str) -> FileDescriptor {
    parse(&canonical_text(text).unwrap(), &[]).unwrap()
}

fn problems(old: &str, new: &str) -> Vec<&'static str> {
    let found: Vec<Problem> = compatibility::problems(&compile(old), &compile(new));
    found.iter().map(|p| p.error_type).collect()
}

const BASE: &str = r#"
syntax = "proto3";
package shop;
// An order.
message Order {
  string id = 1;
  int64 amount = 2;
  Line line = 3;
  map<string, int32> counts = 4;
  oneof payment { string card = 5; string iban = 6; }
  message Line { string sku = 1; }
}
enum Colour { RED = 0; BLUE = 1; }
"#;

#[test]
fn layout_and_comments_do_not_change_the_canonical_text() {
    let compact = "syntax=\"proto3\";package shop;message Order{string id=1;int64 amount=2;\
                   Line line=3;map<string,int32> counts=4;oneof payment{string card=5;string iban=6;}\
                   message Line{string sku=1;}}enum Colour{RED=0;BLUE=1;}";
    let canonical = canonical_text(BASE).unwrap();
    assert_eq!(canonical, canonical_text(compact).unwrap());
    // The canonical text is its own canonical text.
    assert_eq!(canonical, canonical_text(&canonical).unwrap());
    assert!(
        canonical.contains("map<string, int32> counts = 4;"),
        "{canonical}"
    );
    assert!(canonical.contains("oneof payment {"), "{canonical}");
}

#[test]
fn a_base64_descriptor_is_stored_as_text_and_served_back_as_a_descriptor() {
    let canonical = canonical_text(BASE).unwrap();
    let encoded = serialized(&canonical).unwrap();
    let from_base64 = canonical_text(&encoded).unwrap();
    assert_eq!(canonical, from_base64);
}

#[test]
fn proto2_labels_defaults_options_and_services_print_back() {
    let text = r#"
syntax = "proto2";
package p;
import "google/protobuf/timestamp.proto";
option java_package = "com.example";
message M {
  required string a = 1 [default = "x\"y"];
  optional int32 b = 2 [default = -3, deprecated = true];
  repeated int32 c = 3 [packed = true];
  optional google.protobuf.Timestamp at = 4;
  extensions 100 to max;
  reserved 8, 10 to 12;
  reserved "old";
  enum E { option allow_alias = true; A = 0; B = 0; }
}
extend M { optional string tag = 100; }
service S { rpc Get(M) returns (stream M); }
"#;
    let canonical = canonical_text(text).unwrap();
    assert_eq!(canonical, canonical_text(&canonical).unwrap());
    let file = parse(&canonical, &[]).unwrap();
    let message = file.messages().next().unwrap();
    assert_eq!(message.fields().len(), 4);
    for needle in [
        "required string a = 1 [default = \"x\\\"y\"];",
        "reserved 8, 10 to 12;",
        "extensions 100 to max;",
        "rpc Get(M) returns (stream M);",
        "option java_package = \"com.example\";",
    ] {
        assert!(canonical.contains(needle), "{needle} not in {canonical}");
    }
}

#[test]
fn imports_resolve_through_references() {
    let common = canonical_text(
        "syntax = \"proto3\"; package common; message Money { int64 units = 1; string currency = 2; }",
    )
    .unwrap();
    let text = canonical_text(
        "syntax = \"proto3\"; package shop; import \"common/money.proto\"; \
         message Order { common.Money total = 1; }",
    )
    .unwrap();
    let reference = Referenced {
        name: "common/money.proto",
        text: &common,
    };
    let file = parse(&text, &[reference]).unwrap();
    let order = file.messages().next().unwrap();
    let total = order.fields().next().unwrap();
    assert_eq!(
        total.kind().as_message().unwrap().full_name(),
        "common.Money"
    );
    // Without the reference the import is unknown.
    let error = parse(&text, &[]).unwrap_err();
    assert!(
        matches!(error, RegistryError::InvalidSchema(_)),
        "{error:?}"
    );
}

#[test]
fn unparsable_and_unsupported_schemas_are_invalid() {
    for text in [
        "message {",
        "not base64 !!",
        "syntax = \"proto2\"; message M { optional group G = 1 { optional int32 a = 2; } }",
        "syntax = \"proto3\"; message M { Missing m = 1; }",
    ] {
        let result = canonical_text(text).and_then(|c| parse(&c, &[]).map(|_| c));
        assert!(
            matches!(result, Err(RegistryError::InvalidSchema(_))),
            "{text}: {result:?}"
        );
    }
}

/// Confluent's rules, one change each: (what changed, the new schema, the error types).
#[test]
fn changes_are_judged_by_confluents_rules() {
    let cases: &[(&str, &str, &[&str])] = &[
        ("nothing", BASE, &[]),
        (
            "a field renamed",
            &BASE.replace("int64 amount", "int64 total"),
            &[],
        ),
        (
            "a field added",
            &BASE.replace("int64 amount = 2;", "int64 amount = 2; bool gift = 9;"),
            &[],
        ),
        (
            "a field removed",
            &BASE.replace("int64 amount = 2;", ""),
            &[],
        ),
        (
            "int64 to uint32: both varints",
            &BASE.replace("int64 amount", "uint32 amount"),
            &[],
        ),
        (
            "int64 to an enum: both varints",
            &BASE.replace("int64 amount", "Colour amount"),
            &[],
        ),
        (
            "string to bytes",
            &BASE.replace("string id", "bytes id"),
            &[],
        ),
        (
            "int64 to sint64",
            &BASE.replace("int64 amount", "sint64 amount"),
            &["FIELD_SCALAR_KIND_CHANGED"],
        ),
        (
            "int64 to string",
            &BASE.replace("int64 amount", "string amount"),
            &["FIELD_SCALAR_KIND_CHANGED"],
        ),
        (
            "int64 to a message",
            &BASE.replace("int64 amount", "Line amount"),
            &["FIELD_KIND_CHANGED"],
        ),
        (
            "a map to a scalar",
            &BASE.replace("map<string, int32> counts", "int32 counts"),
            &["FIELD_KIND_CHANGED"],
        ),
        (
            "a map's value type",
            &BASE.replace("map<string, int32>", "map<string, string>"),
            &["FIELD_SCALAR_KIND_CHANGED"],
        ),
        (
            "the package",
            &BASE.replace("package shop;", "package store;"),
            &["PACKAGE_CHANGED"],
        ),
        (
            "a nested message removed",
            &BASE
                .replace("message Line { string sku = 1; }", "")
                .replace("Line line = 3;", ""),
            &["MESSAGE_REMOVED"],
        ),
        (
            "a message added",
            &format!("{BASE}\nmessage Extra {{ int32 x = 1; }}"),
            &[],
        ),
        (
            "an enum removed",
            &BASE.replace("enum Colour { RED = 0; BLUE = 1; }", ""),
            &[],
        ),
        (
            "an enum value added",
            &BASE.replace("BLUE = 1;", "BLUE = 1; GREEN = 2;"),
            &[],
        ),
        (
            "a oneof field removed",
            &BASE.replace("string iban = 6;", ""),
            &["ONEOF_FIELD_REMOVED"],
        ),
        (
            "a oneof field added",
            &BASE.replace("string iban = 6;", "string iban = 6; string cash = 7;"),
            &[],
        ),
        (
            "a field moved out of a oneof",
            &BASE
                .replace("string iban = 6;", "")
                .replace("string id = 1;", "string id = 1; string iban = 6;"),
            &[],
        ),
        (
            "one field moved into a new oneof",
            &BASE.replace("string id = 1;", "oneof ident { string id = 1; }"),
            &[],
        ),
        (
            "two fields moved into a oneof",
            &BASE.replace(
                "string id = 1;\n  int64 amount = 2;",
                "oneof ident { string id = 1; int64 amount = 2; }",
            ),
            &["MULTIPLE_FIELDS_MOVED_TO_ONEOF"],
        ),
        (
            "a field moved into an existing oneof",
            &BASE
                .replace("string id = 1;", "")
                .replace("string card = 5;", "string card = 5; string id = 1;"),
            &["FIELD_MOVED_TO_EXISTING_ONEOF"],
        ),
        (
            "a nested message's field type",
            &BASE.replace(
                "message Line { string sku = 1; }",
                "message Line { int32 sku = 1; }",
            ),
            &["FIELD_NAMED_TYPE_CHANGED", "FIELD_SCALAR_KIND_CHANGED"],
        ),
        (
            "a field's message type renamed",
            &BASE
                .replace("Line line = 3;", "Other line = 3;")
                .replace("message Line {", "message Other {"),
            &["FIELD_NAMED_TYPE_CHANGED", "MESSAGE_REMOVED"],
        ),
    ];
    for (what, new, expected) in cases {
        let mut found = problems(BASE, new);
        found.sort_unstable();
        found.dedup();
        let mut expected = expected.to_vec();
        expected.sort_unstable();
        assert_eq!(found, expected, "{what}");
    }
}

#[test]
fn required_fields_may_be_neither_added_nor_removed() {
    let old = "syntax = \"proto2\"; message M { optional int32 a = 1; }";
    let new = "syntax = \"proto2\"; message M { optional int32 a = 1; required int32 b = 2; }";
    assert_eq!(problems(old, new), ["REQUIRED_FIELD_ADDED"]);
    assert_eq!(problems(new, old), ["REQUIRED_FIELD_REMOVED"]);
}
