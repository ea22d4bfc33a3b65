//! Which handler serves a request: by method and path, as Confluent's registry lays out its
//! resources.

use serde_json::json;
use shoal_registry::RegistryError;

use shoal_coordinator::acl::Operation;

use super::http::{Request, Response};
use super::{compatibility, schemas, settings, subjects, Registry};

/// The broker's ACLs on the registry's resources: a subject's routes need an operation on its
/// topic, global settings one on the cluster. Listings and schemas by id are filtered by what
/// the caller may read where they are served.
fn authorize(
    method: &str,
    segments: &[&str],
    request: &Request,
    registry: &Registry,
) -> Result<(), RegistryError> {
    let on_subject = |subject: &str, operation| registry.check_subject(request, operation, subject);
    let on_cluster = |operation| registry.check_cluster(request, operation);
    match (method, segments) {
        ("GET", ["subjects", subject, ..]) | ("POST", ["subjects", subject]) => {
            on_subject(subject, Operation::Read)
        }
        ("POST", ["compatibility", "subjects", subject, ..]) => {
            on_subject(subject, Operation::Read)
        }
        ("POST", ["subjects", subject, "versions"]) => on_subject(subject, Operation::Write),
        ("DELETE", ["subjects", subject, ..]) => on_subject(subject, Operation::Delete),
        ("GET", ["config" | "mode", subject]) => on_subject(subject, Operation::DescribeConfigs),
        ("PUT" | "DELETE", ["config" | "mode", subject]) => {
            on_subject(subject, Operation::AlterConfigs)
        }
        ("GET", ["config" | "mode"]) => on_cluster(Operation::DescribeConfigs),
        ("PUT" | "DELETE", ["config" | "mode"]) => on_cluster(Operation::AlterConfigs),
        _ => Ok(()),
    }
}

pub async fn route(request: &Request, registry: &Registry) -> Result<Response, RegistryError> {
    let segments: Vec<&str> = request.segments.iter().map(String::as_str).collect();
    let method = request.method.as_str();
    authorize(method, &segments, request, registry)?;
    match (method, segments.as_slice()) {
        ("GET", []) => Ok(Response::json(json!({}))),
        ("GET", ["schemas", "types"]) => Ok(schemas::types()),
        ("GET", ["schemas"]) => schemas::list(request, registry).await,
        ("GET", ["schemas", "ids", id]) => schemas::by_id(id, request, registry).await,
        ("GET", ["schemas", "ids", id, "schema"]) => {
            schemas::raw_by_id(id, request, registry).await
        }
        ("GET", ["schemas", "ids", id, "subjects"]) => {
            schemas::subjects_of(id, request, registry).await
        }
        ("GET", ["schemas", "ids", id, "versions"]) => {
            schemas::versions_of(id, request, registry).await
        }
        ("GET", ["subjects"]) => subjects::list(request, registry).await,
        ("POST", ["subjects", subject]) => subjects::lookup(subject, request, registry).await,
        ("DELETE", ["subjects", subject]) => subjects::delete(subject, request, registry).await,
        ("GET", ["subjects", subject, "versions"]) => {
            subjects::versions(subject, request, registry).await
        }
        ("POST", ["subjects", subject, "versions"]) => {
            subjects::register(subject, request, registry).await
        }
        ("GET", ["subjects", subject, "versions", version]) => {
            subjects::version(subject, version, request, registry, false).await
        }
        ("GET", ["subjects", subject, "versions", version, "schema"]) => {
            subjects::version(subject, version, request, registry, true).await
        }
        ("GET", ["subjects", subject, "versions", version, "referencedby"]) => {
            subjects::referenced_by(subject, version, registry).await
        }
        ("DELETE", ["subjects", subject, "versions", version]) => {
            subjects::delete_version(subject, version, request, registry).await
        }
        ("POST", ["compatibility", "subjects", subject, "versions"]) => {
            compatibility::check(subject, None, request, registry).await
        }
        ("POST", ["compatibility", "subjects", subject, "versions", version]) => {
            compatibility::check(subject, Some(version), request, registry).await
        }
        ("GET", ["config"]) => settings::get_level(None, request, registry).await,
        ("GET", ["config", subject]) => settings::get_level(Some(subject), request, registry).await,
        ("PUT", ["config"]) => settings::put_level(None, request, registry).await,
        ("PUT", ["config", subject]) => settings::put_level(Some(subject), request, registry).await,
        ("DELETE", ["config"]) => settings::delete_level(None, registry).await,
        ("DELETE", ["config", subject]) => settings::delete_level(Some(subject), registry).await,
        ("GET", ["mode"]) => settings::get_mode(None, request, registry).await,
        ("GET", ["mode", subject]) => settings::get_mode(Some(subject), request, registry).await,
        ("PUT", ["mode"]) => settings::put_mode(None, request, registry).await,
        ("PUT", ["mode", subject]) => settings::put_mode(Some(subject), request, registry).await,
        ("DELETE", ["mode", subject]) => settings::delete_mode(subject, registry).await,
        (_, ["schemas" | "subjects" | "config" | "mode" | "compatibility", ..]) => {
            if matches!(method, "GET" | "POST" | "PUT" | "DELETE") {
                Err(RegistryError::NoSuchRoute)
            } else {
                Err(RegistryError::MethodNotAllowed)
            }
        }
        _ => Err(RegistryError::NoSuchRoute),
    }
}
