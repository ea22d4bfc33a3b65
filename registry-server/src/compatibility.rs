//! Compatibility: a new schema parsed and checked against the earlier versions its subject's
//! level names (registration), or against one version (`POST /compatibility/...`).

use serde_json::json;
use shoal_coordinator::commands::{CompatibilityContext, RegistryCompatibilityContext};
use shoal_coordinator::state::schema_registry::{ReferencedSchema, StoredSchema};
use shoal_registry::{
    compatibility, CompatibilityLevel, Earlier, ParsedSchema, Referenced, RegistryError,
    VersionSelector,
};

use super::body::SchemaBody;
use super::http::{Request, Response};
use super::Registry;

fn referenced(schemas: &[ReferencedSchema]) -> Vec<Referenced<'_>> {
    schemas
        .iter()
        .map(ReferencedSchema::as_referenced)
        .collect()
}

/// The context a check of `schema` under `subject` needs (the earlier versions, or the one
/// `selector` names).
pub async fn context(
    subject: &str,
    schema: &StoredSchema,
    selector: Option<VersionSelector>,
    registry: &Registry,
) -> Result<CompatibilityContext, RegistryError> {
    registry
        .run(RegistryCompatibilityContext {
            subject: subject.to_string(),
            schema: schema.clone(),
            selector,
            reference_depth_max: registry.config.max_reference_depth,
            references_max: registry.config.max_references,
        })
        .await?
}

/// `schema` parsed, with the schemas its references name.
pub fn parse_new(
    schema: &StoredSchema,
    context: &CompatibilityContext,
) -> Result<ParsedSchema, RegistryError> {
    ParsedSchema::parse(
        schema.schema_type,
        &schema.text,
        &referenced(&context.referenced),
    )
}

/// What makes `new` incompatible with the context's earlier versions at `level`; empty when
/// it is compatible.
pub fn problems(
    new: &ParsedSchema,
    context: &CompatibilityContext,
    level: CompatibilityLevel,
) -> Result<Vec<String>, RegistryError> {
    if level == CompatibilityLevel::None || context.earlier.is_empty() {
        return Ok(Vec::new());
    }
    let parsed = context
        .earlier
        .iter()
        .map(|e| {
            ParsedSchema::parse(
                e.schema.schema_type,
                &e.schema.text,
                &referenced(&e.referenced),
            )
            .map_err(|error| {
                RegistryError::Store(format!("version {} no longer parses: {error}", e.version))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let earlier: Vec<Earlier<'_>> = context
        .earlier
        .iter()
        .zip(&parsed)
        .map(|(e, schema)| Earlier {
            version: e.version,
            text: &e.schema.text,
            schema,
        })
        .collect();
    Ok(compatibility::check(new, &earlier, level))
}

/// `POST /compatibility/subjects/{subject}/versions[/{version}]`: `is_compatible`, and with
/// `verbose=true` the messages.
pub async fn check(
    subject: &str,
    version: Option<&str>,
    request: &Request,
    registry: &Registry,
) -> Result<Response, RegistryError> {
    shoal_registry::check_subject(subject)?;
    let selector = version.map(VersionSelector::parse).transpose()?;
    let body = SchemaBody::parse(&request.body)?;
    let schema = body.stored(registry.config.max_schema_bytes)?;
    let context = match context(subject, &schema, selector, registry).await {
        // No versions to check against: compatible (a named version must exist).
        Err(RegistryError::SubjectNotFound(_)) if selector.is_none() => {
            return Ok(Response::json(json!({"is_compatible": true})));
        }
        other => other?,
    };
    let new = parse_new(&schema, &context)?;
    // One named version is checked in the level's directions, not transitively.
    let level = context.expectation.level;
    let messages = problems(&new, &context, level)?;
    let mut answer = json!({"is_compatible": messages.is_empty()});
    if request.flag("verbose", false) {
        answer["messages"] = json!(messages);
    }
    Ok(Response::json(answer))
}
