//! Where and how the table writer asks for value schemas: `[iceberg] schema_registry_url`, or
//! this broker's own registry (`[schema_registry] listen`) the way it is served. The own
//! registry's HTTPS certificate is the broker's, trusted as the writer's Kafka client trusts
//! it (`[iceberg.client]`'s `ssl.ca.location`); its HTTP Basic users are the broker's SASL
//! users, so the writer logs in as the user `[iceberg.client]` names.

use std::path::PathBuf;

use shoal_auth::ClientSecurity;

use crate::config::IcebergConfig;
use crate::setup::reachable;
use shoal_registry_server::Authentication;
use shoal_registry_server::SchemaRegistryConfig;

/// A schema registry the writer asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryAccess {
    pub url: String,
    /// PEM CAs trusted for an https registry, besides the system's.
    pub ca_file: Option<PathBuf>,
    /// HTTP Basic credentials, `user:password`.
    pub user_info: Option<String>,
}

/// The registry `config` names, else the broker's own; None when there is neither (tables
/// then keep values as bytes).
pub fn resolve(
    config: &IcebergConfig,
    own: &SchemaRegistryConfig,
    client: &ClientSecurity,
) -> Option<RegistryAccess> {
    if let Some(url) = &config.schema_registry_url {
        return Some(RegistryAccess {
            url: url.clone(),
            ca_file: config.schema_registry_ca_file.clone(),
            user_info: config.schema_registry_user_info.clone(),
        });
    }
    let address = reachable(own.listen?);
    let scheme = if own.tls { "https" } else { "http" };
    let login = (own.authentication == Authentication::Basic && !client.sasl_username.is_empty())
        .then(|| format!("{}:{}", client.sasl_username, client.sasl_password));
    Some(RegistryAccess {
        url: format!("{scheme}://{address}"),
        ca_file: (config.schema_registry_ca_file.clone()).or_else(|| client.ssl_ca_file.clone()),
        user_info: config.schema_registry_user_info.clone().or(login),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(settings: &[(&str, &str)]) -> ClientSecurity {
        ClientSecurity::from_client_settings(settings.iter().copied()).unwrap()
    }

    #[test]
    fn the_own_registry_is_reached_as_it_is_served_and_as_the_writer_logs_in() {
        let config = IcebergConfig::default();
        let mut own = SchemaRegistryConfig {
            listen: Some("0.0.0.0:8081".parse().unwrap()),
            ..Default::default()
        };
        let anonymous = client(&[]);
        assert_eq!(
            resolve(&config, &own, &anonymous),
            Some(RegistryAccess {
                url: "http://127.0.0.1:8081".into(),
                ca_file: None,
                user_info: None,
            })
        );
        own.tls = true;
        own.authentication = Authentication::Basic;
        let tables = client(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.username", "tables"),
            ("sasl.password", "tables-secret"),
            ("ssl.ca.location", "/etc/shoal/ca.pem"),
        ]);
        assert_eq!(
            resolve(&config, &own, &tables),
            Some(RegistryAccess {
                url: "https://127.0.0.1:8081".into(),
                ca_file: Some("/etc/shoal/ca.pem".into()),
                user_info: Some("tables:tables-secret".into()),
            })
        );
        // Named settings win; a registry named elsewhere gets only them.
        let named = IcebergConfig {
            schema_registry_url: Some("https://registry.example.com:443".into()),
            schema_registry_user_info: Some("sr:secret".into()),
            ..Default::default()
        };
        assert_eq!(
            resolve(&named, &own, &tables),
            Some(RegistryAccess {
                url: "https://registry.example.com:443".into(),
                ca_file: None,
                user_info: Some("sr:secret".into()),
            })
        );
        own.listen = None;
        assert_eq!(resolve(&config, &own, &tables), None);
    }
}
