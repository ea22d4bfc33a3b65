//! Confluent's rules for Protobuf changes: a change is incompatible when data written with
//! one schema would be misread with the other. Renaming fields, adding and removing optional
//! fields, enums and their values, and moving messages are compatible; changing a package,
//! removing a message, changing a field's kind (scalar, message, map), its scalar's wire
//! group or its message type, adding or removing a `required` field, removing a field from a
//! oneof, or moving fields into a oneof are not. The `errorType`s are Confluent's names.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use prost_reflect::{Cardinality, FieldDescriptor, FileDescriptor, Kind, MessageDescriptor};

use crate::compatibility::Problem;

/// Why data written with `original` would be misread with `update`; empty when it would not.
pub fn problems(original: &FileDescriptor, update: &FileDescriptor) -> Vec<Problem> {
    let mut diff = Diff::default();
    if original.package_name() != update.package_name() {
        diff.push("PACKAGE_CHANGED", "#/", "The package changed");
    }
    diff.types(
        "#",
        &original.messages().collect::<Vec<_>>(),
        &update.messages().collect::<Vec<_>>(),
    );
    diff.problems
}

#[derive(Default)]
struct Diff {
    problems: Vec<Problem>,
    /// Pairs of messages compared already: a message type that refers to itself, or is used
    /// by several fields, is compared once.
    compared: HashSet<(String, String)>,
}

/// A field's kind as the rules group them: enums count as varint numbers.
#[derive(Debug, PartialEq, Eq)]
enum FieldKind {
    Scalar(ScalarGroup),
    Map,
    Message,
}

/// Scalars that read each other's wire values (the Protobuf guide's "updating" rules).
#[derive(Debug, PartialEq, Eq)]
enum ScalarGroup {
    Varint,
    ZigZag,
    LengthDelimited,
    Fixed32,
    Fixed64,
    Float,
    Double,
}

impl Diff {
    fn push(&mut self, error_type: &'static str, path: &str, what: &str) {
        self.problems.push(Problem {
            error_type,
            description: format!("{what} at path '{path}'"),
        });
    }

    /// Messages of one scope (a file, or a message's nested types), matched by name.
    fn types(&mut self, path: &str, original: &[MessageDescriptor], update: &[MessageDescriptor]) {
        let update_by_name: BTreeMap<&str, &MessageDescriptor> =
            update.iter().map(|m| (m.name(), m)).collect();
        for message in original {
            let here = format!("{path}/{}", message.name());
            match update_by_name.get(message.name()) {
                None if message.is_map_entry() => {}
                None => self.push(
                    "MESSAGE_REMOVED",
                    &here,
                    "A message of the old schema is not in the new one",
                ),
                Some(updated) => self.message(&here, message, updated),
            }
        }
    }

    fn message(&mut self, path: &str, original: &MessageDescriptor, update: &MessageDescriptor) {
        let pair = (
            original.full_name().to_string(),
            update.full_name().to_string(),
        );
        if !self.compared.insert(pair) {
            return;
        }
        let original_fields = Fields::of(original);
        let update_fields = Fields::of(update);
        let mut original_top = original_fields.top.clone();

        // Fields that moved into a oneof: one is fine (a oneof of one field reads the same),
        // several, or one joining fields that were already in a oneof, are not.
        for (oneof, tags) in &update_fields.oneofs {
            let moved = tags
                .iter()
                .filter(|t| original_top.remove(t).is_some())
                .count();
            let existing = tags
                .iter()
                .filter(|t| original_fields.in_oneof.contains_key(t))
                .count();
            let here = format!("{path}/{oneof}");
            if moved > 1 {
                self.push(
                    "MULTIPLE_FIELDS_MOVED_TO_ONEOF",
                    &here,
                    "Several fields moved into one oneof",
                );
            } else if moved == 1 && existing > 0 {
                self.push(
                    "FIELD_MOVED_TO_EXISTING_ONEOF",
                    &here,
                    "A field moved into a oneof that had other fields",
                );
            }
        }
        for (oneof, tags) in &original_fields.oneofs {
            let Some(updated_tags) = update_fields.oneofs.get(oneof) else {
                continue;
            };
            for tag in tags {
                let here = format!("{path}/{oneof}/{tag}");
                if updated_tags.contains(tag) {
                    self.field(&here, &original_fields.all[tag], &update_fields.all[tag]);
                } else if !update_fields.all.contains_key(tag) {
                    self.push(
                        "ONEOF_FIELD_REMOVED",
                        &here,
                        "A field of a oneof was removed",
                    );
                }
            }
        }
        let tags: BTreeSet<u32> = original_top
            .keys()
            .chain(update_fields.top.keys())
            .copied()
            .collect();
        for tag in tags {
            let here = format!("{path}/{tag}");
            match (original_top.get(&tag), update_fields.top.get(&tag)) {
                (Some(old), None) if old.cardinality() == Cardinality::Required => self.push(
                    "REQUIRED_FIELD_REMOVED",
                    &here,
                    "A required field was removed",
                ),
                (None, Some(new)) if new.cardinality() == Cardinality::Required => {
                    self.push("REQUIRED_FIELD_ADDED", &here, "A required field was added")
                }
                (Some(old), Some(new)) => self.field(&here, old, new),
                _ => {}
            }
        }
        // Fields whose oneof changed (moved in, out, or to a renamed oneof): their types
        // still have to agree.
        for (tag, old) in &original_fields.all {
            let Some(new) = update_fields.all.get(tag) else {
                continue;
            };
            let old_oneof = original_fields.in_oneof.get(tag);
            let new_oneof = update_fields.in_oneof.get(tag);
            let compared_above = match (old_oneof, new_oneof) {
                (None, None) => true,
                (Some(a), Some(b)) => a == b,
                _ => false,
            };
            if !compared_above {
                self.field(&format!("{path}/{tag}"), old, new);
            }
        }
        self.types(
            path,
            &original.child_messages().collect::<Vec<_>>(),
            &update.child_messages().collect::<Vec<_>>(),
        );
    }

    fn field(&mut self, path: &str, original: &FieldDescriptor, update: &FieldDescriptor) {
        if original.is_map() && update.is_map() {
            let (old, new) = (original.kind(), update.kind());
            let (Some(old), Some(new)) = (old.as_message(), new.as_message()) else {
                return;
            };
            self.kinds(
                path,
                &old.map_entry_key_field().kind(),
                &new.map_entry_key_field().kind(),
            );
            self.kinds(
                path,
                &old.map_entry_value_field().kind(),
                &new.map_entry_value_field().kind(),
            );
            return;
        }
        if field_kind(original) != field_kind(update) {
            let (a, b) = (field_kind(original), field_kind(update));
            match (a, b) {
                (FieldKind::Scalar(_), FieldKind::Scalar(_)) => self.push(
                    "FIELD_SCALAR_KIND_CHANGED",
                    path,
                    "A field's scalar type changed to one its data does not read as",
                ),
                _ => self.push(
                    "FIELD_KIND_CHANGED",
                    path,
                    "A field changed between scalar, message and map",
                ),
            }
            return;
        }
        self.kinds(path, &original.kind(), &update.kind());
    }

    /// Two field types of the same kind: scalars in one wire group, or message types that
    /// have the same name (within their packages) and are themselves compatible.
    fn kinds(&mut self, path: &str, original: &Kind, update: &Kind) {
        match (original, update) {
            (Kind::Message(old), Kind::Message(new)) => {
                if local_name(old) != local_name(new) {
                    self.push(
                        "FIELD_NAMED_TYPE_CHANGED",
                        path,
                        "A field's message type changed",
                    );
                    return;
                }
                let before = self.problems.len();
                self.message(&format!("#/{}", local_name(old)), old, new);
                if self.problems.len() > before {
                    self.push(
                        "FIELD_NAMED_TYPE_CHANGED",
                        path,
                        "A field's message type changed incompatibly",
                    );
                }
            }
            (old, new) => {
                let (a, b) = (scalar_group(old), scalar_group(new));
                match (a, b) {
                    (Some(a), Some(b)) if a != b => self.push(
                        "FIELD_SCALAR_KIND_CHANGED",
                        path,
                        "A field's scalar type changed to one its data does not read as",
                    ),
                    (Some(_), None) | (None, Some(_)) => self.push(
                        "FIELD_KIND_CHANGED",
                        path,
                        "A field changed between scalar, message and map",
                    ),
                    _ => {}
                }
            }
        }
    }
}

/// A message's fields by number: those outside any oneof (a proto3 `optional` field's
/// synthetic oneof does not count), each oneof's, and all of them.
struct Fields {
    top: BTreeMap<u32, FieldDescriptor>,
    oneofs: BTreeMap<String, BTreeSet<u32>>,
    in_oneof: BTreeMap<u32, String>,
    all: BTreeMap<u32, FieldDescriptor>,
}

impl Fields {
    fn of(message: &MessageDescriptor) -> Fields {
        let mut fields = Fields {
            top: BTreeMap::new(),
            oneofs: BTreeMap::new(),
            in_oneof: BTreeMap::new(),
            all: BTreeMap::new(),
        };
        for field in message.fields() {
            let number = field.number();
            match field.containing_oneof().filter(|o| !o.is_synthetic()) {
                Some(oneof) => {
                    let name = oneof.name().to_string();
                    fields
                        .oneofs
                        .entry(name.clone())
                        .or_default()
                        .insert(number);
                    fields.in_oneof.insert(number, name);
                }
                None => {
                    fields.top.insert(number, field.clone());
                }
            }
            fields.all.insert(number, field);
        }
        fields
    }
}

fn field_kind(field: &FieldDescriptor) -> FieldKind {
    if field.is_map() {
        return FieldKind::Map;
    }
    match scalar_group(&field.kind()) {
        Some(group) => FieldKind::Scalar(group),
        None => FieldKind::Message,
    }
}

fn scalar_group(kind: &Kind) -> Option<ScalarGroup> {
    Some(match kind {
        Kind::Int32 | Kind::Int64 | Kind::Uint32 | Kind::Uint64 | Kind::Bool | Kind::Enum(_) => {
            ScalarGroup::Varint
        }
        Kind::Sint32 | Kind::Sint64 => ScalarGroup::ZigZag,
        Kind::String | Kind::Bytes => ScalarGroup::LengthDelimited,
        Kind::Fixed32 | Kind::Sfixed32 => ScalarGroup::Fixed32,
        Kind::Fixed64 | Kind::Sfixed64 => ScalarGroup::Fixed64,
        Kind::Float => ScalarGroup::Float,
        Kind::Double => ScalarGroup::Double,
        Kind::Message(_) => return None,
    })
}

/// A message's name within its package (`Outer.Inner`).
fn local_name(message: &MessageDescriptor) -> &str {
    let package = message.package_name();
    let full = message.full_name();
    if package.is_empty() {
        full
    } else {
        full.strip_prefix(package)
            .and_then(|rest| rest.strip_prefix('.'))
            .unwrap_or(full)
    }
}
