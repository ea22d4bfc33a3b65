//! TLS client settings for HTTPS to the object store and for Kafka clients (mirrors reaching
//! their source, the admin commands, the benchmark): rustls with the system's CAs plus a
//! configured CA file (a private server's own CA), and optionally a client certificate.

use std::path::Path;
use std::sync::Arc;

use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use shoal_auth::ClientSecurity;

use crate::NetError;

/// A client certificate: its chain and key, PEM files.
pub struct ClientCertificate<'a> {
    pub chain_file: &'a Path,
    pub key_file: &'a Path,
}

pub fn client_config(
    ca_file: Option<&Path>,
    certificate: Option<ClientCertificate<'_>>,
) -> Result<Arc<ClientConfig>, NetError> {
    let mut roots = RootCertStore::empty();
    let system = rustls_native_certs::load_native_certs();
    let (added, _unusable) = roots.add_parsable_certificates(system.certs);
    if let Some(path) = ca_file {
        for ca in pem_certificates(path)? {
            roots
                .add(ca)
                .map_err(|e| NetError::Config(format!("{}: unusable CA: {e}", path.display())))?;
        }
    } else if added == 0 {
        return Err(NetError::Config(
            "TLS: no CA certificates on this system; configure a CA file".into(),
        ));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| NetError::Config(format!("TLS: {e}")))?
        .with_root_certificates(roots);
    let config = match certificate {
        None => builder.with_no_client_auth(),
        Some(ClientCertificate {
            chain_file,
            key_file,
        }) => {
            let chain = pem_certificates(chain_file)?;
            let key = PrivateKeyDer::from_pem_file(key_file)
                .map_err(|e| NetError::Config(format!("{}: {e}", key_file.display())))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| NetError::Config(format!("{}: {e}", chain_file.display())))?
        }
    };
    Ok(Arc::new(config))
}

/// TLS as a Kafka client configured by `security` reaching `address` (host:port): the rustls
/// settings, and the name the broker's certificate must carry (the host).
pub fn kafka_client_tls(
    security: &ClientSecurity,
    address: &str,
) -> Result<(Arc<ClientConfig>, ServerName<'static>), NetError> {
    let certificate = security
        .ssl_certificate_file
        .as_deref()
        .zip(security.ssl_key_file.as_deref())
        .map(|(chain_file, key_file)| ClientCertificate {
            chain_file,
            key_file,
        });
    let config = client_config(security.ssl_ca_file.as_deref(), certificate)?;
    let host = address.rsplit_once(':').map_or(address, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| NetError::Config(format!("{host}: {e}")))?;
    Ok((config, name))
}

/// Every certificate in a PEM file; none is an error. Also the broker's TLS listeners' reader.
pub fn pem_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, NetError> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| NetError::Config(format!("{}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(NetError::Config(format!(
            "{}: no PEM certificate in it",
            path.display()
        )));
    }
    Ok(certs)
}
