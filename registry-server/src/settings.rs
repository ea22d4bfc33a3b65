//! `/config` (compatibility levels) and `/mode`, global and per subject.

use serde_json::json;
use shoal_coordinator::commands::{RegistrySettings, SetRegistryCompatibility, SetRegistryMode};
use shoal_registry::{check_subject, CompatibilityLevel, Mode, RegistryError};

use super::body::setting_value;
use super::http::{Request, Response};
use super::Registry;

async fn settings(
    subject: Option<&str>,
    default_to_global: bool,
    registry: &Registry,
) -> Result<(Option<CompatibilityLevel>, Option<Mode>), RegistryError> {
    registry
        .run(RegistrySettings {
            subject: subject.map(str::to_string),
            default_to_global,
        })
        .await
}

/// `{"compatibilityLevel": ...}`: the level found, the default for the registry, or 40408
/// for a subject without one of its own.
fn level_answer(
    level: Option<CompatibilityLevel>,
    subject: Option<&str>,
) -> Result<Response, RegistryError> {
    let level = match (level, subject) {
        (Some(level), _) => level,
        (None, None) => CompatibilityLevel::DEFAULT,
        (None, Some(subject)) => {
            return Err(RegistryError::SubjectCompatibilityNotConfigured(
                subject.to_string(),
            ))
        }
    };
    Ok(Response::json(json!({"compatibilityLevel": level.name()})))
}

pub async fn get_level(
    subject: Option<&str>,
    request: &Request,
    registry: &Registry,
) -> Result<Response, RegistryError> {
    let (level, _) = settings(subject, request.flag("defaultToGlobal", false), registry).await?;
    level_answer(level, subject)
}

pub async fn put_level(
    subject: Option<&str>,
    request: &Request,
    registry: &Registry,
) -> Result<Response, RegistryError> {
    let level = CompatibilityLevel::parse(&put_value(subject, request, "compatibility")?)?;
    registry
        .run(SetRegistryCompatibility {
            subject: subject.map(str::to_string),
            level: Some(level),
        })
        .await?;
    Ok(Response::json(json!({"compatibility": level.name()})))
}

pub async fn delete_level(
    subject: Option<&str>,
    registry: &Registry,
) -> Result<Response, RegistryError> {
    let before = registry
        .run(SetRegistryCompatibility {
            subject: subject.map(str::to_string),
            level: None,
        })
        .await?;
    level_answer(before, subject)
}

pub async fn get_mode(
    subject: Option<&str>,
    request: &Request,
    registry: &Registry,
) -> Result<Response, RegistryError> {
    let (_, mode) = settings(subject, request.flag("defaultToGlobal", false), registry).await?;
    mode_answer(mode, subject)
}

/// `{"mode": ...}`: the mode found, the default for the registry, or 40409 for a subject
/// without one of its own.
fn mode_answer(mode: Option<Mode>, subject: Option<&str>) -> Result<Response, RegistryError> {
    let mode = match (mode, subject) {
        (Some(mode), _) => mode,
        (None, None) => Mode::DEFAULT,
        (None, Some(subject)) => {
            return Err(RegistryError::SubjectModeNotConfigured(subject.to_string()))
        }
    };
    Ok(Response::json(json!({"mode": mode.name()})))
}

pub async fn put_mode(
    subject: Option<&str>,
    request: &Request,
    registry: &Registry,
) -> Result<Response, RegistryError> {
    let mode = Mode::parse(&put_value(subject, request, "mode")?)?;
    registry
        .run(SetRegistryMode {
            subject: subject.map(str::to_string),
            mode: Some(mode),
            force: request.flag("force", false),
        })
        .await??;
    Ok(Response::json(json!({"mode": mode.name()})))
}

pub async fn delete_mode(subject: &str, registry: &Registry) -> Result<Response, RegistryError> {
    let before = registry
        .run(SetRegistryMode {
            subject: Some(subject.to_string()),
            mode: None,
            force: false,
        })
        .await??;
    mode_answer(before, Some(subject))
}

/// A PUT's new value of `key`, for the registry or a valid subject.
fn put_value(subject: Option<&str>, request: &Request, key: &str) -> Result<String, RegistryError> {
    subject.map(check_subject).transpose()?;
    setting_value(&request.body, key)
}
