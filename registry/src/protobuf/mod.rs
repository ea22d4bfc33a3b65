//! Protobuf schemas: `.proto` text (or, as confluent-kafka's Python serializer sends it, a
//! base64 `FileDescriptorProto`), compiled with the files its references name as imports,
//! through `protox`; stored as the text `print` gives; compared by Confluent's rules
//! (`compatibility`).

pub mod compatibility;
pub mod print;

use std::collections::HashMap;

use base64::Engine;
use prost::Message;
use prost_reflect::FileDescriptor;
use prost_types::field_descriptor_proto::Type;
use prost_types::{DescriptorProto, FileDescriptorProto};
use protox::file::{File, FileResolver, GoogleFileResolver};

use crate::reference::Referenced;
use crate::RegistryError;

/// The name the registered schema's own file has while it is compiled; references are
/// files under the names they give.
const REGISTERED_FILE: &str = "registered.proto";

/// `text` as stored: printed from its descriptor, so that layout and comments do not count.
pub fn canonical_text(text: &str) -> Result<String, RegistryError> {
    let descriptor = descriptor_of(text)?;
    let printed = print::print(&descriptor);
    // Printed text parses back to what printed it (a descriptor sent compiled may nest past
    // what `.proto` text allows: refused here, not when it is read back).
    let reparsed = protox_parse::parse(REGISTERED_FILE, &printed)
        .map_err(|e| invalid(text, &format!("its printed form does not parse: {e}")))?;
    Ok(print::print(&reparsed))
}

/// The stored `text` as Confluent's `format=serialized` answers it: a base64
/// `FileDescriptorProto` (its names unresolved, as `protoc`'s parser leaves them).
pub fn serialized(text: &str) -> Result<String, RegistryError> {
    let descriptor = protox_parse::parse(REGISTERED_FILE, text).map_err(|e| {
        RegistryError::Store(format!("a stored Protobuf schema does not parse: {e}"))
    })?;
    Ok(base64::engine::general_purpose::STANDARD.encode(descriptor.encode_to_vec()))
}

/// `text` compiled, with the files `references` name (their stored texts) as its imports.
/// Google's well-known types (`google/protobuf/*.proto`) need no reference.
pub fn parse(text: &str, references: &[Referenced<'_>]) -> Result<FileDescriptor, RegistryError> {
    let mut files: HashMap<String, String> = references
        .iter()
        .map(|r| (r.name.to_string(), r.text.to_string()))
        .collect();
    files.insert(REGISTERED_FILE.to_string(), text.to_string());
    let mut compiler = protox::Compiler::with_file_resolver(Sources { files });
    compiler.include_imports(true);
    compiler
        .open_file(REGISTERED_FILE)
        .map_err(|e| invalid(text, &e.to_string()))?;
    compiler
        .descriptor_pool()
        .get_file_by_name(REGISTERED_FILE)
        .ok_or_else(|| invalid(text, "it did not compile"))
}

/// The descriptor of `.proto` text, or of a base64 `FileDescriptorProto`; groups and
/// editions are refused (neither prints back nor is compared by Confluent's rules).
fn descriptor_of(text: &str) -> Result<FileDescriptorProto, RegistryError> {
    let descriptor = if looks_like_source(text) {
        protox_parse::parse(REGISTERED_FILE, text).map_err(|e| invalid(text, &e.to_string()))?
    } else {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| invalid(text, &format!("neither .proto text nor base64: {e}")))?;
        let mut descriptor = FileDescriptorProto::decode(bytes.as_slice())
            .map_err(|e| invalid(text, &format!("not a FileDescriptorProto: {e}")))?;
        descriptor.source_code_info = None;
        descriptor
    };
    match descriptor.syntax.as_deref() {
        None | Some("proto2") | Some("proto3") => {}
        Some(other) => {
            return Err(invalid(text, &format!("syntax \"{other}\" is not served")));
        }
    }
    if descriptor.message_type.iter().any(has_group) {
        return Err(invalid(text, "proto2 groups are not served"));
    }
    Ok(descriptor)
}

/// `.proto` text has statements; base64 has neither `;` nor `{`.
fn looks_like_source(text: &str) -> bool {
    text.contains(';') || text.contains('{')
}

fn has_group(message: &DescriptorProto) -> bool {
    message
        .field
        .iter()
        .chain(&message.extension)
        .any(|f| f.r#type == Some(Type::Group as i32))
        || message.nested_type.iter().any(has_group)
}

fn invalid(text: &str, detail: &str) -> RegistryError {
    RegistryError::InvalidSchema(format!("{text}, details: {detail}"))
}

/// The files a compilation may import: the schema and its references, then Google's.
struct Sources {
    files: HashMap<String, String>,
}

impl FileResolver for Sources {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        match self.files.get(name) {
            Some(text) => File::from_source(name, text),
            None => GoogleFileResolver::new().open_file(name),
        }
    }
}

#[cfg(test)]
mod tests;
