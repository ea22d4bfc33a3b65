//! The schema registry's state: schemas by id, subjects' versions, and the compatibility and
//! mode settings; what registration and deletion may do to them, and the records they write.
//! Compatibility itself is checked by the broker before it registers (parsing schemas is no
//! work for the coordinator's rounds), against live versions it names: a registration whose
//! subject changed since is answered `Stale` and checked again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use shoal_protocol::records::{
    AnyRecord, ShoalRegistryNextIdRecord, ShoalRegistryReference, ShoalRegistrySchemaRecord,
    ShoalRegistrySettingRecord, ShoalRegistryVersionDeletedRecord, ShoalRegistryVersionRecord,
};
use shoal_registry::{
    CompatibilityLevel, Mode, RegistryError, SchemaReference, SchemaType, VersionSelector,
};

use super::CoordinatorState;

/// A schema a reference names, as parsing the referring schema needs it: the name the
/// reference gives it (a Protobuf import path) and its stored text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferencedSchema {
    pub name: String,
    pub text: Arc<str>,
}

impl ReferencedSchema {
    pub fn as_referenced(&self) -> shoal_registry::Referenced<'_> {
        shoal_registry::Referenced {
            name: &self.name,
            text: &self.text,
        }
    }
}

/// A registered schema: what an id stands for, for ever.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StoredSchema {
    pub schema_type: SchemaType,
    /// The canonical text (`shoal_registry::ParsedSchema::canonical_text`).
    pub text: Arc<str>,
    pub references: Vec<SchemaReference>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubjectVersion {
    pub id: i32,
    /// Soft-deleted: kept for lookups that ask for deleted versions, and for ids.
    pub deleted: bool,
}

pub use crate::registry_records::{SETTING_COMPATIBILITY, SETTING_MODE};

/// A registration's view of its subject when the broker checked compatibility: it goes
/// ahead only if the subject still looks the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation {
    /// (version, id) of each live version, in version order.
    pub live: Vec<(i32, i32)>,
    pub level: CompatibilityLevel,
    pub mode: Mode,
}

/// Bounds a registration is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistryLimits {
    pub subjects_max: usize,
    pub versions_per_subject_max: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registration {
    /// Registered now, or found already registered in the subject.
    Registered { id: i32, version: i32 },
    /// The subject changed since the caller checked it: check again.
    Stale,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SchemaRegistry {
    schemas: BTreeMap<i32, StoredSchema>,
    /// The id of each schema (derived from `schemas`).
    ids: HashMap<StoredSchema, i32>,
    subjects: BTreeMap<String, BTreeMap<i32, SubjectVersion>>,
    /// Ids below this were given (some maybe deleted since): never given again.
    next_id: i32,
    compatibility: BTreeMap<Option<String>, CompatibilityLevel>,
    modes: BTreeMap<Option<String>, Mode>,
}

impl SchemaRegistry {
    pub fn schema(&self, id: i32) -> Option<&StoredSchema> {
        self.schemas.get(&id)
    }

    pub fn id_of(&self, schema: &StoredSchema) -> Option<i32> {
        self.ids.get(schema).copied()
    }

    /// Subjects starting with `prefix` that have a live version (or any, with `deleted`).
    pub fn subjects(&self, prefix: &str, deleted: bool) -> Vec<String> {
        self.subjects
            .range(prefix.to_string()..)
            .take_while(|(name, _)| name.starts_with(prefix))
            .filter(|(_, versions)| deleted || versions.values().any(|v| !v.deleted))
            .map(|(name, _)| name.clone())
            .collect()
    }

    fn versions_of(&self, subject: &str) -> Result<&BTreeMap<i32, SubjectVersion>, RegistryError> {
        self.subjects
            .get(subject)
            .ok_or_else(|| RegistryError::SubjectNotFound(subject.to_string()))
    }

    /// A subject's version numbers, live ones (or all, with `deleted`); a subject with none
    /// to list is not found.
    pub fn versions(&self, subject: &str, deleted: bool) -> Result<Vec<i32>, RegistryError> {
        let listed: Vec<i32> = self.listed(subject, deleted).map(|(n, _)| n).collect();
        if listed.is_empty() {
            return Err(RegistryError::SubjectNotFound(subject.to_string()));
        }
        Ok(listed)
    }

    /// (version, its schema's id) of the live versions, in order.
    pub fn live(&self, subject: &str) -> Vec<(i32, i32)> {
        self.listed(subject, false)
            .map(|(n, v)| (n, v.id))
            .collect()
    }

    /// A subject's versions in order with their entries: live ones (or all, with `deleted`);
    /// none for an unknown subject.
    pub fn listed(
        &self,
        subject: &str,
        deleted: bool,
    ) -> impl Iterator<Item = (i32, SubjectVersion)> + '_ {
        self.subjects
            .get(subject)
            .into_iter()
            .flatten()
            .filter(move |(_, v)| deleted || !v.deleted)
            .map(|(n, v)| (*n, *v))
    }

    /// The version `selector` names: (number, entry). `latest` is the newest live one (the
    /// newest of all, with `deleted`).
    pub fn version(
        &self,
        subject: &str,
        selector: VersionSelector,
        deleted: bool,
    ) -> Result<(i32, SubjectVersion), RegistryError> {
        let versions = self.versions_of(subject)?;
        let found = match selector {
            VersionSelector::Latest => versions
                .iter()
                .rev()
                .find(|(_, v)| deleted || !v.deleted)
                .map(|(n, v)| (*n, *v)),
            VersionSelector::Number(n) => versions
                .get(&n)
                .filter(|v| deleted || !v.deleted)
                .map(|v| (n, *v)),
        };
        match found {
            Some(found) => Ok(found),
            None if versions.values().all(|v| v.deleted) && !deleted => {
                Err(RegistryError::SubjectNotFound(subject.to_string()))
            }
            None => Err(RegistryError::VersionNotFound(selector.to_string())),
        }
    }

    /// The version of `subject` whose schema is `schema`: the newest live one (or any, with
    /// `deleted`).
    pub fn find_in_subject(
        &self,
        subject: &str,
        schema: &StoredSchema,
        deleted: bool,
    ) -> Option<(i32, SubjectVersion)> {
        let id = self.id_of(schema)?;
        self.subjects
            .get(subject)?
            .iter()
            .rev()
            .find(|(_, v)| v.id == id && (deleted || !v.deleted))
            .map(|(n, v)| (*n, *v))
    }

    /// (subject, version) pairs that use schema `id` (deleted ones too, with `deleted`).
    pub fn usages(&self, id: i32, deleted: bool) -> Vec<(String, i32)> {
        self.subjects
            .iter()
            .flat_map(|(subject, versions)| {
                versions
                    .iter()
                    .filter(move |(_, v)| v.id == id && (deleted || !v.deleted))
                    .map(move |(n, _)| (subject.clone(), *n))
            })
            .collect()
    }

    /// Ids of the live schemas whose references name `subject` `version`.
    pub fn referenced_by(&self, subject: &str, version: i32) -> Vec<i32> {
        let live: BTreeSet<i32> = self
            .subjects
            .values()
            .flat_map(|versions| versions.values().filter(|v| !v.deleted).map(|v| v.id))
            .collect();
        self.schemas
            .iter()
            .filter(|(id, s)| {
                live.contains(id)
                    && s.references
                        .iter()
                        .any(|r| r.subject == subject && r.version == version)
            })
            .map(|(id, _)| *id)
            .collect()
    }

    /// The schemas `references` name, each one's own references before it and every schema
    /// once; at most `count_max` schemas, `depth_max` levels deep.
    pub fn resolve_references(
        &self,
        references: &[SchemaReference],
        depth_max: usize,
        count_max: usize,
    ) -> Result<Vec<ReferencedSchema>, RegistryError> {
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        self.resolve_into(references, depth_max, count_max, &mut seen, &mut out)?;
        Ok(out)
    }

    fn resolve_into(
        &self,
        references: &[SchemaReference],
        depth_left: usize,
        count_max: usize,
        seen: &mut BTreeSet<i32>,
        out: &mut Vec<ReferencedSchema>,
    ) -> Result<(), RegistryError> {
        if references.is_empty() {
            return Ok(());
        }
        if depth_left == 0 {
            return Err(RegistryError::InvalidSchema(
                "references nest too deep".to_string(),
            ));
        }
        for reference in references {
            let (_, version) = self
                .version(
                    &reference.subject,
                    VersionSelector::Number(reference.version),
                    false,
                )
                .map_err(|_| {
                    RegistryError::InvalidSchema(format!(
                        "reference {} names subject '{}' version {}, which is not registered",
                        reference.name, reference.subject, reference.version
                    ))
                })?;
            if !seen.insert(version.id) {
                continue;
            }
            let schema = self.schemas.get(&version.id).expect("a version's schema");
            self.resolve_into(&schema.references, depth_left - 1, count_max, seen, out)?;
            if out.len() >= count_max {
                return Err(RegistryError::InvalidSchema(format!(
                    "more than {count_max} referenced schemas"
                )));
            }
            out.push(ReferencedSchema {
                name: reference.name.clone(),
                text: schema.text.clone(),
            });
        }
        Ok(())
    }

    /// The subject's own level, or None.
    pub fn level(&self, subject: Option<&str>) -> Option<CompatibilityLevel> {
        self.compatibility
            .get(&subject.map(str::to_string))
            .copied()
    }

    /// The level a registration under `subject` is checked at: its own, else the global one,
    /// else BACKWARD.
    pub fn effective_level(&self, subject: &str) -> CompatibilityLevel {
        self.level(Some(subject))
            .or_else(|| self.level(None))
            .unwrap_or(CompatibilityLevel::DEFAULT)
    }

    pub fn mode(&self, subject: Option<&str>) -> Option<Mode> {
        self.modes.get(&subject.map(str::to_string)).copied()
    }

    pub fn effective_mode(&self, subject: &str) -> Mode {
        self.mode(Some(subject))
            .or_else(|| self.mode(None))
            .unwrap_or(Mode::DEFAULT)
    }

    pub fn is_empty(&self) -> bool {
        self.subjects.is_empty()
    }

    /// What registering `schema` under `subject` writes; `id` and `version` are the caller's
    /// (IMPORT mode).
    pub fn register(
        &self,
        subject: &str,
        schema: &StoredSchema,
        requested: (Option<i32>, Option<i32>),
        expected: Option<&Expectation>,
        limits: RegistryLimits,
    ) -> Result<(Registration, Vec<AnyRecord>), RegistryError> {
        let mode = self.effective_mode(subject);
        if mode == Mode::ReadOnly {
            return Err(RegistryError::OperationNotPermitted(format!(
                "Subject {subject} is in read-only mode"
            )));
        }
        let (requested_id, requested_version) = requested;
        if let Some(expected) = expected {
            let now = Expectation {
                live: self.live(subject),
                level: self.effective_level(subject),
                mode,
            };
            if *expected != now {
                return Ok((Registration::Stale, Vec::new()));
            }
        }
        let existing_id = self.id_of(schema);
        if let (Some(requested), Some(existing)) = (requested_id, existing_id) {
            if requested != existing {
                return Err(RegistryError::IdDoesNotMatch {
                    existing,
                    requested,
                });
            }
        }
        if let Some((version, found)) = self.find_in_subject(subject, schema, false) {
            return Ok((
                Registration::Registered {
                    id: found.id,
                    version,
                },
                Vec::new(),
            ));
        }
        let id = match (existing_id, requested_id) {
            (Some(id), _) => id,
            (None, Some(requested)) => {
                if mode != Mode::Import {
                    return Err(RegistryError::OperationNotPermitted(format!(
                        "Overwrite new schema with id {requested} is not permitted: a schema is registered with a chosen id only in IMPORT mode"
                    )));
                }
                if requested < 1 {
                    return Err(RegistryError::BadRequest(format!(
                        "schema id {requested} is not positive"
                    )));
                }
                if self.schemas.contains_key(&requested) {
                    return Err(RegistryError::OperationNotPermitted(format!(
                        "Overwrite new schema with id {requested} is not permitted."
                    )));
                }
                requested
            }
            (None, None) => self.next_id.max(1),
        };
        let versions = self.subjects.get(subject);
        if versions.is_none() && self.subjects.len() >= limits.subjects_max {
            return Err(RegistryError::OperationNotPermitted(format!(
                "the registry holds its limit of {} subjects",
                limits.subjects_max
            )));
        }
        let count = versions.map_or(0, BTreeMap::len);
        if count >= limits.versions_per_subject_max {
            return Err(RegistryError::OperationNotPermitted(format!(
                "subject '{subject}' holds its limit of {} versions",
                limits.versions_per_subject_max
            )));
        }
        let newest = versions
            .and_then(|v| v.keys().next_back().copied())
            .unwrap_or(0);
        let version = match requested_version {
            Some(v) if mode == Mode::Import => {
                if v < 1 || versions.is_some_and(|vs| vs.contains_key(&v)) {
                    return Err(RegistryError::InvalidVersion(v.to_string()));
                }
                v
            }
            _ => newest.checked_add(1).ok_or_else(|| {
                RegistryError::OperationNotPermitted(format!(
                    "subject '{subject}' has no versions left"
                ))
            })?,
        };
        let mut records = Vec::new();
        if existing_id.is_none() {
            records.push(schema_record(id, schema));
        }
        records.push(version_record(subject, version, id, false));
        Ok((Registration::Registered { id, version }, records))
    }

    /// The versions a subject delete removes and the records it writes.
    pub fn delete_subject(
        &self,
        subject: &str,
        permanent: bool,
    ) -> Result<(Vec<i32>, Vec<AnyRecord>), RegistryError> {
        self.writable(subject)?;
        let versions = self.versions_of(subject)?;
        let live: Vec<i32> = versions
            .iter()
            .filter(|(_, v)| !v.deleted)
            .map(|(n, _)| *n)
            .collect();
        if permanent {
            if !live.is_empty() {
                return Err(RegistryError::SubjectNotSoftDeleted(subject.to_string()));
            }
            let all: Vec<i32> = versions.keys().copied().collect();
            let records = all.iter().map(|v| deleted_record(subject, *v)).collect();
            return Ok((all, records));
        }
        if live.is_empty() {
            return Err(RegistryError::SubjectSoftDeleted(subject.to_string()));
        }
        for version in &live {
            self.unreferenced(subject, *version)?;
        }
        let records = live
            .iter()
            .map(|v| version_record(subject, *v, versions[v].id, true))
            .collect();
        Ok((live, records))
    }

    /// The version a version delete removes and the record it writes.
    pub fn delete_version(
        &self,
        subject: &str,
        selector: VersionSelector,
        permanent: bool,
    ) -> Result<(i32, AnyRecord), RegistryError> {
        self.writable(subject)?;
        // Permanent deletes name soft-deleted versions; `latest` is the newest live one.
        let (number, version) = self.version(subject, selector, permanent)?;
        if permanent {
            if !version.deleted {
                return Err(RegistryError::VersionNotSoftDeleted(
                    subject.to_string(),
                    number,
                ));
            }
            return Ok((number, deleted_record(subject, number)));
        }
        if version.deleted {
            return Err(RegistryError::VersionSoftDeleted(
                subject.to_string(),
                number,
            ));
        }
        self.unreferenced(subject, number)?;
        Ok((number, version_record(subject, number, version.id, true)))
    }

    fn writable(&self, subject: &str) -> Result<(), RegistryError> {
        if self.effective_mode(subject) == Mode::ReadOnly {
            return Err(RegistryError::OperationNotPermitted(format!(
                "Subject {subject} is in read-only mode"
            )));
        }
        Ok(())
    }

    fn unreferenced(&self, subject: &str, version: i32) -> Result<(), RegistryError> {
        if self.referenced_by(subject, version).is_empty() {
            Ok(())
        } else {
            Err(RegistryError::ReferenceExists(subject.to_string(), version))
        }
    }

    /// The record that sets (or with None removes) a setting. IMPORT is refused where
    /// subjects exist (the whole registry, or the one subject) unless `force`.
    pub fn set_mode(
        &self,
        subject: Option<&str>,
        mode: Option<Mode>,
        force: bool,
    ) -> Result<AnyRecord, RegistryError> {
        if mode == Some(Mode::Import) && !force {
            let occupied = match subject {
                Some(s) => self.subjects.contains_key(s),
                None => !self.subjects.is_empty(),
            };
            if occupied {
                return Err(RegistryError::OperationNotPermitted(
                    "Cannot import since found existing subjects".to_string(),
                ));
            }
        }
        Ok(setting_record(subject, SETTING_MODE, mode.map(Mode::name)))
    }
}

fn schema_record(id: i32, schema: &StoredSchema) -> AnyRecord {
    ShoalRegistrySchemaRecord {
        id,
        schema_type: schema.schema_type.name().to_string(),
        schema: schema.text.to_string(),
        references: schema
            .references
            .iter()
            .map(|r| ShoalRegistryReference {
                name: r.name.clone(),
                subject: r.subject.clone(),
                version: r.version,
            })
            .collect(),
    }
    .into()
}

fn version_record(subject: &str, version: i32, id: i32, deleted: bool) -> AnyRecord {
    ShoalRegistryVersionRecord {
        subject: subject.to_string(),
        version,
        id,
        deleted,
    }
    .into()
}

fn deleted_record(subject: &str, version: i32) -> AnyRecord {
    ShoalRegistryVersionDeletedRecord {
        subject: subject.to_string(),
        version,
    }
    .into()
}

pub fn setting_record(subject: Option<&str>, setting: i8, value: Option<&str>) -> AnyRecord {
    ShoalRegistrySettingRecord {
        subject: subject.map(str::to_string),
        setting,
        value: value.map(str::to_string),
    }
    .into()
}

/// A schema record's stored form; None when its type is not one this build knows (the log
/// check refuses such an entry before it is applied).
fn stored_schema(r: &ShoalRegistrySchemaRecord) -> Option<StoredSchema> {
    Some(StoredSchema {
        schema_type: SchemaType::parse(Some(&r.schema_type)).ok()?,
        text: r.schema.as_str().into(),
        references: r
            .references
            .iter()
            .map(|r| SchemaReference {
                name: r.name.clone(),
                subject: r.subject.clone(),
                version: r.version,
            })
            .collect(),
    })
}

impl CoordinatorState {
    pub fn schema_registry(&self) -> &SchemaRegistry {
        &self.schema_registry
    }

    pub(super) fn apply_registry_schema(&mut self, r: &ShoalRegistrySchemaRecord) {
        let Some(schema) = stored_schema(r) else {
            return;
        };
        let registry = &mut self.schema_registry;
        registry.next_id = registry.next_id.max(r.id.saturating_add(1));
        if let Some(old) = registry.schemas.insert(r.id, schema.clone()) {
            registry.ids.remove(&old);
        }
        registry.ids.insert(schema, r.id);
    }

    pub(super) fn apply_registry_version(&mut self, r: &ShoalRegistryVersionRecord) {
        let version = SubjectVersion {
            id: r.id,
            deleted: r.deleted,
        };
        self.schema_registry
            .subjects
            .entry(r.subject.clone())
            .or_default()
            .insert(r.version, version);
    }

    pub(super) fn apply_registry_version_deleted(&mut self, r: &ShoalRegistryVersionDeletedRecord) {
        let registry = &mut self.schema_registry;
        let Some(versions) = registry.subjects.get_mut(&r.subject) else {
            return;
        };
        let Some(removed) = versions.remove(&r.version) else {
            return;
        };
        if versions.is_empty() {
            registry.subjects.remove(&r.subject);
        }
        // A schema no version uses any more is gone (its id is not given again: next_id).
        let used = registry
            .subjects
            .values()
            .any(|versions| versions.values().any(|v| v.id == removed.id));
        if !used {
            if let Some(schema) = registry.schemas.remove(&removed.id) {
                registry.ids.remove(&schema);
            }
        }
    }

    pub(super) fn apply_registry_setting(&mut self, r: &ShoalRegistrySettingRecord) {
        let registry = &mut self.schema_registry;
        let subject = r.subject.clone();
        match (r.setting, r.value.as_deref()) {
            (SETTING_COMPATIBILITY, Some(level)) => {
                if let Ok(level) = CompatibilityLevel::parse(level) {
                    registry.compatibility.insert(subject, level);
                }
            }
            (SETTING_COMPATIBILITY, None) => {
                registry.compatibility.remove(&subject);
            }
            (SETTING_MODE, Some(mode)) => {
                if let Ok(mode) = Mode::parse(mode) {
                    registry.modes.insert(subject, mode);
                }
            }
            (SETTING_MODE, None) => {
                registry.modes.remove(&subject);
            }
            _ => {}
        }
    }

    pub(super) fn apply_registry_next_id(&mut self, r: &ShoalRegistryNextIdRecord) {
        let registry = &mut self.schema_registry;
        registry.next_id = registry.next_id.max(r.next_id);
    }

    /// The registry as snapshot records: schemas, versions, settings, the next id.
    pub(super) fn registry_snapshot_records(&self) -> Vec<AnyRecord> {
        let registry = &self.schema_registry;
        let mut records: Vec<AnyRecord> = registry
            .schemas
            .iter()
            .map(|(id, schema)| schema_record(*id, schema))
            .collect();
        for (subject, versions) in &registry.subjects {
            for (number, v) in versions {
                records.push(version_record(subject, *number, v.id, v.deleted));
            }
        }
        for (subject, level) in &registry.compatibility {
            let record = setting_record(
                subject.as_deref(),
                SETTING_COMPATIBILITY,
                Some(level.name()),
            );
            records.push(record);
        }
        for (subject, mode) in &registry.modes {
            records.push(setting_record(
                subject.as_deref(),
                SETTING_MODE,
                Some(mode.name()),
            ));
        }
        if registry.next_id > 0 {
            records.push(
                ShoalRegistryNextIdRecord {
                    next_id: registry.next_id,
                }
                .into(),
            );
        }
        records
    }
}
