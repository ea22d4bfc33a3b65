//! HTTP/1.1 for the registry's REST API: requests read with bounded heads and bodies (a body
//! by Content-Length; a chunked one is refused with 411), keep-alive, answers with Confluent's
//! content type. Only what the registry's clients send is served.

use std::collections::HashMap;

use futures_lite::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use shoal_registry::RegistryError;

use super::security::Caller;

/// A request head (request line and headers) larger than this is refused.
const HEAD_MAX_BYTES: usize = 16 << 10;
const HEADERS_MAX: usize = 64;
/// The content type Confluent's registry answers with.
pub const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";

#[derive(Debug)]
pub struct Request {
    pub method: String,
    /// The path's segments, percent-decoded.
    pub segments: Vec<String>,
    pub query: HashMap<String, String>,
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
    /// Who sent it, once authenticated; None before, and in unit tests.
    pub caller: Option<Caller>,
}

impl Request {
    /// A query flag (`?deleted=true`); absent is `default`.
    pub fn flag(&self, name: &str, default: bool) -> bool {
        self.query
            .get(name)
            .map_or(default, |v| v.eq_ignore_ascii_case("true"))
    }

    /// `?subjectPrefix=`, the filter of the listing routes; empty lists every subject.
    pub fn subject_prefix(&self) -> String {
        self.query.get("subjectPrefix").cloned().unwrap_or_default()
    }

    pub fn keep_alive(&self) -> bool {
        !self
            .headers
            .get("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }
}

pub struct Response {
    pub status: u16,
    /// JSON, or the raw schema text for the `/schema` routes.
    pub body: String,
    pub json: bool,
}

impl Response {
    pub fn json(value: serde_json::Value) -> Response {
        Response {
            status: 200,
            body: value.to_string(),
            json: true,
        }
    }

    pub fn text(body: String) -> Response {
        Response {
            status: 200,
            body,
            json: false,
        }
    }

    pub fn error(error: &RegistryError) -> Response {
        let body = serde_json::json!({
            "error_code": error.error_code(),
            "message": error.to_string(),
        });
        Response {
            status: error.http_status(),
            body: body.to_string(),
            json: true,
        }
    }
}

/// Why no request could be read.
pub enum ReadFailure {
    /// The client closed the connection (between requests: the normal end).
    Closed,
    /// A request the connection cannot go on from: answer this and close.
    Refused(u16, String),
}

/// Reads one request from `stream`; `carry` holds bytes read past the previous one.
pub async fn read_request<S: AsyncRead + Unpin>(
    stream: &mut S,
    carry: &mut Vec<u8>,
    body_max_bytes: usize,
) -> Result<Request, ReadFailure> {
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = find_head_end(carry) {
            break end;
        }
        if carry.len() > HEAD_MAX_BYTES {
            return Err(ReadFailure::Refused(431, "request head too large".into()));
        }
        read_more(stream, carry, &mut chunk).await?;
    };
    let mut headers = [httparse::EMPTY_HEADER; HEADERS_MAX];
    let mut parsed = httparse::Request::new(&mut headers);
    let bad = |why: &str| ReadFailure::Refused(400, why.to_string());
    match parsed.parse(&carry[..head_end]) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(bad("malformed request head")),
    }
    let method = parsed.method.unwrap_or_default().to_string();
    let target = parsed.path.unwrap_or_default().to_string();
    let mut header_map = HashMap::new();
    for h in parsed.headers.iter() {
        let value = String::from_utf8_lossy(h.value).trim().to_string();
        header_map.insert(h.name.to_ascii_lowercase(), value);
    }
    if header_map
        .get("transfer-encoding")
        .is_some_and(|v| !v.eq_ignore_ascii_case("identity"))
    {
        return Err(ReadFailure::Refused(
            411,
            "chunked request bodies are not served: send Content-Length".into(),
        ));
    }
    let length = match header_map.get("content-length") {
        None => 0,
        Some(v) => v.parse::<usize>().map_err(|_| bad("bad Content-Length"))?,
    };
    if length > body_max_bytes {
        let error = RegistryError::PayloadTooLarge(length);
        return Err(ReadFailure::Refused(413, error.to_string()));
    }
    carry.drain(..head_end);
    while carry.len() < length {
        read_more(stream, carry, &mut chunk).await?;
    }
    let body: Vec<u8> = carry.drain(..length).collect();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let segments = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| bad("bad percent-encoding in the path"))?;
    let query = query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            Some((percent_decode(k)?, percent_decode(&v.replace('+', " "))?))
        })
        .collect();
    Ok(Request {
        method,
        segments,
        query,
        headers: header_map,
        body,
        caller: None,
    })
}

/// Appends what the next read brings to `carry`; the end of the stream is `Closed`.
async fn read_more<S: AsyncRead + Unpin>(
    stream: &mut S,
    carry: &mut Vec<u8>,
    chunk: &mut [u8],
) -> Result<(), ReadFailure> {
    let n = stream.read(chunk).await.map_err(|_| ReadFailure::Closed)?;
    if n == 0 {
        return Err(ReadFailure::Closed);
    }
    carry.extend_from_slice(&chunk[..n]);
    Ok(())
}

fn find_head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| at + 4)
}

/// `%XX` escapes decoded; None when one is malformed or the result is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

pub async fn write_response<S: AsyncWrite + Unpin>(
    stream: &mut S,
    response: &Response,
    keep_alive: bool,
) -> std::io::Result<()> {
    let content_type = if response.json {
        CONTENT_TYPE
    } else {
        "text/plain; charset=utf-8"
    };
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: {}\r\n\r\n",
        response.status,
        reason(response.status),
        response.body.len(),
        if keep_alive { "keep-alive" } else { "close" },
    );
    // One write: a head and a body sent apart would wait on the client's delayed ACK.
    let mut answer = head.into_bytes();
    answer.extend_from_slice(response.body.as_bytes());
    stream.write_all(&answer).await?;
    stream.flush().await
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        431 => "Request Header Fields Too Large",
        _ => "Internal Server Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(raw: &[u8], body_max: usize) -> Result<Request, ReadFailure> {
        let mut stream = futures_lite::io::Cursor::new(raw.to_vec());
        futures_lite::future::block_on(read_request(&mut stream, &mut Vec::new(), body_max))
    }

    #[test]
    fn a_request_with_path_query_and_body() {
        let raw = b"POST /subjects/a%2Fb-value/versions?normalize=true HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n{}\r\n";
        let request = read(raw, 100).ok().unwrap();
        assert_eq!(request.method, "POST");
        assert_eq!(request.segments, ["subjects", "a/b-value", "versions"]);
        assert!(request.flag("normalize", false));
        assert_eq!(request.body, b"{}\r\n");
    }

    #[test]
    fn oversized_bodies_and_chunked_ones_are_refused() {
        let raw = b"POST /x HTTP/1.1\r\nContent-Length: 101\r\n\r\n";
        assert!(matches!(read(raw, 100), Err(ReadFailure::Refused(413, _))));
        let raw = b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert!(matches!(read(raw, 100), Err(ReadFailure::Refused(411, _))));
        let raw = b"GET /%zz HTTP/1.1\r\n\r\n";
        assert!(matches!(read(raw, 100), Err(ReadFailure::Refused(400, _))));
    }
}
