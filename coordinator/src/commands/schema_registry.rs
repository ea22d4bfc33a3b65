//! The schema registry's commands: reads for each REST resource, the context a registration's
//! compatibility check needs, and the writes (register, delete, settings).

use shoal_registry::{CompatibilityLevel, Mode, RegistryError, SchemaReference, VersionSelector};

use crate::command::{Command, Round};
use crate::entry::Entry;
use crate::state::schema_registry::{
    setting_record, Expectation, ReferencedSchema, Registration, RegistryLimits, StoredSchema,
    SETTING_COMPATIBILITY,
};

/// Writes a registry read's `Command`: it never writes, and on a cluster's shared log it reads
/// fresh, so what another broker registered a moment ago is found.
macro_rules! registry_read {
    ($command:ident -> $reply:ty, |$this:ident, $round:ident| $body:block) => {
        impl Command for $command {
            type Reply = $reply;
            const WRITE: bool = false;
            const FRESH: bool = true;

            fn run(self, $round: &mut Round<'_>) -> Self::Reply {
                let $this = self;
                $body
            }
        }
    };
}

/// A subject's version as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionView {
    pub subject: String,
    pub version: i32,
    pub id: i32,
    pub schema: StoredSchema,
    pub deleted: bool,
}

fn view(round: &Round<'_>, subject: &str, version: i32, id: i32, deleted: bool) -> VersionView {
    let schema = round
        .state()
        .schema_registry()
        .schema(id)
        .cloned()
        .expect("a version's schema is registered");
    VersionView {
        subject: subject.to_string(),
        version,
        id,
        schema,
        deleted,
    }
}

/// `GET /schemas/ids/{id}`: the schema an id stands for.
#[derive(Debug, Clone)]
pub struct RegistrySchemaById {
    pub id: i32,
}

registry_read!(RegistrySchemaById -> Option<StoredSchema>, |this, round| {
    round.state().schema_registry().schema(this.id).cloned()
});

/// `GET /schemas/ids/{id}/versions`: the (subject, version) pairs using an id; None when the
/// id is unknown.
#[derive(Debug, Clone)]
pub struct RegistryIdUsages {
    pub id: i32,
    pub deleted: bool,
}

registry_read!(RegistryIdUsages -> Option<Vec<(String, i32)>>, |this, round| {
    let registry = round.state().schema_registry();
    registry.schema(this.id)?;
    Some(registry.usages(this.id, this.deleted))
});

/// What a produced record's schema id stands for, for topics that validate records: the
/// schema, the subjects it is live under, and the schemas its references name (decoding needs
/// them); None when the id is unknown.
#[derive(Debug, Clone)]
pub struct RegistryIdSubjects {
    pub id: i32,
}

#[derive(Debug, Clone)]
pub struct IdInUse {
    pub schema: StoredSchema,
    pub subjects: Vec<String>,
    /// Empty when they do not resolve (within the default bounds): decoding then fails.
    pub referenced: Vec<ReferencedSchema>,
}

registry_read!(RegistryIdSubjects -> Option<IdInUse>, |this, round| {
    let registry = round.state().schema_registry();
    let schema = registry.schema(this.id)?.clone();
    let mut subjects: Vec<String> = registry
        .usages(this.id, false)
        .into_iter()
        .map(|(subject, _)| subject)
        .collect();
    subjects.dedup();
    let referenced = registry
        .resolve_references(
            &schema.references,
            shoal_registry::reference::REFERENCE_DEPTH_MAX_DEFAULT,
            shoal_registry::reference::REFERENCES_MAX_DEFAULT,
        )
        .unwrap_or_default();
    Some(IdInUse {
        schema,
        subjects,
        referenced,
    })
});

/// `GET /subjects`.
#[derive(Debug, Clone)]
pub struct RegistrySubjects {
    pub prefix: String,
    pub deleted: bool,
}

registry_read!(RegistrySubjects -> Vec<String>, |this, round| {
    round
        .state()
        .schema_registry()
        .subjects(&this.prefix, this.deleted)
});

/// `GET /subjects/{subject}/versions`.
#[derive(Debug, Clone)]
pub struct RegistryVersions {
    pub subject: String,
    pub deleted: bool,
}

registry_read!(RegistryVersions -> Result<Vec<i32>, RegistryError>, |this, round| {
    round
        .state()
        .schema_registry()
        .versions(&this.subject, this.deleted)
});

/// `GET /subjects/{subject}/versions/{version}`.
#[derive(Debug, Clone)]
pub struct RegistryVersion {
    pub subject: String,
    pub selector: VersionSelector,
    pub deleted: bool,
}

registry_read!(RegistryVersion -> Result<VersionView, RegistryError>, |this, round| {
    let (number, found) =
        round
            .state()
            .schema_registry()
            .version(&this.subject, this.selector, this.deleted)?;
    Ok(view(round, &this.subject, number, found.id, found.deleted))
});

/// `GET /schemas`: the versions of subjects starting with `prefix` (only each one's latest
/// with `latest_only`), at most `limit`.
#[derive(Debug, Clone)]
pub struct RegistryListSchemas {
    pub prefix: String,
    pub deleted: bool,
    pub latest_only: bool,
    pub limit: usize,
}

registry_read!(RegistryListSchemas -> Vec<VersionView>, |this, round| {
    let registry = round.state().schema_registry();
    let mut found = Vec::new();
    'subjects: for subject in registry.subjects(&this.prefix, this.deleted) {
        let listed: Vec<_> = registry.listed(&subject, this.deleted).collect();
        let skipped = if this.latest_only {
            listed.len().saturating_sub(1)
        } else {
            0
        };
        for (number, v) in listed.into_iter().skip(skipped) {
            if found.len() >= this.limit {
                break 'subjects;
            }
            found.push((subject.clone(), number, v.id, v.deleted));
        }
    }
    found
        .into_iter()
        .map(|(subject, number, id, deleted)| view(round, &subject, number, id, deleted))
        .collect()
});

/// `POST /subjects/{subject}`: the version of a subject whose schema is this one.
#[derive(Debug, Clone)]
pub struct RegistryLookup {
    pub subject: String,
    pub schema: StoredSchema,
    pub deleted: bool,
}

registry_read!(RegistryLookup -> Result<VersionView, RegistryError>, |this, round| {
    let registry = round.state().schema_registry();
    registry.versions(&this.subject, this.deleted)?;
    let (number, found) = registry
        .find_in_subject(&this.subject, &this.schema, this.deleted)
        .ok_or(RegistryError::SchemaNotFound)?;
    Ok(view(round, &this.subject, number, found.id, found.deleted))
});

/// `GET /subjects/{subject}/versions/{version}/referencedby`.
#[derive(Debug, Clone)]
pub struct RegistryReferencedBy {
    pub subject: String,
    pub selector: VersionSelector,
}

registry_read!(RegistryReferencedBy -> Result<Vec<i32>, RegistryError>, |this, round| {
    let registry = round.state().schema_registry();
    let (number, _) = registry.version(&this.subject, this.selector, false)?;
    Ok(registry.referenced_by(&this.subject, number))
});

/// An earlier version with what parsing it needs.
#[derive(Debug, Clone)]
pub struct EarlierVersion {
    pub version: i32,
    pub schema: StoredSchema,
    /// The texts of the schemas it refers to, dependencies first.
    pub referenced: Vec<ReferencedSchema>,
}

/// What checking a new schema against a subject needs: its level and mode, the earlier
/// versions to check against (those the level names, or the one `selector` names), the texts
/// the new schema's references stand for, and the subject's look now (`Expectation`).
#[derive(Debug, Clone)]
pub struct CompatibilityContext {
    pub expectation: Expectation,
    pub earlier: Vec<EarlierVersion>,
    pub referenced: Vec<ReferencedSchema>,
    /// Already a live version of the subject: (id, version).
    pub registered: Option<(i32, i32)>,
}

#[derive(Debug, Clone)]
pub struct RegistryCompatibilityContext {
    pub subject: String,
    pub schema: StoredSchema,
    /// Check against this version only (the compatibility endpoint); None: as the subject's
    /// level says.
    pub selector: Option<VersionSelector>,
    pub reference_depth_max: usize,
    pub references_max: usize,
}

registry_read!(RegistryCompatibilityContext -> Result<CompatibilityContext, RegistryError>, |this, round| {
    let registry = round.state().schema_registry();
    let resolve = |references: &[SchemaReference]| {
        registry.resolve_references(references, this.reference_depth_max, this.references_max)
    };
    let referenced = resolve(&this.schema.references)?;
    let live = registry.live(&this.subject);
    let level = registry.effective_level(&this.subject);
    let chosen: Vec<(i32, i32)> = match this.selector {
        Some(selector) => {
            let (number, v) = registry.version(&this.subject, selector, false)?;
            vec![(number, v.id)]
        }
        None if level.transitive() => live.clone(),
        None => live.last().copied().into_iter().collect(),
    };
    let mut earlier = Vec::with_capacity(chosen.len());
    for (version, id) in chosen {
        let schema = registry.schema(id).cloned().expect("a version's schema");
        let referenced = resolve(&schema.references)?;
        earlier.push(EarlierVersion {
            version,
            schema,
            referenced,
        });
    }
    let registered = registry
        .find_in_subject(&this.subject, &this.schema, false)
        .map(|(version, v)| (v.id, version));
    Ok(CompatibilityContext {
        expectation: Expectation {
            live,
            level,
            mode: registry.effective_mode(&this.subject),
        },
        earlier,
        referenced,
        registered,
    })
});

/// `GET /config[/{subject}]` (compatibility) and `GET /mode[/{subject}]`: the subject's own
/// setting (the global one for None), or with `default_to_global` what applies to it.
#[derive(Debug, Clone)]
pub struct RegistrySettings {
    pub subject: Option<String>,
    pub default_to_global: bool,
}

/// (compatibility level, mode), each None when not set where asked.
pub type SettingsView = (Option<CompatibilityLevel>, Option<Mode>);

registry_read!(RegistrySettings -> SettingsView, |this, round| {
    let registry = round.state().schema_registry();
    match (&this.subject, this.default_to_global) {
        (Some(subject), true) => (
            Some(registry.effective_level(subject)),
            Some(registry.effective_mode(subject)),
        ),
        (subject, _) => (
            registry.level(subject.as_deref()),
            registry.mode(subject.as_deref()),
        ),
    }
});

/// `POST /subjects/{subject}/versions`: registered, or found registered; `Stale` when the
/// subject changed since `expected` was read.
#[derive(Debug, Clone)]
pub struct RegisterSchema {
    pub subject: String,
    pub schema: StoredSchema,
    pub id: Option<i32>,
    pub version: Option<i32>,
    pub expected: Option<Expectation>,
    pub limits: RegistryLimits,
}

impl Command for RegisterSchema {
    type Reply = Result<Registration, RegistryError>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let (registration, records) = round.state().schema_registry().register(
            &self.subject,
            &self.schema,
            (self.id, self.version),
            self.expected.as_ref(),
            self.limits,
        )?;
        if !records.is_empty() {
            let entry = Entry::new(round.now_ms(), records);
            round.append(&entry);
        }
        Ok(registration)
    }
}

/// `DELETE /subjects/{subject}`: the versions deleted.
#[derive(Debug, Clone)]
pub struct DeleteRegistrySubject {
    pub subject: String,
    pub permanent: bool,
}

impl Command for DeleteRegistrySubject {
    type Reply = Result<Vec<i32>, RegistryError>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let (versions, records) = round
            .state()
            .schema_registry()
            .delete_subject(&self.subject, self.permanent)?;
        let entry = Entry::new(round.now_ms(), records);
        round.append(&entry);
        Ok(versions)
    }
}

/// `DELETE /subjects/{subject}/versions/{version}`: the version deleted.
#[derive(Debug, Clone)]
pub struct DeleteRegistryVersion {
    pub subject: String,
    pub selector: VersionSelector,
    pub permanent: bool,
}

impl Command for DeleteRegistryVersion {
    type Reply = Result<i32, RegistryError>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let (version, record) = round.state().schema_registry().delete_version(
            &self.subject,
            self.selector,
            self.permanent,
        )?;
        round.append(&Entry::of(round.now_ms(), record));
        Ok(version)
    }
}

/// `PUT /config[/{subject}]` (Some) and `DELETE /config[/{subject}]` (None): the level set
/// before.
#[derive(Debug, Clone)]
pub struct SetRegistryCompatibility {
    pub subject: Option<String>,
    pub level: Option<CompatibilityLevel>,
}

impl Command for SetRegistryCompatibility {
    type Reply = Option<CompatibilityLevel>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let before = round
            .state()
            .schema_registry()
            .level(self.subject.as_deref());
        if before != self.level {
            let record = setting_record(
                self.subject.as_deref(),
                SETTING_COMPATIBILITY,
                self.level.map(CompatibilityLevel::name),
            );
            round.append(&Entry::of(round.now_ms(), record));
        }
        before
    }
}

/// `PUT /mode[/{subject}]` (Some) and `DELETE /mode/{subject}` (None): the mode set before.
#[derive(Debug, Clone)]
pub struct SetRegistryMode {
    pub subject: Option<String>,
    pub mode: Option<Mode>,
    pub force: bool,
}

impl Command for SetRegistryMode {
    type Reply = Result<Option<Mode>, RegistryError>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let registry = round.state().schema_registry();
        let before = registry.mode(self.subject.as_deref());
        if before != self.mode {
            let record = registry.set_mode(self.subject.as_deref(), self.mode, self.force)?;
            round.append(&Entry::of(round.now_ms(), record));
        }
        Ok(before)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::scan_frames;
    use crate::state::CoordinatorState;
    use crate::{CoordinatorMetrics, Round};
    use shoal_registry::SchemaType;

    const LIMITS: RegistryLimits = RegistryLimits {
        subjects_max: 3,
        versions_per_subject_max: 3,
    };

    /// A state and the log its writes made.
    #[derive(Default)]
    struct Registry {
        state: CoordinatorState,
        log: Vec<u8>,
    }

    impl Registry {
        fn run<C: Command>(&mut self, command: C) -> C::Reply {
            let metrics = CoordinatorMetrics::default();
            command.run(&mut Round::new(&mut self.state, &mut self.log, 1, &metrics))
        }

        fn register(&mut self, subject: &str, text: &str) -> Result<Registration, RegistryError> {
            self.run(RegisterSchema {
                subject: subject.into(),
                schema: avro(text),
                id: None,
                version: None,
                expected: None,
                limits: LIMITS,
            })
        }

        /// The state the log alone rebuilds.
        fn replayed(&self) -> CoordinatorState {
            let mut state = CoordinatorState::default();
            let scan = scan_frames(&self.log);
            assert!(scan.damage.is_none());
            for entry in &scan.entries {
                crate::entry::check_log_entry(&entry.records).unwrap();
                state.apply(entry);
            }
            state
        }
    }

    fn avro(text: &str) -> StoredSchema {
        StoredSchema {
            schema_type: SchemaType::Avro,
            text: text.into(),
            references: Vec::new(),
        }
    }

    fn registered(id: i32, version: i32) -> Result<Registration, RegistryError> {
        Ok(Registration::Registered { id, version })
    }

    #[test]
    fn one_schema_one_id_across_subjects_and_versions_count_per_subject() {
        let mut r = Registry::default();
        assert_eq!(r.register("a", "\"int\""), registered(1, 1));
        assert_eq!(r.register("a", "\"int\""), registered(1, 1));
        assert_eq!(r.register("b", "\"int\""), registered(1, 1));
        assert_eq!(r.register("a", "\"long\""), registered(2, 2));
        assert_eq!(r.state, r.replayed());
        let image = r.state.encode_snapshot();
        assert_eq!(CoordinatorState::decode_snapshot(&image).unwrap(), r.state);
    }

    #[test]
    fn soft_then_permanent_delete_and_ids_never_given_again() {
        let mut r = Registry::default();
        r.register("a", "\"int\"").unwrap();
        r.register("a", "\"long\"").unwrap();
        let delete = |version, permanent| DeleteRegistryVersion {
            subject: "a".into(),
            selector: VersionSelector::Number(version),
            permanent,
        };
        assert_eq!(
            r.run(delete(2, true)),
            Err(RegistryError::VersionNotSoftDeleted("a".into(), 2))
        );
        assert_eq!(r.run(delete(2, false)), Ok(2));
        assert_eq!(
            r.run(delete(2, false)),
            Err(RegistryError::VersionNotFound("2".into()))
        );
        assert_eq!(r.run(delete(2, true)), Ok(2));
        // Schema 2 is gone with its only version; its id is not given again, even after a
        // snapshot.
        let mut r2 = Registry {
            state: CoordinatorState::decode_snapshot(&r.state.encode_snapshot()).unwrap(),
            log: Vec::new(),
        };
        assert_eq!(r2.run(RegistrySchemaById { id: 2 }), None);
        assert_eq!(r2.register("a", "\"string\""), registered(3, 2));
        let subject = |permanent| DeleteRegistrySubject {
            subject: "a".into(),
            permanent,
        };
        assert_eq!(
            r2.run(subject(true)),
            Err(RegistryError::SubjectNotSoftDeleted("a".into()))
        );
        assert_eq!(r2.run(subject(false)), Ok(vec![1, 2]));
        assert_eq!(
            r2.run(subject(false)),
            Err(RegistryError::SubjectSoftDeleted("a".into()))
        );
        let versions = RegistryVersions {
            subject: "a".into(),
            deleted: false,
        };
        assert_eq!(
            r2.run(versions.clone()),
            Err(RegistryError::SubjectNotFound("a".into()))
        );
        assert_eq!(
            r2.run(RegistryVersions {
                deleted: true,
                ..versions
            }),
            Ok(vec![1, 2])
        );
        // Registering again after a soft delete makes a new version with the old id.
        assert_eq!(r2.register("a", "\"int\""), registered(1, 3));
        assert_eq!(r2.run(subject(false)), Ok(vec![3]));
        assert_eq!(r2.run(subject(true)), Ok(vec![1, 2, 3]));
        assert!(r2.state.schema_registry().is_empty());
        assert_eq!(r2.register("a", "\"boolean\""), registered(4, 1));
    }

    #[test]
    fn a_registration_checked_against_an_older_subject_is_stale() {
        let mut r = Registry::default();
        r.register("a", "\"int\"").unwrap();
        let context = r
            .run(RegistryCompatibilityContext {
                subject: "a".into(),
                schema: avro("\"long\""),
                selector: None,
                reference_depth_max: 4,
                references_max: 4,
            })
            .unwrap();
        assert_eq!(context.expectation.live, vec![(1, 1)]);
        assert_eq!(context.earlier[0].schema.text.as_ref(), "\"int\"");
        r.register("a", "\"double\"").unwrap();
        let register = RegisterSchema {
            subject: "a".into(),
            schema: avro("\"long\""),
            id: None,
            version: None,
            expected: Some(context.expectation),
            limits: LIMITS,
        };
        assert_eq!(r.run(register), Ok(Registration::Stale));
    }

    #[test]
    fn limits_modes_and_referenced_versions() {
        let mut r = Registry::default();
        for subject in ["a", "b", "c"] {
            r.register(subject, "\"int\"").unwrap();
        }
        assert!(matches!(
            r.register("d", "\"int\""),
            Err(RegistryError::OperationNotPermitted(_))
        ));
        r.register("a", "\"long\"").unwrap();
        r.register("a", "\"double\"").unwrap();
        assert!(matches!(
            r.register("a", "\"string\""),
            Err(RegistryError::OperationNotPermitted(_))
        ));
        // A schema referring to b's version 1 keeps it from being deleted.
        let referring = StoredSchema {
            references: vec![SchemaReference {
                name: "int".into(),
                subject: "b".into(),
                version: 1,
            }],
            ..avro("\"float\"")
        };
        let register = RegisterSchema {
            subject: "c".into(),
            schema: referring,
            id: None,
            version: None,
            expected: None,
            limits: LIMITS,
        };
        assert!(matches!(
            r.run(register),
            Ok(Registration::Registered { .. })
        ));
        assert_eq!(
            r.run(DeleteRegistrySubject {
                subject: "b".into(),
                permanent: false
            }),
            Err(RegistryError::ReferenceExists("b".into(), 1))
        );
        // READONLY refuses writes; IMPORT needs force where subjects exist.
        let mode = |mode, force| SetRegistryMode {
            subject: None,
            mode: Some(mode),
            force,
        };
        assert!(matches!(
            r.run(mode(Mode::Import, false)),
            Err(RegistryError::OperationNotPermitted(_))
        ));
        assert_eq!(r.run(mode(Mode::ReadOnly, false)), Ok(None));
        assert!(matches!(
            r.register("a", "\"int\""),
            Err(RegistryError::OperationNotPermitted(_))
        ));
        assert_eq!(r.state, r.replayed());
    }
}
