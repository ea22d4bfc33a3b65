//! One blocking HTTP/1.1 request over plain TCP or TLS, for the few HTTP peers Shoal's code
//! calls from threads that may block: an identity provider's JWKS and token endpoints, and a
//! schema registry from the admin CLI. One connection a request (`Connection: close`), a
//! deadline on connecting and on each read and write, and the answer bounded before it is
//! kept.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

use crate::NetError;

/// The answer's status line and headers, beyond its body's bound.
const HEAD_MAX_BYTES: u64 = 16 << 10;

/// Where an `http://` or `https://host[:port][/path]` URL points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    pub https: bool,
    pub host: String,
    pub port: u16,
    /// The path and query, starting with `/`.
    pub path: String,
}

impl HttpUrl {
    pub fn parse(url: &str) -> Result<HttpUrl, NetError> {
        let bad = |why: &str| NetError::Config(format!("{url}: {why}"));
        let (https, rest) = match (url.strip_prefix("https://"), url.strip_prefix("http://")) {
            (Some(rest), _) => (true, rest),
            (_, Some(rest)) => (false, rest),
            _ => return Err(bad("not an http:// or https:// URL")),
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        let path = match path.starts_with('?') {
            true => format!("/{path}"),
            false => path.to_string(),
        };
        let default_port = if https { 443 } else { 80 };
        let port = |text: &str| text.parse::<u16>().map_err(|_| bad("a bad port"));
        let (host, port) = match authority.strip_prefix('[') {
            Some(v6) => {
                let (host, after) = v6
                    .split_once(']')
                    .ok_or_else(|| bad("an unclosed [ in the host"))?;
                match after.strip_prefix(':') {
                    Some(p) => (host, port(p)?),
                    None => (host, default_port),
                }
            }
            None => match authority.rsplit_once(':') {
                Some((host, p)) => (host, port(p)?),
                None => (authority, default_port),
            },
        };
        if host.is_empty() || host.contains('@') {
            return Err(bad("no host (credentials in a URL are not taken)"));
        }
        Ok(HttpUrl {
            https,
            host: host.to_string(),
            port,
            path,
        })
    }

    /// The URL back as text, for messages.
    pub fn describe(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}{}", self.authority(), self.path)
    }

    /// host:port, an IPv6 host in brackets (the Host header's value).
    pub fn authority(&self) -> String {
        match self.host.contains(':') {
            true => format!("[{}]:{}", self.host, self.port),
            false => format!("{}:{}", self.host, self.port),
        }
    }

    /// The same server at another path.
    pub fn with_path(&self, path: &str) -> HttpUrl {
        HttpUrl {
            path: path.to_string(),
            ..self.clone()
        }
    }
}

/// One request: its method, URL, extra headers and body.
pub struct HttpRequest<'a> {
    pub method: &'a str,
    pub url: &'a HttpUrl,
    pub headers: &'a [(&'a str, &'a str)],
    pub body: &'a [u8],
}

/// How a request may go: TLS settings for https, the deadline on connecting and on each read
/// and write, and the most body bytes taken.
pub struct HttpLimits<'a> {
    pub tls: Option<&'a Arc<ClientConfig>>,
    pub timeout: Duration,
    pub body_max_bytes: u64,
}

/// An answer: its status and body (a chunked body joined).
#[derive(Debug, PartialEq, Eq)]
pub struct HttpAnswer {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Sends `request` and reads the whole answer.
pub fn send(request: &HttpRequest<'_>, limits: &HttpLimits<'_>) -> Result<HttpAnswer, NetError> {
    let url = request.url;
    let failed = |why: String| NetError::Http(format!("{}: {why}", url.describe()));
    let address = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| failed(e.to_string()))?
        .next()
        .ok_or_else(|| failed("no address".into()))?;
    let tcp = TcpStream::connect_timeout(&address, limits.timeout)
        .map_err(|e| failed(format!("connect: {e}")))?;
    tcp.set_read_timeout(Some(limits.timeout))
        .and_then(|()| tcp.set_write_timeout(Some(limits.timeout)))
        .map_err(|e| failed(e.to_string()))?;
    let mut head = format!(
        "{} {} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        request.method,
        url.path,
        url.authority(),
        request.body.len()
    );
    for (name, value) in request.headers {
        if [name, value].iter().any(|t| t.contains(['\r', '\n'])) {
            return Err(failed(format!("header {name} holds a line break")));
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let limit = limits.body_max_bytes + HEAD_MAX_BYTES;
    let answer = match (url.https, limits.tls) {
        (false, _) => exchange(tcp, &head, request.body, limit),
        (true, None) => return Err(failed("https needs TLS settings".into())),
        (true, Some(config)) => {
            let name = ServerName::try_from(url.host.clone()).map_err(|e| failed(e.to_string()))?;
            let connection =
                ClientConnection::new(config.clone(), name).map_err(|e| failed(e.to_string()))?;
            exchange(
                StreamOwned::new(connection, tcp),
                &head,
                request.body,
                limit,
            )
        }
    }
    .map_err(|e| failed(e.to_string()))?;
    if answer.len() as u64 > limit {
        return Err(failed(format!("the answer is over {limit} bytes")));
    }
    parse_answer(&answer).map_err(|why| failed(why.to_string()))
}

/// Writes the request, reads the answer until the server closes (at most `limit` + 1 bytes,
/// so the caller sees one too long).
fn exchange<S: Read + Write>(
    mut stream: S,
    head: &str,
    body: &[u8],
    limit: u64,
) -> std::io::Result<Vec<u8>> {
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()?;
    let mut answer = Vec::new();
    match stream.take(limit + 1).read_to_end(&mut answer) {
        Ok(_) => Ok(answer),
        // Servers that close without TLS's close_notify after `Connection: close`; the answer
        // is whole if it parses, which the caller checks.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !answer.is_empty() => Ok(answer),
        Err(e) => Err(e),
    }
}

/// The status and body of a whole HTTP/1.1 answer (a chunked body is joined).
fn parse_answer(answer: &[u8]) -> Result<HttpAnswer, &'static str> {
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no HTTP answer")?;
    let head = String::from_utf8_lossy(&answer[..split]).to_ascii_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("no HTTP status")?;
    let rest = &answer[split + 4..];
    let chunked = head
        .lines()
        .any(|line| line.starts_with("transfer-encoding:") && line.contains("chunked"));
    let body = match chunked {
        false => rest.to_vec(),
        true => dechunk(rest)?,
    };
    Ok(HttpAnswer { status, body })
}

fn dechunk(rest: &[u8]) -> Result<Vec<u8>, &'static str> {
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
        let chunk = at
            .checked_add(size)
            .and_then(|end| rest.get(at..end))
            .ok_or("a chunk cut short")?;
        out.extend_from_slice(chunk);
        at += size + 2;
        if at > rest.len() {
            return Err("a chunk cut short");
        }
    }
}

/// Percent-encodes a path segment, query value or form value (RFC 3986's unreserved
/// characters stay).
pub fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_their_defaults() {
        let url = HttpUrl::parse("https://sso.example.com:8443/realms/k/certs").unwrap();
        assert_eq!(
            (url.https, url.host.as_str(), url.port, url.path.as_str()),
            (true, "sso.example.com", 8443, "/realms/k/certs")
        );
        assert_eq!(HttpUrl::parse("https://idp").unwrap().port, 443);
        let plain = HttpUrl::parse("http://[::1]:8081?x=1").unwrap();
        assert_eq!(
            (
                plain.https,
                plain.host.as_str(),
                plain.port,
                plain.path.as_str()
            ),
            (false, "::1", 8081, "/?x=1")
        );
        assert_eq!(plain.describe(), "http://[::1]:8081/?x=1");
        assert_eq!(HttpUrl::parse("http://h").unwrap().path, "/");
        for bad in [
            "ftp://x",
            "http://",
            "http://u:p@h/",
            "http://h:99999/",
            "https://[::1",
        ] {
            assert!(HttpUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn answers_parse_plain_and_chunked() {
        let plain = parse_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}").unwrap();
        assert_eq!((plain.status, plain.body.as_slice()), (200, &b"{}"[..]));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{\"\r\n3\r\nk\":\r\n0\r\n\r\n";
        assert_eq!(parse_answer(chunked).unwrap().body, b"{\"k\":");
        assert_eq!(
            parse_answer(b"HTTP/1.1 404 Not Found\r\n\r\n")
                .unwrap()
                .status,
            404
        );
        assert!(parse_answer(b"HTTP/1.1 200 OK\r\n").is_err());
        let cut = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nab";
        assert!(parse_answer(cut).is_err());
    }

    #[test]
    fn values_are_percent_encoded() {
        assert_eq!(percent_encode("a/b c-value"), "a%2Fb%20c-value");
    }
}
