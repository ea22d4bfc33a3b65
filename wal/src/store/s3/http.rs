//! A small HTTP/1.1 client for one S3 endpoint: hyper's client connections over glommio
//! sockets (TLS through rustls for https), a bounded keep-alive pool per executor, and timeouts on connect, first byte and
//! the whole request.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_lite::{AsyncRead, AsyncWrite};
use futures_rustls::TlsConnector;
use glommio::net::TcpStream;
use glommio::sync::Semaphore;
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1::{self, SendRequest};
use rustls_pki_types::ServerName;

use super::io::GlommioIo;
use super::outcomes::RequestOutcomes;
use crate::WalError;
use shoal_net::within;

#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Requests (and so connections) open at once.
    pub max_connections: usize,
    pub connect_timeout: Duration,
    /// Until the response headers arrive.
    pub first_byte_timeout: Duration,
    /// The whole request, body included.
    pub request_timeout: Duration,
    /// Response bodies larger than this are refused.
    pub max_response_bytes: usize,
}

pub struct HttpResponse {
    pub status: u16,
    /// The ETag header, which multipart uploads need back.
    pub etag: Option<String>,
    /// The Content-Length header: an object's size, for HEAD.
    pub content_length: Option<u64>,
    pub body: Bytes,
}

/// TLS to the endpoint: the client settings and the name its certificate must carry.
pub type HttpsSettings = (Arc<rustls::ClientConfig>, ServerName<'static>);

pub struct HttpClient {
    addr: SocketAddr,
    host_header: String,
    tls: Option<HttpsSettings>,
    config: HttpConfig,
    idle: RefCell<Vec<SendRequest<Full<Bytes>>>>,
    slots: Rc<Semaphore>,
    pub outcomes: RequestOutcomes,
}

impl HttpClient {
    pub fn new(
        addr: SocketAddr,
        host_header: String,
        tls: Option<HttpsSettings>,
        config: HttpConfig,
    ) -> HttpClient {
        HttpClient {
            addr,
            host_header,
            tls,
            slots: Rc::new(Semaphore::new(config.max_connections as u64)),
            config,
            idle: RefCell::new(Vec::new()),
            outcomes: RequestOutcomes::default(),
        }
    }

    /// Sends one request; `path_and_query` is the signed URL's path and query.
    pub async fn request(
        &self,
        op: &'static str,
        method: http::Method,
        path_and_query: &str,
        headers: &[(&str, String)],
        body: Bytes,
    ) -> Result<HttpResponse, WalError> {
        let _slot = self
            .slots
            .acquire_permit(1)
            .await
            .map_err(|_| WalError::Unreachable(format!("{op}: client closed")))?;
        let sent = self.send(op, method, path_and_query, headers, body);
        let result = match within(self.config.request_timeout, sent).await {
            Some(Ok(response)) => Ok(response),
            Some(Err(e)) if e.kind() == std::io::ErrorKind::TimedOut => Err(WalError::Timeout(op)),
            Some(Err(e)) => Err(WalError::Transport {
                op,
                message: e.to_string(),
                // rustls refuses a certificate with InvalidData: trying again cannot help.
                transient: e.kind() != std::io::ErrorKind::InvalidData,
            }),
            None => Err(WalError::Timeout(op)),
        };
        self.outcomes
            .record(op, result.as_ref().map(|response| response.status));
        result
    }

    async fn send(
        &self,
        op: &'static str,
        method: http::Method,
        path_and_query: &str,
        headers: &[(&str, String)],
        body: Bytes,
    ) -> std::io::Result<HttpResponse> {
        let mut sender = match self.take_idle() {
            Some(sender) => sender,
            None => self.connect().await?,
        };
        let mut builder = http::Request::builder()
            .method(method)
            .uri(path_and_query)
            .header(http::header::HOST, &self.host_header)
            .header(http::header::CONTENT_LENGTH, body.len());
        for (name, value) in headers {
            builder = builder.header(*name, value);
        }
        let request = builder.body(Full::new(body)).map_err(io_error)?;
        let response = within(self.config.first_byte_timeout, sender.send_request(request))
            .await
            .ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::TimedOut, format!("{op}: no response"))
            })?
            .map_err(io_error)?;
        let status = response.status().as_u16();
        let etag = response
            .headers()
            .get(http::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let content_length = response
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        let body = Limited::new(response.into_body(), self.config.max_response_bytes)
            .collect()
            .await
            .map_err(|e| io_error(e.to_string()))?
            .to_bytes();
        self.return_idle(sender);
        Ok(HttpResponse {
            status,
            etag,
            content_length,
            body,
        })
    }

    async fn connect(&self) -> std::io::Result<SendRequest<Full<Bytes>>> {
        let stream = TcpStream::connect_timeout(self.addr, self.config.connect_timeout)
            .await
            .map_err(io_error)?;
        let _ = stream.set_nodelay(true);
        let Some((config, name)) = &self.tls else {
            return handshake(stream).await;
        };
        let connecting = TlsConnector::from(config.clone()).connect(name.clone(), stream);
        let stream = within(self.config.connect_timeout, connecting)
            .await
            .ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::TimedOut, "TLS handshake timed out")
            })??;
        handshake(stream).await
    }

    fn take_idle(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut idle = self.idle.borrow_mut();
        while let Some(sender) = idle.pop() {
            if !sender.is_closed() {
                return Some(sender);
            }
        }
        None
    }

    fn return_idle(&self, sender: SendRequest<Full<Bytes>>) {
        let mut idle = self.idle.borrow_mut();
        if !sender.is_closed() && idle.len() < self.config.max_connections {
            idle.push(sender);
        }
    }
}

/// HTTP/1.1 over a connected stream; its connection task ends when the sender is dropped or
/// the server closes.
async fn handshake(
    stream: impl AsyncRead + AsyncWrite + Unpin + 'static,
) -> std::io::Result<SendRequest<Full<Bytes>>> {
    let (sender, connection) = http1::handshake(GlommioIo::new(stream))
        .await
        .map_err(io_error)?;
    glommio::spawn_local(async move {
        let _ = connection.await;
    })
    .detach();
    Ok(sender)
}

fn io_error(e: impl ToString) -> std::io::Error {
    std::io::Error::other(e.to_string())
}
