//! `shoal schema list|get|register|check|delete`: the schema registry (Confluent's REST API,
//! served by Shoal's brokers on `[schema_registry] listen`, or any Confluent-compatible
//! registry), through `registry_client`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::registry_client::{encode, Registry};
use super::{print_table, AdminError, Format};

/// Where the registry is, and how to print.
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "Registry and output")]
pub struct RegistryTarget {
    /// The registry's URL: http:// or https://host:port.
    #[arg(long, global = true, default_value = "http://127.0.0.1:8081")]
    pub registry: String,
    /// A PEM CA to trust for an https registry's certificate, besides the system's.
    #[arg(long, global = true)]
    pub registry_ca: Option<PathBuf>,
    /// table for people, json for scripts.
    #[arg(long, value_enum, global = true, default_value = "table")]
    pub format: Format,
}

#[derive(clap::Subcommand, Debug)]
pub enum SchemaCommand {
    /// Subjects, with their latest version and schema id.
    List {
        /// Only subjects starting with this.
        #[arg(long, default_value = "")]
        prefix: String,
        /// Soft-deleted subjects too.
        #[arg(long)]
        deleted: bool,
    },
    /// A subject's version (the latest by default), or the schema an id stands for.
    Get {
        subject: Option<String>,
        #[arg(long, default_value = "latest")]
        version: String,
        /// The schema with this id instead.
        #[arg(long, conflicts_with = "subject")]
        id: Option<i32>,
    },
    /// Registers the schema in FILE under SUBJECT (checked against its versions).
    Register {
        subject: String,
        file: PathBuf,
        /// AVRO, JSON or PROTOBUF.
        #[arg(long = "type", default_value = "AVRO")]
        schema_type: String,
    },
    /// Whether the schema in FILE could be registered under SUBJECT, and why not.
    Check {
        subject: String,
        file: PathBuf,
        #[arg(long = "type", default_value = "AVRO")]
        schema_type: String,
        /// Against this version only; by default as the subject's compatibility level says.
        #[arg(long)]
        version: Option<String>,
    },
    /// Imports a Confluent registry's `_schemas` topic, as `shoal consume --format json`
    /// prints it (FILE, or - for standard input), keeping ids and versions: `shoal consume
    /// _schemas --bootstrap SOURCE --format json | shoal schema import -`.
    Import { file: PathBuf },
    /// Deletes a subject (or one --version): soft, then --permanent.
    Delete {
        subject: String,
        #[arg(long)]
        version: Option<String>,
        #[arg(long)]
        permanent: bool,
    },
}

pub fn run(target: &RegistryTarget, command: SchemaCommand) -> Result<(), AdminError> {
    let registry = Registry::new(target)?;
    let format = target.format;
    match command {
        SchemaCommand::Import { file } => super::schema_import::run(&registry, &file, format),
        SchemaCommand::List { prefix, deleted } => list(&registry, format, &prefix, deleted),
        SchemaCommand::Get {
            subject,
            version,
            id,
        } => get(&registry, format, subject, &version, id),
        SchemaCommand::Register {
            subject,
            file,
            schema_type,
        } => {
            let body = schema_body(&file, &schema_type)?;
            let path = format!("/subjects/{}/versions", encode(&subject));
            let registered = registry.call("POST", &path, Some(body))?;
            match format {
                Format::Json => println!("{registered}"),
                Format::Table => {
                    println!("registered under {subject}: id {}", text(&registered["id"]))
                }
            }
            Ok(())
        }
        SchemaCommand::Check {
            subject,
            file,
            schema_type,
            version,
        } => check(&registry, format, &subject, &file, &schema_type, version),
        SchemaCommand::Delete {
            subject,
            version,
            permanent,
        } => {
            let path = match &version {
                Some(v) => format!(
                    "/subjects/{}/versions/{}?permanent={permanent}",
                    encode(&subject),
                    encode(v)
                ),
                None => format!("/subjects/{}?permanent={permanent}", encode(&subject)),
            };
            let deleted = registry.call("DELETE", &path, None)?;
            match format {
                Format::Json => println!("{deleted}"),
                Format::Table => println!("deleted from {subject}: {deleted}"),
            }
            Ok(())
        }
    }
}

/// `shoal schema list`: each subject's latest version.
fn list(
    registry: &Registry,
    format: Format,
    prefix: &str,
    deleted: bool,
) -> Result<(), AdminError> {
    let query = format!("?subjectPrefix={}&deleted={deleted}", encode(prefix));
    let subjects = registry.call("GET", &format!("/subjects{query}"), None)?;
    let mut rows = Vec::new();
    for subject in subjects.as_array().into_iter().flatten() {
        let name = subject.as_str().unwrap_or_default();
        let path = format!(
            "/subjects/{}/versions/latest?deleted={deleted}",
            encode(name)
        );
        rows.push(registry.call("GET", &path, None)?);
    }
    match format {
        Format::Json => println!("{}", Value::Array(rows)),
        Format::Table => {
            let cells: Vec<Vec<String>> = rows
                .iter()
                .map(|v| {
                    vec![
                        text(&v["subject"]),
                        text(&v["version"]),
                        text(&v["id"]),
                        v["schemaType"].as_str().unwrap_or("AVRO").to_string(),
                    ]
                })
                .collect();
            print_table(&["SUBJECT", "VERSION", "ID", "TYPE"], &cells);
        }
    }
    Ok(())
}

/// `shoal schema get`: a schema by id, or a subject's version.
fn get(
    registry: &Registry,
    format: Format,
    subject: Option<String>,
    version: &str,
    id: Option<i32>,
) -> Result<(), AdminError> {
    let path = match (id, subject) {
        (Some(id), _) => format!("/schemas/ids/{id}"),
        (None, Some(subject)) => {
            format!(
                "/subjects/{}/versions/{}",
                encode(&subject),
                encode(version)
            )
        }
        (None, None) => return Err(AdminError::Protocol("give a SUBJECT or --id".into())),
    };
    let found = registry.call("GET", &path, None)?;
    match format {
        Format::Json => println!("{found}"),
        Format::Table => {
            for field in ["subject", "version", "id", "schemaType"] {
                if !found[field].is_null() {
                    println!("{field}: {}", text(&found[field]));
                }
            }
            println!("{}", found["schema"].as_str().unwrap_or_default());
        }
    }
    Ok(())
}

/// `shoal schema check`: whether a schema would be accepted under a subject; an
/// incompatible one is a refusal (scripts branch on it, as on a broker's).
fn check(
    registry: &Registry,
    format: Format,
    subject: &str,
    file: &Path,
    schema_type: &str,
    version: Option<String>,
) -> Result<(), AdminError> {
    let body = schema_body(file, schema_type)?;
    let path = match version {
        Some(v) => format!(
            "/compatibility/subjects/{}/versions/{}?verbose=true",
            encode(subject),
            encode(&v)
        ),
        None => format!(
            "/compatibility/subjects/{}/versions?verbose=true",
            encode(subject)
        ),
    };
    let answer = registry.call("POST", &path, Some(body))?;
    let compatible = answer["is_compatible"].as_bool().unwrap_or(false);
    match format {
        Format::Json => println!("{answer}"),
        Format::Table => {
            println!(
                "{}",
                if compatible {
                    "compatible"
                } else {
                    "incompatible"
                }
            );
            for message in answer["messages"].as_array().into_iter().flatten() {
                println!("  {}", text(message));
            }
        }
    }
    if compatible {
        Ok(())
    } else {
        Err(AdminError::Registry {
            status: 409,
            code: 409,
            message: "the schema is not compatible".into(),
        })
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn schema_body(file: &Path, schema_type: &str) -> Result<Value, AdminError> {
    let schema = std::fs::read_to_string(file)
        .map_err(|e| AdminError::Protocol(format!("cannot read {}: {e}", file.display())))?;
    Ok(json!({"schema": schema, "schemaType": schema_type.to_ascii_uppercase()}))
}
