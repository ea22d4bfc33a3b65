//! A blocking S3 client for the table writer's thread: requests signed as the WAL's store signs
//! them (`shoal_wal::store::s3::signing`), sent by `shoal_net`'s blocking HTTP client, each with
//! the store's request deadline.

use std::sync::Arc;
use std::time::Duration;

use rusty_s3::{Bucket, Credentials, S3Action};
use shoal_net::http_client::{self, HttpAnswer, HttpLimits, HttpRequest, HttpUrl};
use shoal_wal::store::s3::{failure, signing, S3Config, SIGNATURE_TTL};

pub struct BlockingS3 {
    bucket: Bucket,
    credentials: Option<Credentials>,
    tls: Option<Arc<rustls::ClientConfig>>,
    timeout: Duration,
}

impl BlockingS3 {
    pub fn new(config: &S3Config) -> Result<BlockingS3, String> {
        let (bucket, https, credentials) = signing(config).map_err(|e| e.to_string())?;
        let tls = match https {
            true => Some(
                shoal_net::tls_client::client_config(config.ca_file.as_deref(), None)
                    .map_err(|e| e.to_string())?,
            ),
            false => None,
        };
        Ok(BlockingS3 {
            bucket,
            credentials,
            tls,
            timeout: config.http.request_timeout,
        })
    }

    pub fn bucket_name(&self) -> &str {
        self.bucket.name()
    }

    fn send<'a>(
        &self,
        operation: &'static str,
        method: &str,
        action: &impl S3Action<'a>,
        body: &[u8],
        max_bytes: u64,
    ) -> Result<HttpAnswer, String> {
        let url = action.sign(SIGNATURE_TTL);
        let url = HttpUrl::parse(url.as_str()).map_err(|e| e.to_string())?;
        let request = HttpRequest {
            method,
            url: &url,
            headers: &[],
            body,
        };
        let limits = HttpLimits {
            tls: self.tls.as_ref(),
            timeout: self.timeout,
            body_max_bytes: max_bytes,
        };
        http_client::send(&request, &limits).map_err(|e| format!("S3 {operation}: {e}"))
    }

    pub fn put(&self, key: &str, bytes: &[u8]) -> Result<(), String> {
        let action = self.bucket.put_object(self.credentials.as_ref(), key);
        let answer = self.send("PutObject", "PUT", &action, bytes, ERROR_BODY_MAX)?;
        expect(&answer, "PutObject", key, &[200])
    }

    /// The object at `key`, refused past `max_bytes`.
    pub fn get(&self, key: &str, max_bytes: u64) -> Result<Vec<u8>, String> {
        let action = self.bucket.get_object(self.credentials.as_ref(), key);
        let answer = self.send("GetObject", "GET", &action, &[], max_bytes)?;
        expect(&answer, "GetObject", key, &[200])?;
        Ok(answer.body)
    }

    pub fn delete(&self, key: &str) -> Result<(), String> {
        let action = self.bucket.delete_object(self.credentials.as_ref(), key);
        let answer = self.send("DeleteObject", "DELETE", &action, &[], ERROR_BODY_MAX)?;
        expect(&answer, "DeleteObject", key, &[200, 204, 404])
    }
}

/// An answer other than a body is an error document at most this long.
const ERROR_BODY_MAX: u64 = 1 << 20;

fn expect(
    answer: &HttpAnswer,
    operation: &'static str,
    key: &str,
    fine: &[u16],
) -> Result<(), String> {
    if fine.contains(&answer.status) {
        return Ok(());
    }
    Err(format!(
        "{key}: {}",
        failure(operation, answer.status, &answer.body)
    ))
}
