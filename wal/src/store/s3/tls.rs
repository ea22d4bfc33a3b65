//! HTTPS to the object store: rustls with the system's CAs, plus a configured CA file (a
//! private S3 server's own CA).

use std::path::Path;
use std::sync::Arc;

use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

use crate::WalError;

pub fn client_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, WalError> {
    let mut roots = RootCertStore::empty();
    let system = rustls_native_certs::load_native_certs();
    let (added, _unusable) = roots.add_parsable_certificates(system.certs);
    if let Some(path) = ca_file {
        let config_error = |e: String| WalError::Config(format!("{}: {e}", path.display()));
        let cas = CertificateDer::pem_file_iter(path)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| config_error(e.to_string()))?;
        if cas.is_empty() {
            return Err(config_error("no PEM certificate in it".into()));
        }
        for ca in cas {
            roots
                .add(ca)
                .map_err(|e| config_error(format!("unusable CA: {e}")))?;
        }
    } else if added == 0 {
        return Err(WalError::Config(
            "https endpoint: no CA certificates on this system; set object_store.ca_file".into(),
        ));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| WalError::Config(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
