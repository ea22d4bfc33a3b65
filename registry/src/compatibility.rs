//! A new schema against a subject's earlier versions under a compatibility level, with the
//! messages Confluent's registry gives (`verbose=true` lists them; a refused registration's
//! 409 carries them).

use crate::{CompatibilityLevel, ParsedSchema};

/// One reason two schemas are not compatible, named as Confluent's registry names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub error_type: &'static str,
    pub description: String,
}

/// An earlier version of the subject, live (not deleted).
pub struct Earlier<'a> {
    pub version: i32,
    pub text: &'a str,
    pub schema: &'a ParsedSchema,
}

/// What makes `new` incompatible with `earlier` (oldest first) under `level`: empty when it
/// is compatible. Non-transitive levels check the latest version only; the first version that
/// fails is the one reported.
pub fn check(
    new: &ParsedSchema,
    earlier: &[Earlier<'_>],
    level: CompatibilityLevel,
) -> Vec<String> {
    let checked = if level.transitive() {
        earlier
    } else {
        &earlier[earlier.len().saturating_sub(1)..]
    };
    // Newest first, as a reader would meet them going back.
    for old in checked.iter().rev() {
        let mut problems = Vec::new();
        if level.backward() {
            problems.extend(ParsedSchema::read_problems(old.schema, new));
        }
        if level.forward() {
            problems.extend(ParsedSchema::read_problems(new, old.schema));
        }
        if !problems.is_empty() {
            let mut messages: Vec<String> = problems
                .iter()
                .map(|p| {
                    format!(
                        "{{errorType:'{}', description:'{}'}}",
                        p.error_type, p.description
                    )
                })
                .collect();
            messages.push(format!("{{oldSchemaVersion: {}}}", old.version));
            messages.push(format!("{{oldSchema: '{}'}}", old.text));
            messages.push(format!("{{compatibility: '{}'}}", level.name()));
            return messages;
        }
    }
    Vec::new()
}

/// The message of a registration refused as incompatible (HTTP 409).
pub fn refusal(subject: &str, messages: &[String]) -> String {
    format!(
        "Schema being registered is incompatible with an earlier schema for subject \"{subject}\", details: [{}]",
        messages.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SchemaType;

    fn avro(text: &str) -> ParsedSchema {
        ParsedSchema::parse(SchemaType::Avro, text, &[]).unwrap()
    }

    const A: &str = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#;
    const AB: &str = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"int","default":0}]}"#;
    const B: &str =
        r#"{"type":"record","name":"R","fields":[{"name":"b","type":"int","default":0}]}"#;
    const AC: &str = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"c","type":"int"}]}"#;

    fn earlier<'a>(schemas: &'a [(&'a str, ParsedSchema)]) -> Vec<Earlier<'a>> {
        schemas
            .iter()
            .enumerate()
            .map(|(i, (text, schema))| Earlier {
                version: i as i32 + 1,
                text,
                schema,
            })
            .collect()
    }

    #[test]
    fn levels_check_their_directions_and_versions() {
        use CompatibilityLevel::*;
        let history = [(A, avro(A)), (AB, avro(AB))];
        let history = earlier(&history);
        // B drops `a` (no default): new readers are fine, readers of A are not.
        let b = avro(B);
        assert!(check(&b, &history, Backward).is_empty());
        assert!(!check(&b, &history, Forward).is_empty());
        // AC adds `c` without a default: old data lacks it.
        let ac = avro(AC);
        assert!(!check(&ac, &history, Backward).is_empty());
        assert!(check(&ac, &history, Forward).is_empty());
        assert!(check(&ac, &history, None).is_empty());
        // FULL needs both: readers of AB need `a`, which B's data lacks.
        assert!(!check(&b, &history, Full).is_empty());
        let messages = check(&ac, &history, BackwardTransitive);
        assert!(
            messages[0].contains("READER_FIELD_MISSING_DEFAULT_VALUE"),
            "{messages:?}"
        );
        assert!(
            messages.contains(&"{oldSchemaVersion: 2}".to_string()),
            "{messages:?}"
        );
        assert!(messages.contains(&"{compatibility: 'BACKWARD_TRANSITIVE'}".to_string()));
    }

    #[test]
    fn transitive_reaches_back_past_the_latest() {
        use CompatibilityLevel::*;
        // v1 has `a` required; v2 dropped it; v3 = v2 plus a field with a default. v3 reads
        // v2's data and v1's (extra fields are skipped); but v1 cannot read v3's data.
        let v2 = r#"{"type":"record","name":"R","fields":[]}"#;
        let history = [(A, avro(A)), (v2, avro(v2))];
        let history = earlier(&history);
        let v3 = avro(B);
        assert!(check(&v3, &history, Forward).is_empty());
        let messages = check(&v3, &history, ForwardTransitive);
        assert!(
            messages.contains(&"{oldSchemaVersion: 1}".to_string()),
            "{messages:?}"
        );
    }
}
