//! `shoal schema list|get|register|check|delete`: the schema registry (Confluent's REST API,
//! served by Shoal's brokers on `[schema_registry] listen`, or any Confluent-compatible
//! registry), over HTTP/1.1 or HTTPS, with HTTP Basic credentials when given.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};
use serde_json::{json, Value};

use super::{print_table, AdminError, Format};

const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";
/// An answer larger than this is refused (a schema is at most a few MiB).
const ANSWER_MAX_BYTES: u64 = 64 << 20;
const TIMEOUT: Duration = Duration::from_secs(30);

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
    /// Deletes a subject (or one --version): soft, then --permanent.
    Delete {
        subject: String,
        #[arg(long)]
        version: Option<String>,
        #[arg(long)]
        permanent: bool,
    },
}

/// HTTP Basic credentials, `user:password`, from the environment (kept off the command line,
/// where other users of the machine could read them).
const USER_INFO_VARIABLE: &str = "SHOAL_REGISTRY_USER_INFO";

pub fn run(target: &RegistryTarget, command: SchemaCommand) -> Result<(), AdminError> {
    let registry = Registry::new(target)?;
    let format = target.format;
    match command {
        SchemaCommand::List { prefix, deleted } => {
            let query = format!("?subjectPrefix={}&deleted={deleted}", encode(&prefix));
            let subjects = registry.call("GET", &format!("/subjects{query}"), None)?;
            let mut rows = Vec::new();
            for subject in subjects.as_array().into_iter().flatten() {
                let name = subject.as_str().unwrap_or_default();
                let path = format!(
                    "/subjects/{}/versions/latest?deleted={deleted}",
                    encode(name)
                );
                let latest = registry.call("GET", &path, None)?;
                rows.push(latest);
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
        SchemaCommand::Get {
            subject,
            version,
            id,
        } => {
            let path = match (id, subject) {
                (Some(id), _) => format!("/schemas/ids/{id}"),
                (None, Some(subject)) => {
                    format!(
                        "/subjects/{}/versions/{}",
                        encode(&subject),
                        encode(&version)
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
        } => {
            let body = schema_body(&file, &schema_type)?;
            let path = match version {
                Some(v) => format!(
                    "/compatibility/subjects/{}/versions/{}?verbose=true",
                    encode(&subject),
                    encode(&v)
                ),
                None => format!(
                    "/compatibility/subjects/{}/versions?verbose=true",
                    encode(&subject)
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
            // Scripts branch on it: a refusal, as a broker's would be.
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

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn schema_body(file: &PathBuf, schema_type: &str) -> Result<Value, AdminError> {
    let schema = std::fs::read_to_string(file)
        .map_err(|e| AdminError::Protocol(format!("cannot read {}: {e}", file.display())))?;
    Ok(json!({"schema": schema, "schemaType": schema_type.to_ascii_uppercase()}))
}

/// Percent-encodes a path segment or query value.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// host:port of a registry's URL, and whether it is https.
fn parse_url(url: &str) -> Result<(String, bool), AdminError> {
    let wrong = || AdminError::Protocol(format!("{url}: give http:// or https://host:port"));
    let (rest, https) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
        (Some(rest), _) => (rest, false),
        (_, Some(rest)) => (rest, true),
        _ => return Err(wrong()),
    };
    let address = rest.trim_end_matches('/').to_string();
    if address.is_empty() || address.contains('/') {
        return Err(wrong());
    }
    Ok((address, https))
}

/// A registry at host:port.
struct Registry {
    address: String,
    /// For https: the TLS settings.
    tls: Option<Arc<ClientConfig>>,
    /// The `Authorization` header's value.
    authorization: Option<String>,
}

impl Registry {
    fn new(target: &RegistryTarget) -> Result<Registry, AdminError> {
        let (address, https) = parse_url(&target.registry)?;
        let tls = match https {
            true => Some(
                shoal_net::tls_client::client_config(target.registry_ca.as_deref(), None)
                    .map_err(|e| AdminError::Connect(e.to_string()))?,
            ),
            false => None,
        };
        let authorization = std::env::var(USER_INFO_VARIABLE).ok().map(|user_info| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(user_info)
            )
        });
        Ok(Registry {
            address,
            tls,
            authorization,
        })
    }

    /// One request (a connection each); the answer's JSON, or the registry's error.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, AdminError> {
        let connect = |e: std::io::Error| AdminError::Connect(format!("{}: {e}", self.address));
        let stream = TcpStream::connect(&self.address).map_err(connect)?;
        stream.set_read_timeout(Some(TIMEOUT)).map_err(connect)?;
        stream.set_write_timeout(Some(TIMEOUT)).map_err(connect)?;
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let authorization = self
            .authorization
            .as_ref()
            .map(|value| format!("Authorization: {value}\r\n"))
            .unwrap_or_default();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: {CONTENT_TYPE}\r\n\
             Accept: {CONTENT_TYPE}\r\n{authorization}Content-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            self.address,
            body.len()
        );
        let mut answer = Vec::new();
        match &self.tls {
            None => exchange(stream, request.as_bytes(), &mut answer).map_err(connect)?,
            Some(config) => {
                let host = self
                    .address
                    .rsplit_once(':')
                    .map_or(&*self.address, |(h, _)| h);
                let host = host.trim_start_matches('[').trim_end_matches(']');
                let name = ServerName::try_from(host.to_string())
                    .map_err(|e| AdminError::Connect(format!("{host}: {e}")))?;
                let tls = ClientConnection::new(config.clone(), name)
                    .map_err(|e| AdminError::Connect(format!("{}: TLS: {e}", self.address)))?;
                let stream = StreamOwned::new(tls, stream);
                exchange(stream, request.as_bytes(), &mut answer).map_err(connect)?;
            }
        }
        let bad = |why: &str| AdminError::Protocol(format!("{}: {why}", self.address));
        let split = answer
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(|| bad("no HTTP answer"))?;
        let head = String::from_utf8_lossy(&answer[..split]);
        let status: u16 = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("no HTTP status"))?;
        let json: Value = serde_json::from_slice(&answer[split + 4..])
            .map_err(|e| bad(&format!("an answer that is not JSON: {e}")))?;
        if status == 200 {
            return Ok(json);
        }
        Err(AdminError::Registry {
            status,
            code: json["error_code"].as_u64().unwrap_or(u64::from(status)) as u32,
            message: json["message"].as_str().unwrap_or_default().to_string(),
        })
    }
}

/// Writes `request`, reads the whole answer (bounded) into `answer`.
fn exchange<S: Read + Write>(
    mut stream: S,
    request: &[u8],
    answer: &mut Vec<u8>,
) -> std::io::Result<()> {
    stream.write_all(request)?;
    stream.flush()?;
    match stream.take(ANSWER_MAX_BYTES).read_to_end(answer) {
        Ok(_) => Ok(()),
        // A TLS server that closes without close_notify after `Connection: close`: the
        // answer is whole if it parses, which the caller checks.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !answer.is_empty() => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_are_encoded_and_urls_checked() {
        assert_eq!(encode("a/b c-value"), "a%2Fb%20c-value");
        assert!(parse_url("ftp://x:1").is_err());
        assert_eq!(parse_url("https://x:1").unwrap(), ("x:1".to_string(), true));
        assert!(parse_url("http://x:1/path").is_err());
        assert_eq!(
            parse_url("http://x:1/").unwrap(),
            ("x:1".to_string(), false)
        );
    }
}
