//! TLS as a Kafka client: the settings a client names (`ssl.ca.location`, a client
//! certificate) made into rustls's, and the name the broker's certificate must carry. Used by
//! mirrors reaching their source and by the admin CLI.

use std::path::Path;
use std::sync::Arc;

use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use shoal_mirror::SourceSecurity;
use shoal_net::tls_client::{client_config, ClientCertificate};

/// The TLS settings for reaching `address` (host:port), and the name its certificate must
/// carry: the host.
pub fn client_tls(
    security: &SourceSecurity,
    address: &str,
) -> Result<(Arc<ClientConfig>, ServerName<'static>), String> {
    let path = |p: &str| (!p.is_empty()).then(|| Path::new(p).to_path_buf());
    let ca_file = path(&security.ssl_ca_file);
    let (chain, key) = (
        path(&security.ssl_certificate_file),
        path(&security.ssl_key_file),
    );
    let certificate = chain
        .as_deref()
        .zip(key.as_deref())
        .map(|(chain_file, key_file)| ClientCertificate {
            chain_file,
            key_file,
        });
    let config = client_config(ca_file.as_deref(), certificate).map_err(|e| e.to_string())?;
    let host = address.rsplit_once(':').map_or(address, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let name = ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
    Ok((config, name))
}
