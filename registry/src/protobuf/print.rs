//! A file descriptor printed back as `.proto` text: the canonical form a Protobuf schema is
//! stored and answered in. The same schema, however it was indented or commented, prints the
//! same, so it gets the same id. Parsing the printed text gives the printed descriptor again
//! (the tests and the fuzz target hold that).
//!
//! Options are printed from their uninterpreted form (what parsing `.proto` text gives) and,
//! for descriptors sent compiled (base64), from the standard options clients set; custom
//! options inside a compiled descriptor are not kept by `prost-types` and are not printed.

use std::fmt::Write;

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, FileDescriptorProto,
    ServiceDescriptorProto, UninterpretedOption,
};

/// `file` as `.proto` text.
pub fn print(file: &FileDescriptorProto) -> String {
    let mut out = Printer {
        out: String::new(),
        proto3: file.syntax.as_deref() == Some("proto3"),
    };
    out.file(file);
    out.out
}

struct Printer {
    out: String,
    proto3: bool,
}

impl Printer {
    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn file(&mut self, file: &FileDescriptorProto) {
        let syntax = file.syntax.as_deref().unwrap_or("proto2");
        self.line(0, &format!("syntax = {};", quote(syntax.as_bytes())));
        if let Some(package) = &file.package {
            self.line(0, &format!("package {package};"));
        }
        if !file.dependency.is_empty() {
            self.out.push('\n');
        }
        for (i, dependency) in file.dependency.iter().enumerate() {
            let kind = if file.public_dependency.contains(&(i as i32)) {
                "public "
            } else if file.weak_dependency.contains(&(i as i32)) {
                "weak "
            } else {
                ""
            };
            self.line(
                0,
                &format!("import {kind}{};", quote(dependency.as_bytes())),
            );
        }
        let mut options = Vec::new();
        if let Some(o) = &file.options {
            push_string(&mut options, "java_package", &o.java_package);
            push_string(
                &mut options,
                "java_outer_classname",
                &o.java_outer_classname,
            );
            push_plain(&mut options, "java_multiple_files", &o.java_multiple_files);
            push_string(&mut options, "go_package", &o.go_package);
            push_string(&mut options, "csharp_namespace", &o.csharp_namespace);
            push_string(&mut options, "objc_class_prefix", &o.objc_class_prefix);
            push_string(&mut options, "php_namespace", &o.php_namespace);
            push_string(&mut options, "ruby_package", &o.ruby_package);
            push_string(&mut options, "swift_prefix", &o.swift_prefix);
            if let Some(level) = o.optimize_for {
                let name = match level {
                    2 => "CODE_SIZE",
                    3 => "LITE_RUNTIME",
                    _ => "SPEED",
                };
                options.push(format!("optimize_for = {name}"));
            }
            push_plain(&mut options, "cc_enable_arenas", &o.cc_enable_arenas);
            push_plain(&mut options, "deprecated", &o.deprecated);
            options.extend(o.uninterpreted_option.iter().map(uninterpreted));
        }
        if !options.is_empty() {
            self.out.push('\n');
        }
        for option in options {
            self.line(0, &format!("option {option};"));
        }
        for message in &file.message_type {
            self.out.push('\n');
            self.message(0, message);
        }
        for enumeration in &file.enum_type {
            self.out.push('\n');
            self.enumeration(0, enumeration);
        }
        for service in &file.service {
            self.out.push('\n');
            self.service(service);
        }
        if !file.extension.is_empty() {
            self.out.push('\n');
            self.extensions(0, &file.extension);
        }
    }

    fn message(&mut self, depth: usize, message: &DescriptorProto) {
        let name = message.name();
        self.line(depth, &format!("message {name} {{"));
        let inner = depth + 1;
        if let Some(o) = &message.options {
            let mut options = Vec::new();
            push_plain(
                &mut options,
                "message_set_wire_format",
                &o.message_set_wire_format,
            );
            push_plain(&mut options, "deprecated", &o.deprecated);
            options.extend(o.uninterpreted_option.iter().map(uninterpreted));
            for option in options {
                self.line(inner, &format!("option {option};"));
            }
        }
        // Fields in declaration order; a oneof where its first field was, with its fields.
        let mut printed_oneofs = Vec::new();
        for field in &message.field {
            match real_oneof(message, field) {
                Some(index) if !printed_oneofs.contains(&index) => {
                    printed_oneofs.push(index);
                    let oneof = &message.oneof_decl[index as usize];
                    self.line(inner, &format!("oneof {} {{", oneof.name()));
                    if let Some(o) = &oneof.options {
                        for option in o.uninterpreted_option.iter().map(uninterpreted) {
                            self.line(inner + 1, &format!("option {option};"));
                        }
                    }
                    for member in message
                        .field
                        .iter()
                        .filter(|f| real_oneof(message, f) == Some(index))
                    {
                        let text = self.field(message, member, true);
                        self.line(inner + 1, &text);
                    }
                    self.line(inner, "}");
                }
                Some(_) => {}
                None => {
                    let text = self.field(message, field, false);
                    self.line(inner, &text);
                }
            }
        }
        for range in &message.extension_range {
            let (start, end) = (range.start(), range.end() - 1);
            let end = if end >= 536_870_911 {
                "max".to_string()
            } else {
                end.to_string()
            };
            self.line(inner, &format!("extensions {start} to {end};"));
        }
        if !message.reserved_range.is_empty() {
            let ranges: Vec<String> = message
                .reserved_range
                .iter()
                .map(|r| range_text(r.start(), r.end() - 1))
                .collect();
            self.line(inner, &format!("reserved {};", ranges.join(", ")));
        }
        if !message.reserved_name.is_empty() {
            let names: Vec<String> = message
                .reserved_name
                .iter()
                .map(|n| quote(n.as_bytes()))
                .collect();
            self.line(inner, &format!("reserved {};", names.join(", ")));
        }
        for nested in &message.nested_type {
            if is_map_entry(nested) {
                continue;
            }
            self.message(inner, nested);
        }
        for enumeration in &message.enum_type {
            self.enumeration(inner, enumeration);
        }
        if !message.extension.is_empty() {
            self.extensions(inner, &message.extension);
        }
        self.line(depth, "}");
    }

    /// One field as a line (without indentation): label, type, name, number and options.
    fn field(
        &self,
        message: &DescriptorProto,
        field: &FieldDescriptorProto,
        in_oneof: bool,
    ) -> String {
        let mut text = String::new();
        if let Some((key, value)) = map_types(message, field) {
            let _ = write!(text, "map<{key}, {value}>");
        } else {
            let label = match field.label() {
                Label::Repeated => "repeated ",
                Label::Required => "required ",
                Label::Optional if field.proto3_optional() => "optional ",
                Label::Optional if !self.proto3 && !in_oneof => "optional ",
                Label::Optional => "",
            };
            let _ = write!(text, "{label}{}", type_text(field));
        }
        let _ = write!(text, " {} = {}", field.name(), field.number());
        let mut options = Vec::new();
        if let Some(default) = &field.default_value {
            options.push(format!("default = {}", default_text(field, default)));
        }
        if let Some(json_name) = &field.json_name {
            if *json_name != camel_case(field.name()) {
                options.push(format!("json_name = {}", quote(json_name.as_bytes())));
            }
        }
        if let Some(o) = &field.options {
            push_plain(&mut options, "packed", &o.packed);
            push_plain(&mut options, "lazy", &o.lazy);
            push_plain(&mut options, "deprecated", &o.deprecated);
            options.extend(o.uninterpreted_option.iter().map(uninterpreted));
        }
        if !options.is_empty() {
            let _ = write!(text, " [{}]", options.join(", "));
        }
        text.push(';');
        text
    }

    fn enumeration(&mut self, depth: usize, enumeration: &EnumDescriptorProto) {
        self.line(depth, &format!("enum {} {{", enumeration.name()));
        let inner = depth + 1;
        if let Some(o) = &enumeration.options {
            let mut options = Vec::new();
            push_plain(&mut options, "allow_alias", &o.allow_alias);
            push_plain(&mut options, "deprecated", &o.deprecated);
            options.extend(o.uninterpreted_option.iter().map(uninterpreted));
            for option in options {
                self.line(inner, &format!("option {option};"));
            }
        }
        for value in &enumeration.value {
            let mut options = Vec::new();
            if let Some(o) = &value.options {
                push_plain(&mut options, "deprecated", &o.deprecated);
                options.extend(o.uninterpreted_option.iter().map(uninterpreted));
            }
            let suffix = if options.is_empty() {
                String::new()
            } else {
                format!(" [{}]", options.join(", "))
            };
            self.line(
                inner,
                &format!("{} = {}{suffix};", value.name(), value.number()),
            );
        }
        if !enumeration.reserved_range.is_empty() {
            let ranges: Vec<String> = enumeration
                .reserved_range
                .iter()
                .map(|r| range_text(r.start(), r.end()))
                .collect();
            self.line(inner, &format!("reserved {};", ranges.join(", ")));
        }
        if !enumeration.reserved_name.is_empty() {
            let names: Vec<String> = enumeration
                .reserved_name
                .iter()
                .map(|n| quote(n.as_bytes()))
                .collect();
            self.line(inner, &format!("reserved {};", names.join(", ")));
        }
        self.line(depth, "}");
    }

    fn service(&mut self, service: &ServiceDescriptorProto) {
        self.line(0, &format!("service {} {{", service.name()));
        if let Some(o) = &service.options {
            let mut options = Vec::new();
            push_plain(&mut options, "deprecated", &o.deprecated);
            options.extend(o.uninterpreted_option.iter().map(uninterpreted));
            for option in options {
                self.line(1, &format!("option {option};"));
            }
        }
        for method in &service.method {
            let stream = |yes: bool| if yes { "stream " } else { "" };
            let head = format!(
                "rpc {}({}{}) returns ({}{})",
                method.name(),
                stream(method.client_streaming()),
                method.input_type(),
                stream(method.server_streaming()),
                method.output_type()
            );
            let mut options = Vec::new();
            if let Some(o) = &method.options {
                push_plain(&mut options, "deprecated", &o.deprecated);
                options.extend(o.uninterpreted_option.iter().map(uninterpreted));
            }
            if options.is_empty() {
                self.line(1, &format!("{head};"));
            } else {
                self.line(1, &format!("{head} {{"));
                for option in options {
                    self.line(2, &format!("option {option};"));
                }
                self.line(1, "}");
            }
        }
        self.line(0, "}");
    }

    /// Extension fields, one `extend` block for each extended message, in first-seen order.
    fn extensions(&mut self, depth: usize, fields: &[FieldDescriptorProto]) {
        let mut extendees: Vec<&str> = Vec::new();
        for field in fields {
            if !extendees.contains(&field.extendee()) {
                extendees.push(field.extendee());
            }
        }
        let empty = DescriptorProto::default();
        for extendee in extendees {
            self.line(depth, &format!("extend {extendee} {{"));
            for field in fields.iter().filter(|f| f.extendee() == extendee) {
                let text = self.field(&empty, field, false);
                self.line(depth + 1, &text);
            }
            self.line(depth, "}");
        }
    }
}

/// The oneof a field is in, unless it is the synthetic one of a proto3 `optional` field.
fn real_oneof(message: &DescriptorProto, field: &FieldDescriptorProto) -> Option<i32> {
    let index = field.oneof_index?;
    if field.proto3_optional() || message.oneof_decl.get(index as usize).is_none() {
        return None;
    }
    Some(index)
}

fn is_map_entry(message: &DescriptorProto) -> bool {
    message
        .options
        .as_ref()
        .is_some_and(|o| o.map_entry() || o.uninterpreted_option.iter().any(is_map_entry_option))
}

fn is_map_entry_option(option: &UninterpretedOption) -> bool {
    option.name.len() == 1
        && option.name[0].name_part == "map_entry"
        && option.identifier_value.as_deref() == Some("true")
}

/// A repeated field whose type is the message's own map entry: `map<K, V>`.
fn map_types(message: &DescriptorProto, field: &FieldDescriptorProto) -> Option<(String, String)> {
    if field.label() != Label::Repeated {
        return None;
    }
    let type_name = field.type_name.as_deref()?;
    let local = type_name.rsplit('.').next()?;
    let entry = message
        .nested_type
        .iter()
        .find(|n| n.name() == local && is_map_entry(n))?;
    let key = entry.field.iter().find(|f| f.number() == 1)?;
    let value = entry.field.iter().find(|f| f.number() == 2)?;
    Some((type_text(key), type_text(value)))
}

fn type_text(field: &FieldDescriptorProto) -> String {
    if let Some(name) = &field.type_name {
        return name.clone();
    }
    let name = match field.r#type() {
        Type::Double => "double",
        Type::Float => "float",
        Type::Int64 => "int64",
        Type::Uint64 => "uint64",
        Type::Int32 => "int32",
        Type::Fixed64 => "fixed64",
        Type::Fixed32 => "fixed32",
        Type::Bool => "bool",
        Type::String => "string",
        Type::Bytes => "bytes",
        Type::Uint32 => "uint32",
        Type::Sfixed32 => "sfixed32",
        Type::Sfixed64 => "sfixed64",
        Type::Sint32 => "sint32",
        Type::Sint64 => "sint64",
        // Named types carry a type name; parsing refused groups before printing.
        Type::Group | Type::Message | Type::Enum => "bytes",
    };
    name.to_string()
}

/// A proto2 default as `.proto` text writes it: strings and bytes quoted, others as stored.
fn default_text(field: &FieldDescriptorProto, default: &str) -> String {
    match field.r#type {
        Some(t) if t == Type::String as i32 => quote(default.as_bytes()),
        Some(t) if t == Type::Bytes as i32 => quote(&unescape_c(default)),
        _ => default.to_string(),
    }
}

/// The bytes a descriptor's C-escaped bytes default stands for.
fn unescape_c(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 1 < bytes.len() {
            let digits: Vec<u8> = bytes[i + 1..]
                .iter()
                .take(3)
                .take_while(|b| (b'0'..=b'7').contains(b))
                .copied()
                .collect();
            if !digits.is_empty() {
                let value = digits.iter().fold(0u32, |v, d| v * 8 + u32::from(d - b'0'));
                out.push(value as u8);
                i += 1 + digits.len();
                continue;
            }
            out.push(match bytes[i + 1] {
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                other => other,
            });
            i += 2;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

fn range_text(start: i32, end_inclusive: i32) -> String {
    if start == end_inclusive {
        start.to_string()
    } else if end_inclusive >= 536_870_911 {
        format!("{start} to max")
    } else {
        format!("{start} to {end_inclusive}")
    }
}

/// protoc's default JSON name: `foo_bar` → `fooBar`.
fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn push_string(options: &mut Vec<String>, name: &str, value: &Option<String>) {
    if let Some(value) = value {
        options.push(format!("{name} = {}", quote(value.as_bytes())));
    }
}

fn push_plain<T: std::fmt::Display>(options: &mut Vec<String>, name: &str, value: &Option<T>) {
    if let Some(value) = value {
        options.push(format!("{name} = {value}"));
    }
}

/// `name = value` of an option as `.proto` text wrote it.
fn uninterpreted(option: &UninterpretedOption) -> String {
    let name: Vec<String> = option
        .name
        .iter()
        .map(|part| {
            if part.is_extension {
                format!("({})", part.name_part)
            } else {
                part.name_part.clone()
            }
        })
        .collect();
    let value = if let Some(identifier) = &option.identifier_value {
        identifier.clone()
    } else if let Some(n) = option.positive_int_value {
        n.to_string()
    } else if let Some(n) = option.negative_int_value {
        n.to_string()
    } else if let Some(n) = option.double_value {
        format_double(n)
    } else if let Some(bytes) = &option.string_value {
        quote(bytes)
    } else if let Some(aggregate) = &option.aggregate_value {
        format!("{{ {aggregate} }}")
    } else {
        String::new()
    };
    format!("{} = {value}", name.join("."))
}

fn format_double(n: f64) -> String {
    if n.is_nan() {
        "nan".to_string()
    } else if n.is_infinite() {
        if n > 0.0 { "inf" } else { "-inf" }.to_string()
    } else if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{n:.1}")
    } else {
        format!("{n:e}")
    }
}

/// A `.proto` string literal: printable ASCII as is, the rest as octal escapes.
fn quote(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for &b in bytes {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\'' => out.push_str("\\'"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
    out.push('"');
    out
}
