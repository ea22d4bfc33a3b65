//! `shoal schema import FILE`: a Confluent Schema Registry's `_schemas` topic, as `shoal consume
//! --format json` prints it, replayed as Confluent's registry reads it (the latest record of
//! each key counts; a null value deletes), then registered with the same ids and versions in
//! IMPORT mode, soft-deleted versions deleted again, and compatibility levels and subject modes
//! set. So `shoal consume _schemas --bootstrap SOURCE --format json | shoal schema import -`
//! moves a registry, and importing the same topic twice changes nothing.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde_json::{json, Value};

use super::record_json::bytes_from_json;
use super::registry_client::{encode, Registry};
use super::{print_table, AdminError, Format};

/// Passes over the versions still refused because a schema they refer to is not imported yet.
const PASSES_MAX: usize = 8;
/// A line longer than this is refused (a schema is at most a few MiB).
const LINE_MAX_BYTES: u64 = 64 << 20;
/// The registry's code for an invalid schema: a reference not imported yet reads as one.
const INVALID_SCHEMA: u32 = 42201;

/// One subject version of the source registry.
#[derive(Debug, Clone, PartialEq)]
struct Version {
    subject: String,
    version: i64,
    id: i64,
    schema: String,
    schema_type: Option<String>,
    references: Value,
    deleted: bool,
}

/// What the topic's records leave, key by key.
#[derive(Debug, Default)]
struct Replay {
    versions: BTreeMap<(String, i64), Version>,
    /// Compatibility levels: None is the global one.
    levels: BTreeMap<Option<String>, String>,
    modes: BTreeMap<Option<String>, String>,
    /// Records that are not the registry's (or a key type this import does not know).
    skipped: u64,
}

impl Replay {
    fn apply(&mut self, key: &Value, value: Option<&Value>) {
        let subject = key
            .get("subject")
            .and_then(Value::as_str)
            .map(str::to_string);
        match key.get("keytype").and_then(Value::as_str) {
            Some("SCHEMA") => {
                let (Some(subject), Some(version)) =
                    (subject, key.get("version").and_then(Value::as_i64))
                else {
                    self.skipped += 1;
                    return;
                };
                match value.and_then(|v| version_of(v, &subject, version)) {
                    Some(entry) => {
                        self.versions.insert((subject, version), entry);
                    }
                    // A tombstone: the version was deleted permanently.
                    None if value.is_none() => {
                        self.versions.remove(&(subject, version));
                    }
                    None => self.skipped += 1,
                }
            }
            Some("CONFIG") => {
                let level = value
                    .and_then(|v| {
                        v.get("compatibilityLevel")
                            .or_else(|| v.get("compatibility"))
                    })
                    .and_then(Value::as_str);
                match level {
                    Some(level) => {
                        self.levels.insert(subject, level.to_string());
                    }
                    None => {
                        self.levels.remove(&subject);
                    }
                }
            }
            Some("MODE") => match value.and_then(|v| v.get("mode")).and_then(Value::as_str) {
                Some(mode) => {
                    self.modes.insert(subject, mode.to_string());
                }
                None => {
                    self.modes.remove(&subject);
                }
            },
            // Every version up to the record's is soft-deleted.
            Some("DELETE_SUBJECT") => {
                let upto = value.and_then(|v| v.get("version")).and_then(Value::as_i64);
                for ((s, v), entry) in self.versions.iter_mut() {
                    if Some(s) == subject.as_ref() && upto.is_none_or(|upto| *v <= upto) {
                        entry.deleted = true;
                    }
                }
            }
            // Soft-deleted versions up to the record's are gone.
            Some("CLEAR_SUBJECT") => {
                let upto = value.and_then(|v| v.get("version")).and_then(Value::as_i64);
                self.versions.retain(|(s, v), entry| {
                    !(Some(s) == subject.as_ref()
                        && entry.deleted
                        && upto.is_none_or(|upto| *v <= upto))
                });
            }
            Some("NOOP") => {}
            _ => self.skipped += 1,
        }
    }
}

fn version_of(value: &Value, subject: &str, version: i64) -> Option<Version> {
    Some(Version {
        subject: subject.to_string(),
        version,
        id: value.get("id")?.as_i64()?,
        schema: value.get("schema")?.as_str()?.to_string(),
        schema_type: value
            .get("schemaType")
            .and_then(Value::as_str)
            .map(str::to_string),
        references: value.get("references").cloned().unwrap_or(json!([])),
        deleted: value
            .get("deleted")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// The records of `input` (`-`: standard input), one JSON object a line as `shoal consume
/// --format json` prints them, replayed.
fn replay(input: &Path) -> Result<Replay, AdminError> {
    let source: Box<dyn Read> = if input == Path::new("-") {
        Box::new(std::io::stdin())
    } else {
        let file = std::fs::File::open(input)
            .map_err(|e| AdminError::Protocol(format!("cannot read {}: {e}", input.display())))?;
        Box::new(file)
    };
    let mut reader = BufReader::new(source);
    let mut replay = Replay::default();
    let mut line = String::new();
    let mut number = 0;
    loop {
        line.clear();
        number += 1;
        let read = (&mut reader)
            .take(LINE_MAX_BYTES)
            .read_line(&mut line)
            .map_err(|e| AdminError::Protocol(format!("line {number}: {e}")))?;
        if read == 0 {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| AdminError::Protocol(format!("line {number}: {why}"));
        let record: Value = serde_json::from_str(&line).map_err(|e| bad(e.to_string()))?;
        let key = bytes_from_json(&record["key"], "key").map_err(bad)?;
        let value = bytes_from_json(&record["value"], "value").map_err(bad)?;
        let parse = |bytes: Option<Vec<u8>>| bytes.and_then(|b| serde_json::from_slice(&b).ok());
        let Some(key): Option<Value> = parse(key) else {
            replay.skipped += 1;
            continue;
        };
        let value: Option<Value> = parse(value);
        replay.apply(&key, value.as_ref());
    }
    Ok(replay)
}

/// What the import did.
#[derive(Debug, Default)]
struct Outcome {
    registered: u64,
    /// Versions this registry had already, with the same id.
    present: u64,
    deleted: u64,
    settings: u64,
    failed: Vec<String>,
}

pub fn run(registry: &Registry, input: &Path, format: Format) -> Result<(), AdminError> {
    let replay = replay(input)?;
    let previous = registry.call("GET", "/mode", None)?;
    let previous = previous["mode"].as_str().unwrap_or("READWRITE").to_string();
    registry.call("PUT", "/mode?force=true", Some(json!({"mode": "IMPORT"})))?;
    let outcome = import(registry, &replay);
    // The mode the source had (unless IMPORT), else the one this registry had.
    let restored = match replay.modes.get(&None).map(String::as_str) {
        Some(mode) if mode != "IMPORT" => mode.to_string(),
        _ => previous,
    };
    registry.call("PUT", "/mode?force=true", Some(json!({"mode": restored})))?;
    let outcome = outcome?;
    match format {
        Format::Json => println!(
            "{}",
            json!({"registered": outcome.registered, "present": outcome.present,
                   "deleted": outcome.deleted,
                   "settings": outcome.settings, "skipped_records": replay.skipped,
                   "failed": outcome.failed})
        ),
        Format::Table => {
            let rows = vec![
                vec!["versions registered".into(), outcome.registered.to_string()],
                vec!["versions already here".into(), outcome.present.to_string()],
                vec!["versions soft-deleted".into(), outcome.deleted.to_string()],
                vec!["settings set".into(), outcome.settings.to_string()],
                vec!["records skipped".into(), replay.skipped.to_string()],
                vec!["failed".into(), outcome.failed.len().to_string()],
            ];
            print_table(&["IMPORT", "COUNT"], &rows);
            for failure in &outcome.failed {
                eprintln!("{failure}");
            }
        }
    }
    match outcome.failed.is_empty() {
        true => Ok(()),
        false => Err(AdminError::Protocol(format!(
            "{} versions or settings were not imported",
            outcome.failed.len()
        ))),
    }
}

fn import(registry: &Registry, replay: &Replay) -> Result<Outcome, AdminError> {
    let mut outcome = Outcome::default();
    // By id: a schema's references were registered before it in the source.
    let mut pending: Vec<&Version> = replay.versions.values().collect();
    pending.sort_by(|a, b| (a.id, &a.subject, a.version).cmp(&(b.id, &b.subject, b.version)));
    for _ in 0..PASSES_MAX {
        let mut waiting = Vec::new();
        for version in pending {
            let mut body = json!({"schema": version.schema, "references": version.references,
                                  "id": version.id, "version": version.version});
            if let Some(schema_type) = &version.schema_type {
                body["schemaType"] = json!(schema_type);
            }
            let path = format!("/subjects/{}/versions", encode(&version.subject));
            match registry.call("POST", &path, Some(body)) {
                Ok(_) => outcome.registered += 1,
                Err(AdminError::Registry { code, .. })
                    if code == INVALID_SCHEMA && version.references != json!([]) =>
                {
                    waiting.push(version)
                }
                // Imported before (live or soft-deleted): the same id under that version.
                Err(AdminError::Registry { .. }) if present(registry, version)? => {
                    outcome.present += 1
                }
                Err(AdminError::Registry { code, message, .. }) => outcome.failed.push(format!(
                    "{} version {} (id {}): {code} {message}",
                    version.subject, version.version, version.id
                )),
                Err(other) => return Err(other),
            }
        }
        if waiting.is_empty() {
            pending = waiting;
            break;
        }
        pending = waiting;
    }
    for version in pending {
        outcome.failed.push(format!(
            "{} version {} (id {}): its references were never imported",
            version.subject, version.version, version.id
        ));
    }
    for version in replay.versions.values().filter(|v| v.deleted) {
        let path = format!(
            "/subjects/{}/versions/{}",
            encode(&version.subject),
            version.version
        );
        match registry.call("DELETE", &path, None) {
            Ok(_) => outcome.deleted += 1,
            // Soft-deleted already (an import run before): the version, or its whole subject.
            Err(AdminError::Registry {
                code: 40401 | 40402 | 40406,
                ..
            }) => {}
            Err(AdminError::Registry { code, message, .. }) => outcome
                .failed
                .push(format!("deleting {path}: {code} {message}")),
            Err(other) => return Err(other),
        }
    }
    let settings = replay
        .levels
        .iter()
        .map(|(subject, level)| ("config", subject, json!({"compatibility": level})))
        .chain(
            replay
                .modes
                .iter()
                .filter(|(subject, mode)| subject.is_some() && *mode != "IMPORT")
                .map(|(subject, mode)| ("mode", subject, json!({"mode": mode}))),
        );
    for (resource, subject, body) in settings {
        let path = match subject {
            Some(subject) => format!("/{resource}/{}", encode(subject)),
            None => format!("/{resource}"),
        };
        match registry.call("PUT", &path, Some(body)) {
            Ok(_) => outcome.settings += 1,
            Err(AdminError::Registry { code, message, .. }) => outcome
                .failed
                .push(format!("setting {path}: {code} {message}")),
            Err(other) => return Err(other),
        }
    }
    Ok(outcome)
}

/// Whether the registry has `version` already (soft-deleted or not) with its id.
fn present(registry: &Registry, version: &Version) -> Result<bool, AdminError> {
    let path = format!(
        "/subjects/{}/versions/{}?deleted=true",
        encode(&version.subject),
        version.version
    );
    match registry.call("GET", &path, None) {
        Ok(found) => Ok(found["id"].as_i64() == Some(version.id)),
        Err(AdminError::Registry { .. }) => Ok(false),
        Err(other) => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(keytype: &str, subject: Option<&str>, version: Option<i64>) -> Value {
        json!({"keytype": keytype, "subject": subject, "version": version, "magic": 1})
    }

    fn schema(subject: &str, version: i64, id: i64) -> Value {
        json!({"subject": subject, "version": version, "id": id, "schema": "\"string\"",
               "deleted": false})
    }

    #[test]
    fn the_latest_record_of_each_key_counts() {
        let mut replay = Replay::default();
        replay.apply(&key("SCHEMA", Some("a"), Some(1)), Some(&schema("a", 1, 1)));
        replay.apply(&key("SCHEMA", Some("a"), Some(2)), Some(&schema("a", 2, 2)));
        replay.apply(&key("SCHEMA", Some("b"), Some(1)), Some(&schema("b", 1, 1)));
        replay.apply(
            &key("CONFIG", None, None),
            Some(&json!({"compatibilityLevel": "FULL"})),
        );
        replay.apply(
            &key("CONFIG", Some("a"), None),
            Some(&json!({"compatibilityLevel": "NONE"})),
        );
        replay.apply(&key("CONFIG", Some("a"), None), None);
        // b is soft-deleted, then its soft-deleted versions cleared; a's version 2 is
        // deleted permanently (a tombstone).
        replay.apply(
            &key("DELETE_SUBJECT", Some("b"), None),
            Some(&json!({"subject": "b", "version": 1})),
        );
        assert!(replay.versions[&("b".to_string(), 1)].deleted);
        replay.apply(
            &key("CLEAR_SUBJECT", Some("b"), None),
            Some(&json!({"subject": "b", "version": 1})),
        );
        replay.apply(&key("SCHEMA", Some("a"), Some(2)), None);
        replay.apply(&json!({"something": "else"}), None);
        assert_eq!(
            replay.versions.keys().collect::<Vec<_>>(),
            [&("a".to_string(), 1)]
        );
        assert_eq!(replay.levels.get(&None).map(String::as_str), Some("FULL"));
        assert!(!replay.levels.contains_key(&Some("a".to_string())));
        assert_eq!(replay.skipped, 1);
    }
}
