//! A client of a schema registry's REST API (Confluent's, as Shoal's brokers serve it on
//! `[schema_registry] listen`): one HTTP/1.1 or HTTPS request a connection, with HTTP Basic
//! credentials from the environment when set, and the registry's errors as `AdminError`s.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};
use serde_json::Value;

use super::schemas::RegistryTarget;
use super::AdminError;

const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";
/// An answer larger than this is refused (a schema is at most a few MiB).
const ANSWER_MAX_BYTES: u64 = 64 << 20;
const TIMEOUT: Duration = Duration::from_secs(30);

/// HTTP Basic credentials, `user:password`, from the environment (kept off the command line,
/// where other users of the machine could read them).
const USER_INFO_VARIABLE: &str = "SHOAL_REGISTRY_USER_INFO";

/// Percent-encodes a path segment or query value.
pub fn encode(text: &str) -> String {
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
pub struct Registry {
    address: String,
    /// For https: the TLS settings.
    tls: Option<Arc<ClientConfig>>,
    /// The `Authorization` header's value.
    authorization: Option<String>,
}

impl Registry {
    pub fn new(target: &RegistryTarget) -> Result<Registry, AdminError> {
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
    pub fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, AdminError> {
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
