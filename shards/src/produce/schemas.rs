//! Records checked against the schema registry, for topics with Confluent's
//! `confluent.key.schema.validation` / `confluent.value.schema.validation`: each checked part
//! must start with Confluent's wire-format prefix (magic byte 0, a 4-byte schema id), and the
//! id must be live under the subject the topic's name strategy gives. What an id stands for
//! comes from the coordinator and is kept a short while per shard (ids never change meaning;
//! the subjects they are live under rarely do), so steady produce asks nothing. With
//! `shoal.schema.validation.decode` each checked part's data must also decode with its
//! schema; the decoder is built once per id and shard.

use std::cell::{OnceCell, RefCell};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use shoal_coordinator::commands::{IdInUse, RegistryIdSubjects};
use shoal_coordinator::state::schema_registry::ReferencedSchema;
use shoal_coordinator::{ErrorKind, SchemaValidation, SubjectNameStrategy};
use shoal_registry::wire::{self, schema_id};
use shoal_registry::Decoder;
use shoal_wal::records::{with_keyed_records, FieldHead, FieldHeads, KeyedRecord};
use shoal_wal::BatchHeader;

use super::validate::Refusal;
use crate::rpc::CoordinatorClient;

/// How long what an id stands for is trusted before it is asked again: a schema deleted from
/// a subject is refused on every shard within this long.
const KNOWN_FOR: Duration = Duration::from_secs(10);
/// An id nobody registered is asked again sooner: it may be registered any moment.
const UNKNOWN_FOR: Duration = Duration::from_secs(1);
/// Ids remembered per shard; past this the memory is cleared.
const IDS_MAX: usize = 10_000;

/// A topic's validation, with its name for the subjects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaRule {
    pub validation: SchemaValidation,
    pub topic: Arc<str>,
}

/// What an id stands for: the subjects it is live under, its record name, and (to decode
/// with) the schema, built into a decoder the first time a record needs it.
struct Known {
    subjects: Vec<String>,
    record_name: Option<String>,
    used: IdInUse,
    decoder: OnceCell<Result<Decoder, String>>,
}

impl Known {
    fn decode(&self, data: &[u8]) -> Result<(), String> {
        let decoder = self.decoder.get_or_init(|| {
            let referenced: Vec<_> = self
                .used
                .referenced
                .iter()
                .map(ReferencedSchema::as_referenced)
                .collect();
            Decoder::new(
                self.used.schema.schema_type,
                &self.used.schema.text,
                &referenced,
            )
            .map_err(|e| e.to_string())
        });
        match decoder {
            Ok(decoder) => decoder.decode(data),
            Err(error) => Err(error.clone()),
        }
    }
}

struct Remembered {
    known: Option<Rc<Known>>,
    at: Instant,
}

pub struct SchemaChecker {
    coordinator: Rc<CoordinatorClient>,
    ids: RefCell<HashMap<i32, Remembered>>,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Part {
    Key,
    Value,
}

/// (index in its batch, key id, value id) of every record of the payload's data batches.
type RecordIds = Vec<(i32, Option<i32>, Option<i32>)>;

fn record_ids(
    records: &Bytes,
    headers: &[BatchHeader],
    inflated_max: usize,
) -> Result<RecordIds, Refusal> {
    let mut ids = Vec::new();
    for_each_data_record(records, headers, inflated_max, |r| {
        ids.push((r.offset_delta, schema_id(r.key), schema_id(r.value)))
    })?;
    Ok(ids)
}

/// `visit` gets every record of the payload's data batches, in order.
fn for_each_data_record(
    records: &Bytes,
    headers: &[BatchHeader],
    inflated_max: usize,
    mut visit: impl FnMut(&KeyedRecord<'_>),
) -> Result<(), Refusal> {
    let mut at = 0;
    for header in headers {
        let batch = &records[at..at + header.size_bytes];
        at += header.size_bytes;
        if header.is_control() {
            continue;
        }
        // The payload was checked already: a failure here is the same INVALID_RECORD.
        with_keyed_records(batch, header, inflated_max, |parsed| {
            parsed.iter().for_each(&mut visit)
        })
        .map_err(|_| Refusal::from(ErrorKind::InvalidRecord))?;
    }
    Ok(())
}

impl SchemaChecker {
    pub fn new(coordinator: Rc<CoordinatorClient>) -> SchemaChecker {
        SchemaChecker {
            coordinator,
            ids: RefCell::new(HashMap::new()),
        }
    }

    /// Ok when every record's checked parts name a schema live under their subject (and,
    /// with `decode`, decode with it); else INVALID_RECORD naming the records that do not.
    /// `heads`: the records' key and value heads when the payload's checks read them.
    pub async fn check(
        &self,
        records: &Bytes,
        headers: &[BatchHeader],
        heads: Option<&[FieldHeads]>,
        rule: &SchemaRule,
        inflated_max: usize,
    ) -> Result<(), Refusal> {
        let ids = match heads {
            Some(heads) => heads
                .iter()
                .map(|h| {
                    let id =
                        |head: Option<FieldHead>| schema_id(head.as_ref().map(FieldHead::as_slice));
                    (h.offset_delta, id(h.key), id(h.value))
                })
                .collect(),
            None => record_ids(records, headers, inflated_max)?,
        };
        // Each (id, part) is decided once per payload: records mostly share one schema.
        let mut decided: HashMap<(i32, Part), Option<Rc<Known>>> = HashMap::new();
        let mut bad = Vec::new();
        for (index, key, value) in ids {
            let mut fine = true;
            for (checked, id, part) in [
                (rule.validation.key, key, Part::Key),
                (rule.validation.value, value, Part::Value),
            ] {
                if !checked {
                    continue;
                }
                let Some(id) = id else {
                    fine = false;
                    continue;
                };
                fine &= match decided.entry((id, part)) {
                    Entry::Occupied(found) => found.get().is_some(),
                    Entry::Vacant(place) => {
                        let known = self.known(id).await?.filter(|k| allowed(k, rule, part));
                        place.insert(known).is_some()
                    }
                };
            }
            if !fine {
                bad.push(index);
            }
        }
        if !bad.is_empty() {
            return Err(Refusal {
                error: ErrorKind::UnregisteredSchema,
                records: bad,
            });
        }
        if rule.validation.decode {
            let undecodable = undecodable(records, headers, rule, &decided, inflated_max)?;
            if !undecodable.is_empty() {
                return Err(Refusal {
                    error: ErrorKind::UndecodableRecord,
                    records: undecodable,
                });
            }
        }
        Ok(())
    }

    /// What `id` stands for, remembered or asked; a coordinator that does not answer is a
    /// retriable error, never a refusal of good records.
    async fn known(&self, id: i32) -> Result<Option<Rc<Known>>, Refusal> {
        if let Some(remembered) = self.ids.borrow().get(&id) {
            let trusted = if remembered.known.is_some() {
                KNOWN_FOR
            } else {
                UNKNOWN_FOR
            };
            if remembered.at.elapsed() < trusted {
                return Ok(remembered.known.clone());
            }
        }
        let answer = self
            .coordinator
            .run(RegistryIdSubjects { id })
            .await
            .map_err(|_| Refusal::from(ErrorKind::NotAvailable))?;
        let known = answer.map(|used| {
            Rc::new(Known {
                subjects: used.subjects.clone(),
                record_name: shoal_registry::record_name(
                    used.schema.schema_type,
                    &used.schema.text,
                ),
                used,
                decoder: OnceCell::new(),
            })
        });
        let mut ids = self.ids.borrow_mut();
        if ids.len() >= IDS_MAX {
            ids.clear();
        }
        ids.insert(
            id,
            Remembered {
                known: known.clone(),
                at: Instant::now(),
            },
        );
        Ok(known)
    }
}

/// The records (by index in their batch) whose checked parts do not decode with their
/// schemas; every checked part is known to name one (`decided`).
fn undecodable(
    records: &Bytes,
    headers: &[BatchHeader],
    rule: &SchemaRule,
    decided: &HashMap<(i32, Part), Option<Rc<Known>>>,
    inflated_max: usize,
) -> Result<Vec<i32>, Refusal> {
    let mut bad = Vec::new();
    for_each_data_record(records, headers, inflated_max, |record| {
        let fine = [
            (rule.validation.key, record.key, Part::Key),
            (rule.validation.value, record.value, Part::Value),
        ]
        .into_iter()
        .filter(|(checked, _, _)| *checked)
        .all(|(_, bytes, part)| {
            let (Some(id), Some(data)) = (schema_id(bytes), bytes.and_then(wire::data)) else {
                return false;
            };
            decided
                .get(&(id, part))
                .and_then(Option::as_ref)
                .is_some_and(|known| known.decode(data).is_ok())
        });
        if !fine {
            bad.push(record.offset_delta);
        }
    })?;
    Ok(bad)
}

/// Whether a schema is live under the subject `rule` names for `part`.
fn allowed(known: &Known, rule: &SchemaRule, part: Part) -> bool {
    let (strategy, suffix) = match part {
        Part::Key => (rule.validation.key_strategy, "key"),
        Part::Value => (rule.validation.value_strategy, "value"),
    };
    let subject = match (strategy, &known.record_name) {
        (SubjectNameStrategy::Topic, _) => format!("{}-{suffix}", rule.topic),
        (SubjectNameStrategy::Record, Some(name)) => name.clone(),
        (SubjectNameStrategy::TopicRecord, Some(name)) => format!("{}-{name}", rule.topic),
        (_, None) => return false,
    };
    known.subjects.contains(&subject)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_by_strategy() {
        let subjects: Vec<String> = vec!["t-value".into(), "a.User".into(), "t-a.User".into()];
        let known = Known {
            subjects: subjects.clone(),
            record_name: Some("a.User".into()),
            used: IdInUse {
                schema: shoal_coordinator::state::schema_registry::StoredSchema {
                    schema_type: shoal_registry::SchemaType::Avro,
                    text: r#"{"type":"record","name":"User","namespace":"a","fields":[]}"#.into(),
                    references: Vec::new(),
                },
                subjects,
                referenced: Vec::new(),
            },
            decoder: OnceCell::new(),
        };
        let rule = |strategy| SchemaRule {
            validation: SchemaValidation {
                value: true,
                value_strategy: strategy,
                ..SchemaValidation::default()
            },
            topic: "t".into(),
        };
        for strategy in [
            SubjectNameStrategy::Topic,
            SubjectNameStrategy::Record,
            SubjectNameStrategy::TopicRecord,
        ] {
            assert!(allowed(&known, &rule(strategy), Part::Value));
            // The key's subject (t-key under the default strategy) holds no schema.
            assert!(!allowed(&known, &rule(strategy), Part::Key));
        }
        let other = SchemaRule {
            topic: "u".into(),
            ..rule(SubjectNameStrategy::Topic)
        };
        assert!(!allowed(&known, &other, Part::Value));
    }
}
