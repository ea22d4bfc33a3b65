//! Kafka's listener settings: `listeners`, `advertised.listeners` and
//! `listener.security.protocol.map`, in Kafka's own string forms.

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};

use crate::ConfigError;

/// Kafka's security protocols, one enum for the listeners and the clients.
pub use shoal_auth::client_security::SecurityProtocol;

/// One named listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub name: String,
    pub address: SocketAddr,
    pub protocol: SecurityProtocol,
    /// What Metadata tells clients that came in on this listener.
    pub advertised_host: String,
    pub advertised_port: i32,
}

/// A listener's protocol: as the protocol map names it, else its name's.
fn protocol_of(
    map: &HashMap<String, SecurityProtocol>,
    name: &str,
) -> Result<SecurityProtocol, ConfigError> {
    map.get(name)
        .copied()
        .or_else(|| SecurityProtocol::from_name(name))
        .ok_or_else(|| {
            config_error(format!(
                "listener {name} has no security protocol: name it in \
                 listener_security_protocol_map or use a protocol as its name"
            ))
        })
}

/// The address a listener binds: its host (every interface when empty) and port.
fn bind_address(name: &str, host: &str, port: i32) -> Result<SocketAddr, ConfigError> {
    let bind_host = if host.is_empty() { "0.0.0.0" } else { host };
    (bind_host, port as u16)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| config_error(format!("listener {name}: cannot resolve {host}")))
}

/// The listeners `listeners` names (or one PLAINTEXT listener on `listen` when it is empty),
/// with their protocols and advertised addresses.
pub fn parse_listeners(
    listeners: &str,
    advertised: &str,
    protocol_map: &str,
    listen: SocketAddr,
    advertised_listener: Option<&str>,
) -> Result<Vec<Listener>, ConfigError> {
    if listeners.trim().is_empty() {
        let (host, port) = match advertised_listener.and_then(split_host_port) {
            Some((host, port)) => (host, port),
            None => (listen.ip().to_string(), listen.port() as i32),
        };
        return Ok(vec![Listener {
            name: "PLAINTEXT".to_string(),
            address: listen,
            protocol: SecurityProtocol::Plaintext,
            advertised_host: host,
            advertised_port: port,
        }]);
    }
    let map = parse_protocol_map(protocol_map)?;
    let advertised = parse_entries(advertised)?
        .into_iter()
        .collect::<HashMap<String, (String, i32)>>();
    let mut out: Vec<Listener> = Vec::new();
    for (name, (host, port)) in parse_entries(listeners)? {
        let protocol = protocol_of(&map, &name)?;
        let address = bind_address(&name, &host, port)?;
        if out.iter().any(|l| l.name == name || l.address == address) {
            return Err(config_error(format!(
                "listener {name} repeats a name or an address"
            )));
        }
        let (advertised_host, advertised_port) =
            advertised.get(&name).cloned().unwrap_or_else(|| {
                let host = if host.is_empty() {
                    address.ip().to_string()
                } else {
                    host
                };
                (host, port)
            });
        out.push(Listener {
            name,
            address,
            protocol,
            advertised_host,
            advertised_port,
        });
    }
    for name in advertised.keys() {
        if !out.iter().any(|l| &l.name == name) {
            return Err(config_error(format!(
                "advertised_listeners names {name}, which is not a listener"
            )));
        }
    }
    Ok(out)
}

/// A listener's name with its host (empty: every interface) and port.
type Entry = (String, (String, i32));

/// "NAME://host:port,NAME://:port" → (NAME, (host, port)).
fn parse_entries(text: &str) -> Result<Vec<Entry>, ConfigError> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|entry| {
            let (name, rest) = entry
                .split_once("://")
                .ok_or_else(|| config_error(format!("{entry:?} is not NAME://host:port")))?;
            let (host, port) = split_host_port(rest)
                .ok_or_else(|| config_error(format!("{entry:?} has no valid port")))?;
            Ok((name.to_ascii_uppercase(), (host, port)))
        })
        .collect()
}

fn split_host_port(text: &str) -> Option<(String, i32)> {
    let (host, port) = text.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Some((host.to_string(), port as i32))
}

fn parse_protocol_map(text: &str) -> Result<HashMap<String, SecurityProtocol>, ConfigError> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|entry| {
            let (name, protocol) = entry
                .split_once(':')
                .ok_or_else(|| config_error(format!("{entry:?} is not NAME:PROTOCOL")))?;
            let protocol = SecurityProtocol::from_name(protocol)
                .ok_or_else(|| config_error(format!("{entry:?}: unknown security protocol")))?;
            Ok((name.trim().to_ascii_uppercase(), protocol))
        })
        .collect()
}

fn config_error(message: String) -> ConfigError {
    ConfigError(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listen() -> SocketAddr {
        "127.0.0.1:9092".parse().unwrap()
    }

    #[test]
    fn without_listeners_one_plaintext_listener_serves_listen() {
        let parsed = parse_listeners("", "", "", listen(), Some("broker1:19092")).unwrap();
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].protocol, SecurityProtocol::Plaintext);
        assert_eq!(
            (
                parsed[0].advertised_host.as_str(),
                parsed[0].advertised_port
            ),
            ("broker1", 19092)
        );
    }

    #[test]
    fn kafka_forms_parse_with_names_protocols_and_advertised_addresses() {
        let parsed = parse_listeners(
            "PLAINTEXT://127.0.0.1:9092,INTERNAL://127.0.0.1:9094,SASL_SSL://:9093",
            "SASL_SSL://kafka.example.com:443",
            "INTERNAL:SASL_PLAINTEXT",
            listen(),
            None,
        )
        .unwrap();
        let protocols: Vec<_> = parsed
            .iter()
            .map(|l| (l.name.as_str(), l.protocol))
            .collect();
        assert_eq!(
            protocols,
            [
                ("PLAINTEXT", SecurityProtocol::Plaintext),
                ("INTERNAL", SecurityProtocol::SaslPlaintext),
                ("SASL_SSL", SecurityProtocol::SaslSsl)
            ]
        );
        assert_eq!(parsed[2].address, "0.0.0.0:9093".parse().unwrap());
        assert_eq!(parsed[2].advertised_host, "kafka.example.com");
        assert_eq!(parsed[2].advertised_port, 443);
        assert_eq!(parsed[1].advertised_host, "127.0.0.1");
    }

    #[test]
    fn unknown_protocols_repeats_and_stray_advertised_names_are_refused() {
        assert!(parse_listeners("CUSTOM://:1", "", "", listen(), None).is_err());
        assert!(parse_listeners("PLAINTEXT://:1,SSL://:1", "", "", listen(), None).is_err());
        assert!(parse_listeners("PLAINTEXT://:1", "SSL://a:2", "", listen(), None).is_err());
        assert!(parse_listeners("PLAINTEXT://:x", "", "", listen(), None).is_err());
    }
}
