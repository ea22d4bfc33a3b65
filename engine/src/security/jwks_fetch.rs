//! A JWKS fetched from an identity provider's HTTPS endpoint (`jwks_uri`): one blocking GET
//! (the JWKS watcher's own thread makes it), with a deadline, a bounded answer, and the
//! system's CAs plus `jwks_endpoint_ca_file` trusted.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};
use shoal_auth::jwks::JWKS_MAX_BYTES;

/// How long connecting, and each read and write, may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The answer's head beyond the JWKS itself.
const HEAD_MAX_BYTES: usize = 16 << 10;

/// Where an `https://host[:port]/path` URL points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpsUrl {
    pub host: String,
    pub port: u16,
    pub path: String,
}

impl HttpsUrl {
    pub fn parse(url: &str) -> Result<HttpsUrl, String> {
        let rest = url
            .strip_prefix("https://")
            .ok_or_else(|| format!("{url}: not an https:// URL"))?;
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let port = |text: &str| {
            text.parse::<u16>()
                .map_err(|_| format!("{url}: bad port {text}"))
        };
        let (host, port) = match authority.strip_prefix('[') {
            Some(v6) => {
                let (host, after) = v6
                    .split_once(']')
                    .ok_or_else(|| format!("{url}: an unclosed [ in the host"))?;
                match after.strip_prefix(':') {
                    Some(p) => (host, port(p)?),
                    None => (host, 443),
                }
            }
            None => match authority.rsplit_once(':') {
                Some((host, p)) => (host, port(p)?),
                None => (authority, 443),
            },
        };
        if host.is_empty() {
            return Err(format!("{url}: no host"));
        }
        Ok(HttpsUrl {
            host: host.to_string(),
            port,
            path: format!("/{path}"),
        })
    }
}

/// TLS settings for the endpoint: the system's CAs, and `ca_file`'s.
pub fn tls_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, String> {
    shoal_net::tls_client::client_config(ca_file, None).map_err(|e| e.to_string())
}

/// The body of `GET url`, which must answer 200 within the bounds.
pub fn fetch(url: &HttpsUrl, tls: &Arc<ClientConfig>) -> Result<Vec<u8>, String> {
    let address = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| format!("{}: {e}", url.host))?
        .next()
        .ok_or_else(|| format!("{}: no address", url.host))?;
    let tcp = TcpStream::connect_timeout(&address, TIMEOUT).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(TIMEOUT))
        .and_then(|()| tcp.set_write_timeout(Some(TIMEOUT)))
        .map_err(|e| e.to_string())?;
    let name = ServerName::try_from(url.host.clone()).map_err(|e| e.to_string())?;
    let connection = ClientConnection::new(tls.clone(), name).map_err(|e| e.to_string())?;
    let mut stream = StreamOwned::new(connection, tcp);
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\nConnection: close\r\n\r\n",
        url.path, url.host
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("TLS or write: {e}"))?;
    let mut answer = Vec::new();
    let limit = (JWKS_MAX_BYTES + HEAD_MAX_BYTES) as u64;
    match stream.take(limit + 1).read_to_end(&mut answer) {
        Ok(_) => {}
        // Servers that close without TLS's close_notify after `Connection: close`.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !answer.is_empty() => {}
        Err(e) => return Err(format!("read: {e}")),
    }
    if answer.len() as u64 > limit {
        return Err(format!("the answer is over {limit} bytes"));
    }
    body(&answer)
}

/// The body of a whole HTTP/1.1 answer with status 200 (chunked bodies are joined).
fn body(answer: &[u8]) -> Result<Vec<u8>, String> {
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no HTTP answer")?;
    let head = String::from_utf8_lossy(&answer[..split]).to_ascii_lowercase();
    let status = head.split_whitespace().nth(1).unwrap_or_default();
    if status != "200" {
        return Err(format!("HTTP status {status}"));
    }
    let rest = &answer[split + 4..];
    if !head.contains("transfer-encoding: chunked") {
        return Ok(rest.to_vec());
    }
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let line_end = rest[at..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("a chunk size without its line end")?;
        let size_text = String::from_utf8_lossy(&rest[at..at + line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| "a bad chunk size")?;
        at += line_end + 2;
        if size == 0 {
            return Ok(out);
        }
        let chunk = rest.get(at..at + size).ok_or("a chunk cut short")?;
        out.extend_from_slice(chunk);
        at += size + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_answers() {
        let url = HttpsUrl::parse("https://sso.example.com:8443/realms/k/certs").unwrap();
        assert_eq!(
            (url.host.as_str(), url.port, url.path.as_str()),
            ("sso.example.com", 8443, "/realms/k/certs")
        );
        assert_eq!(HttpsUrl::parse("https://idp").unwrap().port, 443);
        assert!(HttpsUrl::parse("http://idp/x").is_err());
        assert_eq!(
            body(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}").unwrap(),
            b"{}"
        );
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{\"\r\n3\r\nk\":\r\n0\r\n\r\n";
        assert_eq!(body(chunked).unwrap(), b"{\"k\":");
        assert!(body(b"HTTP/1.1 404 Not Found\r\n\r\n").is_err());
    }
}
