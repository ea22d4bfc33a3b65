//! Avro schemas: parsing (with the named types of referenced schemas) and the reader/writer
//! resolution rules of the Avro specification, through the `apache-avro` crate, with its
//! answers named as Confluent's registry names them (`errorType`).

use apache_avro::error::CompatibilityError;
use apache_avro::schema_compatibility::{Compatibility, SchemaCompatibility};
use apache_avro::Schema;

use crate::compatibility::Problem;
use crate::RegistryError;

/// `text` parsed; `references` are the texts of the schemas it refers to (each named type
/// defined once), whose names it may use.
pub fn parse(text: &str, references: &[&str]) -> Result<Schema, RegistryError> {
    parse_with_referenced(text, references).map(|(schema, _)| schema)
}

/// `parse`, with the referenced schemas parsed too (decoding data needs their named types).
pub fn parse_with_referenced(
    text: &str,
    references: &[&str],
) -> Result<(Schema, Vec<Schema>), RegistryError> {
    let parsed = if references.is_empty() {
        Schema::parse_str(text).map(|schema| (schema, Vec::new()))
    } else {
        Schema::parse_str_with_list(text, references)
    };
    parsed.map_err(|e| RegistryError::InvalidSchema(format!("{text}, details: {e}")))
}

/// Why `reader` cannot read everything written with `writer`; empty when it can.
pub fn read_problems(writer: &Schema, reader: &Schema) -> Vec<Problem> {
    match SchemaCompatibility::can_read(writer, reader) {
        Ok(Compatibility::Full) => Vec::new(),
        // Resolution works for some data only: an enum that lacks a symbol the writer has
        // (and no default), or a union that lacks a branch. Avro's own checker and
        // Confluent's registry call both incompatible.
        Ok(Compatibility::Partial) => vec![Problem {
            error_type: "MISSING_ENUM_SYMBOLS_OR_UNION_BRANCH",
            description: "The new schema reads only part of what the old one wrote: an enum \
                          lacks a symbol (and has no default) or a union lacks a branch"
                .to_string(),
        }],
        Err(error) => vec![Problem {
            error_type: error_type(&error),
            description: error.to_string(),
        }],
    }
}

fn error_type(error: &CompatibilityError) -> &'static str {
    match error {
        CompatibilityError::MissingDefaultValue(_) => "READER_FIELD_MISSING_DEFAULT_VALUE",
        CompatibilityError::MissingSymbols => "MISSING_ENUM_SYMBOLS",
        CompatibilityError::MissingUnionElements
        | CompatibilityError::SchemaMismatchAllUnionElements => "MISSING_UNION_BRANCH",
        CompatibilityError::FixedMismatch => "FIXED_SIZE_MISMATCH",
        CompatibilityError::NameMismatch { .. } => "NAME_MISMATCH",
        CompatibilityError::FieldTypeMismatch(..)
        | CompatibilityError::WrongType { .. }
        | CompatibilityError::TypeExpected { .. }
        | CompatibilityError::DecimalMismatch { .. }
        | CompatibilityError::Inconclusive(_) => "TYPE_MISMATCH",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(text: &str) -> Schema {
        parse(text, &[]).unwrap()
    }

    const V1: &str = r#"{"type":"record","name":"User","fields":[{"name":"id","type":"long"}]}"#;

    #[test]
    fn a_new_field_with_a_default_reads_old_data_and_one_without_does_not() {
        let with_default = schema(
            r#"{"type":"record","name":"User","fields":[{"name":"id","type":"long"},
                {"name":"email","type":"string","default":""}]}"#,
        );
        let without = schema(
            r#"{"type":"record","name":"User","fields":[{"name":"id","type":"long"},
                {"name":"email","type":"string"}]}"#,
        );
        assert!(read_problems(&schema(V1), &with_default).is_empty());
        let problems = read_problems(&schema(V1), &without);
        assert_eq!(problems[0].error_type, "READER_FIELD_MISSING_DEFAULT_VALUE");
        assert!(problems[0].description.contains("email"), "{problems:?}");
        // The old reader ignores the new field: forward compatible either way.
        assert!(read_problems(&without, &schema(V1)).is_empty());
    }

    #[test]
    fn the_specification_resolution_rules() {
        // (writer, reader, readable): cases from the Avro specification's "Schema Resolution".
        let cases = [
            (r#""int""#, r#""long""#, true),
            (r#""int""#, r#""double""#, true),
            (r#""long""#, r#""int""#, false),
            (r#""string""#, r#""bytes""#, true),
            (r#""bytes""#, r#""string""#, true),
            (r#""string""#, r#""int""#, false),
            (r#"["null","string"]"#, r#"["null","string","int"]"#, true),
            (r#"["null","string","int"]"#, r#"["null","string"]"#, false),
            (r#""string""#, r#"["null","string"]"#, true),
            (
                r#"{"type":"enum","name":"E","symbols":["A","B"]}"#,
                r#"{"type":"enum","name":"E","symbols":["A","B","C"]}"#,
                true,
            ),
            (
                r#"{"type":"enum","name":"E","symbols":["A","B","C"]}"#,
                r#"{"type":"enum","name":"E","symbols":["A","B"]}"#,
                false,
            ),
            (
                r#"{"type":"enum","name":"E","symbols":["A","B","C"]}"#,
                r#"{"type":"enum","name":"E","symbols":["A","B"],"default":"A"}"#,
                true,
            ),
            (
                r#"{"type":"fixed","name":"F","size":4}"#,
                r#"{"type":"fixed","name":"F","size":8}"#,
                false,
            ),
            (
                r#"{"type":"array","items":"int"}"#,
                r#"{"type":"array","items":"long"}"#,
                true,
            ),
            (
                r#"{"type":"map","values":"long"}"#,
                r#"{"type":"map","values":"int"}"#,
                false,
            ),
            (V1, r#"{"type":"record","name":"User","fields":[]}"#, true),
        ];
        for (writer, reader, readable) in cases {
            let problems = read_problems(&schema(writer), &schema(reader));
            assert_eq!(
                problems.is_empty(),
                readable,
                "{writer} -> {reader}: {problems:?}"
            );
        }
    }

    #[test]
    fn references_lend_their_named_types() {
        let address = r#"{"type":"record","name":"Address","namespace":"a","fields":[
            {"name":"city","type":"string"}]}"#;
        let user =
            r#"{"type":"record","name":"User","fields":[{"name":"home","type":"a.Address"}]}"#;
        assert!(parse(user, &[]).is_err());
        assert!(parse(user, &[address]).is_ok());
    }

    #[test]
    fn bad_schemas_are_invalid_schemas() {
        for bad in [
            "{",
            r#"{"type":"nope"}"#,
            r#"{"type":"record","name":"R"}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"R2"}]}"#,
        ] {
            assert!(
                matches!(parse(bad, &[]), Err(RegistryError::InvalidSchema(_))),
                "{bad}"
            );
        }
    }
}
