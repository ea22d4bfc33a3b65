//! Schemas from registry clients: the canonical text, parsing as Avro, JSON Schema and
//! Protobuf (with the input's second half as a referenced schema), compatibility checks
//! between the two halves at every level, the record name a subject strategy takes, and the
//! second half decoded as data of the first (what `shoal.schema.validation.decode` does to
//! produced records). Any input gets an answer or an error, never a crash or an unbounded
//! allocation; a canonical text is its own canonical text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_registry::{
    canonical, compatibility, record_name, CompatibilityLevel, Decoder, Earlier, ParsedSchema,
    Referenced, SchemaType,
};

/// Where a Protobuf input's referenced file starts (its text has newlines of its own).
const PROTOBUF_SPLIT: &str = "\n//--\n";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for schema_type in [SchemaType::Avro, SchemaType::Json, SchemaType::Protobuf] {
        // The first schema and the one it may refer to.
        let (first, second) = match schema_type {
            SchemaType::Protobuf => text.split_once(PROTOBUF_SPLIT),
            _ => text.split_once('\n'),
        }
        .unwrap_or((text, ""));
        let _ = record_name(schema_type, first);
        let Ok(first) = ParsedSchema::canonical_text(schema_type, first) else {
            continue;
        };
        let again = ParsedSchema::canonical_text(schema_type, &first).expect("canonical parses");
        assert_eq!(first, again, "the canonical text is its own canonical text");
        let reference = Referenced {
            name: "referenced.proto",
            text: second,
        };
        let Ok(new) = ParsedSchema::parse(schema_type, &first, &[reference]) else {
            continue;
        };
        if schema_type == SchemaType::Protobuf {
            let _ = shoal_registry::protobuf::serialized(&first);
        }
        if let Ok(decoder) = Decoder::new(schema_type, &first, &[]) {
            let _ = decoder.decode(second.as_bytes());
        }
        let Ok(old) = ParsedSchema::parse(schema_type, second, &[]) else {
            continue;
        };
        let earlier = [Earlier {
            version: 1,
            text: second,
            schema: &old,
        }];
        for level in ["BACKWARD", "FORWARD_TRANSITIVE", "FULL"] {
            let level = CompatibilityLevel::parse(level).expect("a level");
            let _ = compatibility::check(&new, &earlier, level);
        }
    }
    let _ = canonical::compact_json(text);
});
