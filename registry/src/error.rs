//! The registry's errors, each with the HTTP status and the `error_code` Confluent's Schema
//! Registry answers with (clients branch on both), and its message format. This is the one
//! table of those codes.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RegistryError {
    #[error("Subject '{0}' not found.")]
    SubjectNotFound(String),
    #[error("Version {0} not found.")]
    VersionNotFound(String),
    #[error("Schema {0} not found")]
    SchemaIdNotFound(i32),
    #[error("Schema not found")]
    SchemaNotFound,
    #[error("Subject '{0}' was soft deleted.Set permanent=true to delete permanently")]
    SubjectSoftDeleted(String),
    #[error("Subject '{0}' was not deleted first before being permanently deleted")]
    SubjectNotSoftDeleted(String),
    #[error("Subject '{0}' Version {1} was soft deleted.Set permanent=true to delete permanently")]
    VersionSoftDeleted(String, i32),
    #[error("Subject '{0}' Version {1} was not deleted first before being permanently deleted")]
    VersionNotSoftDeleted(String, i32),
    #[error("Subject '{0}' does not have subject-level compatibility configured")]
    SubjectCompatibilityNotConfigured(String),
    #[error("Subject '{0}' does not have subject-level mode configured")]
    SubjectModeNotConfigured(String),
    /// The whole message: which rule, against which version, at which level.
    #[error("{0}")]
    Incompatible(String),
    #[error("Invalid schema {0}")]
    InvalidSchema(String),
    #[error("The specified version '{0}' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"")]
    InvalidVersion(String),
    #[error("Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive")]
    InvalidCompatibilityLevel,
    #[error("Invalid mode. Valid values are READWRITE, READONLY, and IMPORT.")]
    InvalidMode,
    #[error("{0}")]
    OperationNotPermitted(String),
    #[error("One or more references exist to the schema {{subject={0}, version={1}}}")]
    ReferenceExists(String, i32),
    #[error("Schema already registered with id {existing} instead of input id {requested}")]
    IdDoesNotMatch { existing: i32, requested: i32 },
    #[error("The specified subject '{0}' is not a valid subject name")]
    InvalidSubject(String),
    #[error("{0}")]
    SchemaTooLarge(String),
    /// The request itself is malformed (a body that is not the JSON the route takes).
    #[error("{0}")]
    BadRequest(String),
    #[error("HTTP 404 Not Found")]
    NoSuchRoute,
    #[error("HTTP 405 Method Not Allowed")]
    MethodNotAllowed,
    #[error("Request body of {0} bytes is over the limit")]
    PayloadTooLarge(usize),
    #[error("Unauthorized")]
    Unauthorized,
    #[error("User is denied operation {operation} on {resource}")]
    Forbidden { operation: String, resource: String },
    /// The coordinator could not be reached or did not answer in time.
    #[error("Error while storing or reading the registry: {0}")]
    Store(String),
}

impl RegistryError {
    /// The HTTP status of the answer.
    pub fn http_status(&self) -> u16 {
        use RegistryError::*;
        match self {
            SubjectNotFound(_)
            | VersionNotFound(_)
            | SchemaIdNotFound(_)
            | SchemaNotFound
            | SubjectSoftDeleted(_)
            | SubjectNotSoftDeleted(_)
            | VersionSoftDeleted(..)
            | VersionNotSoftDeleted(..)
            | SubjectCompatibilityNotConfigured(_)
            | SubjectModeNotConfigured(_)
            | NoSuchRoute => 404,
            Incompatible(_) => 409,
            InvalidSchema(_)
            | InvalidVersion(_)
            | InvalidCompatibilityLevel
            | InvalidMode
            | OperationNotPermitted(_)
            | ReferenceExists(..)
            | IdDoesNotMatch { .. }
            | InvalidSubject(_)
            | SchemaTooLarge(_) => 422,
            BadRequest(_) => 400,
            MethodNotAllowed => 405,
            PayloadTooLarge(_) => 413,
            Unauthorized => 401,
            Forbidden { .. } => 403,
            Store(_) => 500,
        }
    }

    /// The `error_code` of the JSON body.
    pub fn error_code(&self) -> u32 {
        use RegistryError::*;
        match self {
            SubjectNotFound(_) => 40401,
            VersionNotFound(_) => 40402,
            SchemaIdNotFound(_) | SchemaNotFound => 40403,
            SubjectSoftDeleted(_) => 40404,
            SubjectNotSoftDeleted(_) => 40405,
            VersionSoftDeleted(..) => 40406,
            VersionNotSoftDeleted(..) => 40407,
            SubjectCompatibilityNotConfigured(_) => 40408,
            SubjectModeNotConfigured(_) => 40409,
            // Confluent's registries up to 7.x answer 409 here (8.x: 40901); clients branch on
            // the HTTP status, which is 409 in both.
            Incompatible(_) => 409,
            InvalidSchema(_) => 42201,
            InvalidVersion(_) => 42202,
            InvalidCompatibilityLevel => 42203,
            InvalidMode => 42204,
            OperationNotPermitted(_) => 42205,
            ReferenceExists(..) => 42206,
            IdDoesNotMatch { .. } => 42207,
            InvalidSubject(_) => 42208,
            SchemaTooLarge(_) => 42209,
            Store(_) => 50001,
            BadRequest(_) => 400,
            NoSuchRoute => 404,
            MethodNotAllowed => 405,
            PayloadTooLarge(_) => 413,
            Unauthorized => 401,
            Forbidden { .. } => 40301,
        }
    }
}
