//! Schemas from registry clients: the canonical text, parsing as Avro and as JSON Schema (with
//! the input's second half as a referenced schema), compatibility checks between the two
//! halves at every level, and the record name a subject strategy takes. Any input gets an
//! answer or an error, never a crash or an unbounded allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_registry::{
    canonical, compatibility, record_name, CompatibilityLevel, Earlier, ParsedSchema, SchemaType,
};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The first schema and the one it may refer to, split at the first newline.
    let (first, second) = text.split_once('\n').unwrap_or((text, ""));
    for schema_type in [SchemaType::Avro, SchemaType::Json] {
        let _ = record_name(schema_type, first);
        let Ok(first) = ParsedSchema::canonical_text(schema_type, first) else {
            continue;
        };
        let Ok(new) = ParsedSchema::parse(schema_type, &first, &[second]) else {
            continue;
        };
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
