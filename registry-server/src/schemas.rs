//! `/schemas`: schemas by id, the types served, and the list of every subject's versions.

use serde_json::{json, Value};
use shoal_coordinator::acl::Operation;
use shoal_coordinator::commands::{RegistryIdUsages, RegistryListSchemas, RegistrySchemaById};
use shoal_coordinator::state::schema_registry::StoredSchema;
use shoal_registry::{RegistryError, SchemaType};

use super::body::{schema_json, schema_text, version_json};
use super::http::{Request, Response};
use super::Registry;

/// `GET /schemas` lists at most this many versions.
const LIST_MAX: usize = 10_000;

pub fn types() -> Response {
    let served: Vec<&str> = SchemaType::ALL.iter().map(|t| t.name()).collect();
    Response::json(json!(served))
}

fn parse_id(id: &str) -> Result<i32, RegistryError> {
    id.parse().map_err(|_| RegistryError::NoSuchRoute)
}

/// The schema an id stands for; with the ACLs on, only for a caller who may read a subject
/// that uses it.
async fn schema(
    id: &str,
    request: &Request,
    registry: &Registry,
) -> Result<StoredSchema, RegistryError> {
    let number = parse_id(id)?;
    if registry.restricted(request) {
        let used = registry
            .run(RegistryIdUsages {
                id: number,
                deleted: true,
            })
            .await?
            .ok_or(RegistryError::SchemaIdNotFound(number))?;
        if !used
            .iter()
            .any(|(subject, _)| registry.may_subject(request, Operation::Read, subject))
        {
            return Err(RegistryError::Forbidden {
                operation: "Read".to_string(),
                resource: format!("schema {number}"),
            });
        }
    }
    registry
        .run(RegistrySchemaById { id: number })
        .await?
        .ok_or(RegistryError::SchemaIdNotFound(number))
}

pub async fn by_id(
    id: &str,
    request: &Request,
    registry: &Registry,
) -> Result<Response, RegistryError> {
    Ok(Response::json(schema_json(
        &schema(id, request, registry).await?,
        request,
    )?))
}

pub async fn raw_by_id(
    id: &str,
    request: &Request,
    registry: &Registry,
) -> Result<Response, RegistryError> {
    Ok(Response::text(schema_text(
        &schema(id, request, registry).await?,
        request,
    )?))
}

async fn usages(
    id: &str,
    request: &Request,
    registry: &Registry,
) -> Result<Vec<(String, i32)>, RegistryError> {
    let id = parse_id(id)?;
    let deleted = request.flag("deleted", false);
    let mut used = registry
        .run(RegistryIdUsages { id, deleted })
        .await?
        .ok_or(RegistryError::SchemaIdNotFound(id))?;
    used.retain(|(subject, _)| registry.may_subject(request, Operation::Read, subject));
    Ok(used)
}

pub async fn subjects_of(
    id: &str,
    request: &Request,
    registry: &Registry,
) -> Result<Response, RegistryError> {
    let mut subjects: Vec<String> = usages(id, request, registry)
        .await?
        .into_iter()
        .map(|(subject, _)| subject)
        .collect();
    subjects.dedup();
    Ok(Response::json(json!(subjects)))
}

pub async fn versions_of(
    id: &str,
    request: &Request,
    registry: &Registry,
) -> Result<Response, RegistryError> {
    let pairs: Vec<Value> = usages(id, request, registry)
        .await?
        .into_iter()
        .map(|(subject, version)| json!({"subject": subject, "version": version}))
        .collect();
    Ok(Response::json(Value::Array(pairs)))
}

pub async fn list(request: &Request, registry: &Registry) -> Result<Response, RegistryError> {
    let limit = match request.query.get("limit").map(|l| l.parse::<i64>()) {
        Some(Ok(l)) if l > 0 => (l as usize).min(LIST_MAX),
        _ => LIST_MAX,
    };
    let views = registry
        .run(RegistryListSchemas {
            prefix: request.subject_prefix(),
            deleted: request.flag("deleted", false),
            latest_only: request.flag("latestOnly", false),
            limit,
        })
        .await?;
    let views = views
        .iter()
        .filter(|view| registry.may_subject(request, Operation::Read, &view.subject))
        .map(|view| version_json(view, request))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Response::json(Value::Array(views)))
}
