//! The schema registry's REST API (Confluent's), served on `[schema_registry] listen` by shard
//! 0 of every broker; its state lives in the coordinator's log, so every broker answers the
//! same. `routes.rs` maps requests to the handlers of each resource. The broker (the engine
//! crate) starts it with its TLS acceptor and the users and ACL settings its gate follows.

mod body;
mod compatibility;
mod http;
mod routes;
mod schemas;
pub mod security;
mod settings;
mod subjects;

use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use futures_rustls::TlsAcceptor;
use glommio::net::TcpListener;
use serde::{Deserialize, Serialize};
use shoal_coordinator::state::schema_registry::RegistryLimits;
use shoal_coordinator::Command;
use shoal_net::TcpOrTls;
use shoal_registry::RegistryError;
use shoal_shards::Shard;

use http::{read_request, write_response, ReadFailure, Response};
use security::Gate;
pub use security::{Authentication, GateSettings};

/// `[schema_registry]`: where the REST API is served and what bounds it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SchemaRegistryConfig {
    /// Address of the REST API; unset: no registry on this broker.
    pub listen: Option<SocketAddr>,
    /// Largest request body taken.
    pub max_request_bytes: usize,
    /// Largest schema text registered.
    pub max_schema_bytes: usize,
    pub max_subjects: usize,
    pub max_versions_per_subject: usize,
    /// How deep references may nest, and how many schemas one schema may refer to in all.
    pub max_reference_depth: usize,
    pub max_references: usize,
    /// Connections served at once; more are closed at once.
    pub max_connections: usize,
    /// A request must arrive whole, and its answer be ready, within this long.
    pub request_timeout_ms: u64,
    /// Serve HTTPS with the broker's `[ssl]` certificate and key.
    pub tls: bool,
    /// `none`, or `basic`: HTTP Basic with a SASL user's name and password (`[sasl]
    /// plain_users`, or a SCRAM user's). What a caller may do follows the broker's ACLs when
    /// `[authorizer] enabled`.
    pub authentication: Authentication,
}

impl Default for SchemaRegistryConfig {
    fn default() -> Self {
        SchemaRegistryConfig {
            listen: None,
            max_request_bytes: 2 << 20,
            max_schema_bytes: 1 << 20,
            max_subjects: 10_000,
            max_versions_per_subject: 1_000,
            max_reference_depth: shoal_registry::reference::REFERENCE_DEPTH_MAX_DEFAULT,
            max_references: shoal_registry::reference::REFERENCES_MAX_DEFAULT,
            max_connections: 256,
            request_timeout_ms: 30_000,
            tls: false,
            authentication: Authentication::None,
        }
    }
}

impl SchemaRegistryConfig {
    /// Every bound positive, and a schema able to fit a request.
    pub fn validate(&self) -> Result<(), String> {
        let bounds = [
            ("max_request_bytes", self.max_request_bytes),
            ("max_schema_bytes", self.max_schema_bytes),
            ("max_subjects", self.max_subjects),
            ("max_versions_per_subject", self.max_versions_per_subject),
            ("max_reference_depth", self.max_reference_depth),
            ("max_references", self.max_references),
            ("max_connections", self.max_connections),
            ("request_timeout_ms", self.request_timeout_ms as usize),
        ];
        if let Some((name, _)) = bounds.iter().find(|(_, value)| *value == 0) {
            return Err(format!("[schema_registry] {name} must be positive"));
        }
        if self.max_schema_bytes > self.max_request_bytes {
            return Err(
                "[schema_registry] max_schema_bytes must not exceed max_request_bytes".into(),
            );
        }
        Ok(())
    }

    pub fn limits(&self) -> RegistryLimits {
        RegistryLimits {
            subjects_max: self.max_subjects,
            versions_per_subject_max: self.max_versions_per_subject,
        }
    }
}

/// What every handler reaches: the coordinator (through the shard), the bounds, and who may
/// do what.
pub struct Registry {
    shard: Rc<Shard>,
    config: SchemaRegistryConfig,
    gate: Gate,
}

impl Registry {
    /// Runs a coordinator command; a coordinator that does not answer is a store error.
    async fn run<C: Command>(&self, command: C) -> Result<C::Reply, RegistryError> {
        self.shard
            .coordinator
            .run(command)
            .await
            .map_err(|e| RegistryError::Store(e.to_string()))
    }
}

/// The broker's settings the registry's listener needs besides its own: what accepts a TLS
/// connection (the certificate loaded last), and whom its gate lets in.
pub struct RegistrySecurity {
    pub tls: Option<Rc<dyn Fn() -> TlsAcceptor>>,
    pub gate: GateSettings,
}

pub async fn serve(shard: Rc<Shard>, config: SchemaRegistryConfig, security: RegistrySecurity) {
    let Some(listen) = config.listen else {
        return;
    };
    // Configuration checks refuse `tls` without the broker's certificate.
    let tls = security.tls.filter(|_| config.tls);
    let listener = match TcpListener::bind(listen) {
        Ok(listener) => listener,
        Err(e) => {
            tracing::error!(%listen, error = %e, "cannot bind the schema registry listener: no registry on this broker; give [schema_registry] listen a free address and restart");
            return;
        }
    };
    tracing::info!(%listen, tls = tls.is_some(), authentication = ?config.authentication, "schema registry ready");
    let gate = Gate::new(config.authentication, security.gate);
    let registry = Rc::new(Registry {
        shard,
        config,
        gate,
    });
    let open = Rc::new(std::cell::Cell::new(0usize));
    loop {
        let Ok(stream) = listener.accept().await else {
            continue;
        };
        // Answers go at once, not held for more to send with them.
        let _ = stream.set_nodelay(true);
        if open.get() >= registry.config.max_connections {
            drop(stream);
            continue;
        }
        open.set(open.get() + 1);
        let (registry, open, tls) = (registry.clone(), open.clone(), tls.clone());
        glommio::spawn_local(async move {
            let host = stream
                .peer_addr()
                .map(|a| a.ip().to_string())
                .unwrap_or_default();
            let timeout = Duration::from_millis(registry.config.request_timeout_ms);
            let stream = match tls {
                None => Some(TcpOrTls::Plain(stream)),
                Some(tls) => {
                    let acceptor = tls();
                    match shoal_net::deadline::within(timeout, acceptor.accept(stream)).await {
                        Some(Ok(stream)) => Some(TcpOrTls::Tls(Box::new(stream.into()))),
                        _ => {
                            tracing::info!(%host, "schema registry TLS handshake failed");
                            None
                        }
                    }
                }
            };
            if let Some(stream) = stream {
                connection(stream, &host, &registry).await;
            }
            open.set(open.get() - 1);
        })
        .detach();
    }
}

/// Bytes a refused request may still send after its answer, read and dropped so that the
/// client reads the answer instead of a reset; and how long that may take.
const LINGER_MAX_BYTES: usize = 16 << 20;
const LINGER_FOR: Duration = Duration::from_secs(2);

/// After a refusal: stop writing, drop what the client still sends (within bounds), close.
async fn linger(stream: &mut TcpOrTls) {
    use futures_lite::{AsyncReadExt, AsyncWriteExt};
    match stream {
        TcpOrTls::Plain(socket) => {
            let _ = socket.shutdown(std::net::Shutdown::Write).await;
        }
        // close_notify: the client reads the answer, then the end.
        TcpOrTls::Tls(_) => {
            let _ = stream.close().await;
        }
    }
    let mut chunk = vec![0u8; 64 << 10];
    let mut dropped = 0;
    let _ = shoal_net::deadline::within(LINGER_FOR, async {
        while dropped < LINGER_MAX_BYTES {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => dropped += n,
            }
        }
    })
    .await;
}

/// Requests of one connection, one after another, until it closes or errs.
async fn connection(mut stream: TcpOrTls, host: &str, registry: &Registry) {
    let timeout = Duration::from_millis(registry.config.request_timeout_ms);
    let mut carry = Vec::new();
    loop {
        let read = shoal_net::deadline::within(
            timeout,
            read_request(&mut stream, &mut carry, registry.config.max_request_bytes),
        )
        .await;
        let request = match read {
            None | Some(Err(ReadFailure::Closed)) => return,
            Some(Err(ReadFailure::Refused(status, message))) => {
                let response = Response {
                    status,
                    body: serde_json::json!({"error_code": status, "message": message}).to_string(),
                    json: true,
                };
                let _ = write_response(&mut stream, &response, false).await;
                linger(&mut stream).await;
                return;
            }
            Some(Ok(request)) => request,
        };
        let keep_alive = request.keep_alive();
        let answered = shoal_net::deadline::within(timeout, answer(request, host, registry)).await;
        let response = match answered {
            Some(Ok(response)) => response,
            Some(Err(error)) => Response::error(&error),
            None => Response::error(&RegistryError::Store(
                "the coordinator did not answer in time".into(),
            )),
        };
        if write_response(&mut stream, &response, keep_alive)
            .await
            .is_err()
            || !keep_alive
        {
            return;
        }
    }
}

/// A request authenticated, then routed.
async fn answer(
    mut request: http::Request,
    host: &str,
    registry: &Registry,
) -> Result<Response, RegistryError> {
    request.caller = Some(registry.gate.authenticate(&request, host, registry).await?);
    routes::route(&request, registry).await
}
