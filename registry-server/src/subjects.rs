//! `/subjects`: subjects and their versions; registering, looking up and deleting schemas.

use serde_json::{json, Value};
use shoal_coordinator::acl::Operation;
use shoal_coordinator::commands::{
    DeleteRegistrySubject, DeleteRegistryVersion, RegisterSchema, RegistryLookup,
    RegistryReferencedBy, RegistrySubjects, RegistryVersion, RegistryVersions,
};
use shoal_coordinator::state::schema_registry::Registration;
use shoal_registry::{check_subject, compatibility, Mode, RegistryError, VersionSelector};

use super::body::{schema_text, version_json, SchemaBody};
use super::compatibility::{context, parse_new, problems};
use super::http::{Request, Response};
use super::Registry;

/// A registration whose subject keeps changing between its check and its write gives up
/// after this many tries.
const REGISTER_TRIES_MAX: usize = 8;

pub async fn list(request: &Request, registry: &Registry) -> Result<Response, RegistryError> {
    let mut subjects = registry
        .run(RegistrySubjects {
            prefix: request.subject_prefix(),
            deleted: request.flag("deleted", false),
        })
        .await?;
    subjects.retain(|subject| registry.may_subject(request, Operation::Read, subject));
    Ok(Response::json(json!(subjects)))
}

pub async fn versions(
    subject: &str,
    request: &Request,
    registry: &Registry,
) -> Result<Response, RegistryError> {
    let versions = registry
        .run(RegistryVersions {
            subject: subject.to_string(),
            deleted: request.flag("deleted", false),
        })
        .await??;
    Ok(Response::json(json!(versions)))
}

pub async fn version(
    subject: &str,
    version: &str,
    request: &Request,
    registry: &Registry,
    raw: bool,
) -> Result<Response, RegistryError> {
    let selector = VersionSelector::parse(version)?;
    let view = registry
        .run(RegistryVersion {
            subject: subject.to_string(),
            selector,
            deleted: request.flag("deleted", false),
        })
        .await??;
    Ok(if raw {
        Response::text(schema_text(&view.schema, request)?)
    } else {
        Response::json(version_json(&view, request)?)
    })
}

pub async fn referenced_by(
    subject: &str,
    version: &str,
    registry: &Registry,
) -> Result<Response, RegistryError> {
    let selector = VersionSelector::parse(version)?;
    let ids = registry
        .run(RegistryReferencedBy {
            subject: subject.to_string(),
            selector,
        })
        .await??;
    Ok(Response::json(json!(ids)))
}

/// `POST /subjects/{subject}/versions`: `{"id": N}`; 409 when incompatible.
pub async fn register(
    subject: &str,
    request: &Request,
    registry: &Registry,
) -> Result<Response, RegistryError> {
    check_subject(subject)?;
    let body = SchemaBody::parse(&request.body)?;
    let schema = body.stored(registry.config.max_schema_bytes)?;
    for _ in 0..REGISTER_TRIES_MAX {
        let context = context(subject, &schema, None, registry).await?;
        // Parsed even when nothing is checked: an invalid schema is never registered.
        let new = parse_new(&schema, &context)?;
        let level = context.expectation.level;
        if context.registered.is_none() && context.expectation.mode != Mode::Import {
            let messages = problems(&new, &context, level)?;
            if !messages.is_empty() {
                let refusal = compatibility::refusal(subject, &messages);
                return Err(RegistryError::Incompatible(refusal));
            }
        }
        let registration = registry
            .run(RegisterSchema {
                subject: subject.to_string(),
                schema: schema.clone(),
                id: body.id,
                version: body.version,
                expected: Some(context.expectation),
                limits: registry.config.limits(),
            })
            .await??;
        if let Registration::Registered { id, .. } = registration {
            return Ok(Response::json(json!({ "id": id })));
        }
    }
    Err(RegistryError::Store(format!(
        "subject '{subject}' kept changing while the schema was checked"
    )))
}

/// `POST /subjects/{subject}`: the version holding this schema.
pub async fn lookup(
    subject: &str,
    request: &Request,
    registry: &Registry,
) -> Result<Response, RegistryError> {
    let body = SchemaBody::parse(&request.body)?;
    let schema = body.stored(registry.config.max_schema_bytes)?;
    let view = registry
        .run(RegistryLookup {
            subject: subject.to_string(),
            schema,
            deleted: request.flag("deleted", false),
        })
        .await??;
    Ok(Response::json(version_json(&view, request)?))
}

pub async fn delete(
    subject: &str,
    request: &Request,
    registry: &Registry,
) -> Result<Response, RegistryError> {
    let versions = registry
        .run(DeleteRegistrySubject {
            subject: subject.to_string(),
            permanent: request.flag("permanent", false),
        })
        .await??;
    Ok(Response::json(json!(versions)))
}

pub async fn delete_version(
    subject: &str,
    version: &str,
    request: &Request,
    registry: &Registry,
) -> Result<Response, RegistryError> {
    let selector = VersionSelector::parse(version)?;
    let deleted = registry
        .run(DeleteRegistryVersion {
            subject: subject.to_string(),
            selector,
            permanent: request.flag("permanent", false),
        })
        .await??;
    Ok(Response::json(Value::from(deleted)))
}
