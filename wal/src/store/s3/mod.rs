//! An S3-compatible object store: requests signed with rusty_s3 (presigned URLs, so no body
//! hashing), sent by the executor's own HTTP/1.1 client. Plain HTTP only for now.

mod http;
mod io;
mod outcomes;

pub use self::http::HttpConfig;

use std::net::ToSocketAddrs;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use rustls_pki_types::ServerName;
use rusty_s3::actions::{ListObjectsV2, ObjectIdentifier, S3Action};
use rusty_s3::{Bucket, Credentials, UrlStyle};

use self::http::{HttpClient, HttpResponse};
use super::kinds::ListedObject;
use crate::WalError;

/// How long a signed request stays valid; requests are signed just before they are sent.
pub const SIGNATURE_TTL: Duration = Duration::from_secs(15 * 60);
/// S3's limit per DeleteObjects request.
const DELETE_BATCH_MAX: usize = 1000;
/// S3's minimum size of every multipart part but the last.
const PART_MIN_BYTES: usize = 5 << 20;

#[derive(Debug, Clone)]
pub struct S3Config {
    /// e.g. `http://127.0.0.1:9000` or `https://s3.eu-west-1.amazonaws.com`
    pub endpoint: String,
    pub bucket: String,
    pub region: String,
    /// Prepended (with `/`) to every object key; empty for none.
    pub key_prefix: String,
    /// Path-style (`endpoint/bucket/key`) rather than virtual-host addressing.
    pub path_style: bool,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    /// For https endpoints: a PEM file of CAs trusted besides the system's.
    pub ca_file: Option<std::path::PathBuf>,
    /// Objects larger than this are uploaded in parts.
    pub multipart_threshold_bytes: usize,
    pub part_size_bytes: usize,
    pub http: HttpConfig,
}

pub struct S3Store {
    bucket: Bucket,
    credentials: Option<Credentials>,
    key_prefix: String,
    multipart_threshold_bytes: usize,
    part_size_bytes: usize,
    http: HttpClient,
}

/// The bucket `config` names, as requests to it are signed, whether its endpoint is https, and
/// the credentials (none: unsigned requests).
pub fn signing(config: &S3Config) -> Result<(Bucket, bool, Option<Credentials>), WalError> {
    let endpoint: url::Url = config
        .endpoint
        .parse()
        .map_err(|e| WalError::Config(format!("endpoint {}: {e}", config.endpoint)))?;
    let https = match endpoint.scheme() {
        "http" => false,
        "https" => true,
        other => {
            return Err(WalError::Config(format!(
                "endpoint {}: {other}:// is neither http nor https",
                config.endpoint
            )))
        }
    };
    let style = if config.path_style {
        UrlStyle::Path
    } else {
        UrlStyle::VirtualHost
    };
    let bucket = Bucket::new(
        endpoint,
        style,
        config.bucket.clone(),
        config.region.clone(),
    )
    .map_err(|e| WalError::Config(format!("bucket {}: {e}", config.bucket)))?;
    let credentials = match (&config.access_key_id, &config.secret_access_key) {
        (Some(key), Some(secret)) => Some(match &config.session_token {
            Some(token) => Credentials::new_with_token(key, secret, token),
            None => Credentials::new(key, secret),
        }),
        _ => None,
    };
    Ok((bucket, https, credentials))
}

impl S3Store {
    pub fn new(config: &S3Config) -> Result<S3Store, WalError> {
        let (bucket, https, credentials) = signing(config)?;
        let base = bucket.base_url();
        let host = base
            .host_str()
            .ok_or_else(|| WalError::Config("endpoint has no host".into()))?
            .to_string();
        let port = base
            .port_or_known_default()
            .unwrap_or(if https { 443 } else { 80 });
        // Resolved once, at start-up.
        let addr = (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| WalError::Unreachable(format!("{host}:{port}: {e}")))?
            .next()
            .ok_or_else(|| WalError::Unreachable(format!("{host}:{port} has no address")))?;
        let tls = match https {
            true => {
                let name = ServerName::try_from(host.clone())
                    .map_err(|e| WalError::Config(format!("endpoint host {host}: {e}")))?;
                Some((
                    shoal_net::tls_client::client_config(config.ca_file.as_deref(), None)?,
                    name,
                ))
            }
            false => None,
        };
        let host_header = match base.port() {
            Some(port) => format!("{host}:{port}"),
            None => host,
        };
        Ok(S3Store {
            bucket,
            credentials,
            key_prefix: config.key_prefix.trim_matches('/').to_string(),
            multipart_threshold_bytes: config.multipart_threshold_bytes,
            part_size_bytes: config.part_size_bytes.max(PART_MIN_BYTES),
            http: HttpClient::new(addr, host_header, tls, config.http.clone()),
        })
    }

    fn full_key(&self, key: &str) -> String {
        if self.key_prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}/{key}", self.key_prefix)
        }
    }

    /// Requests sent so far by (operation, outcome).
    pub fn request_outcomes(&self) -> Vec<((&'static str, &'static str), u64)> {
        self.http.outcomes.snapshot()
    }

    async fn send(
        &self,
        op: &'static str,
        action: &impl S3Action<'_>,
        headers: &[(&str, String)],
        body: Bytes,
    ) -> Result<HttpResponse, WalError> {
        let url = action.sign(SIGNATURE_TTL);
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_string(),
        };
        let method = match action_method(action) {
            rusty_s3::Method::Get => ::http::Method::GET,
            rusty_s3::Method::Put => ::http::Method::PUT,
            rusty_s3::Method::Post => ::http::Method::POST,
            rusty_s3::Method::Delete => ::http::Method::DELETE,
            rusty_s3::Method::Head => ::http::Method::HEAD,
        };
        self.http.request(op, method, &target, headers, body).await
    }

    /// Fails with a clear error if the bucket cannot be reached or the credentials are refused.
    pub async fn check_bucket(&self) -> Result<(), WalError> {
        let action = self.bucket.head_bucket(self.credentials.as_ref());
        let response = self.send("HeadBucket", &action, &[], Bytes::new()).await?;
        match response.status {
            200 => Ok(()),
            403 => Err(WalError::Unreachable(format!(
                "bucket {}: the credentials were refused (HTTP 403)",
                self.bucket.name()
            ))),
            404 => Err(WalError::Unreachable(format!(
                "bucket {} does not exist (HTTP 404)",
                self.bucket.name()
            ))),
            status => Err(failure("HeadBucket", status, &response.body)),
        }
    }

    pub async fn put(&self, key: &str, data: Bytes) -> Result<(), WalError> {
        if data.len() > self.multipart_threshold_bytes {
            return self.put_multipart(key, data).await;
        }
        let full_key = self.full_key(key);
        let action = self.bucket.put_object(self.credentials.as_ref(), &full_key);
        let response = self.send("PutObject", &action, &[], data).await?;
        match response.status {
            200 => Ok(()),
            status => Err(failure("PutObject", status, &response.body)),
        }
    }

    async fn put_multipart(&self, key: &str, data: Bytes) -> Result<(), WalError> {
        let full_key = self.full_key(key);
        let create = self
            .bucket
            .create_multipart_upload(self.credentials.as_ref(), &full_key);
        let response = self
            .send("CreateMultipartUpload", &create, &[], Bytes::new())
            .await?;
        if response.status != 200 {
            return Err(failure(
                "CreateMultipartUpload",
                response.status,
                &response.body,
            ));
        }
        let text = String::from_utf8_lossy(&response.body);
        let created = rusty_s3::actions::CreateMultipartUpload::parse_response(&text)
            .map_err(|e| failure("CreateMultipartUpload", 200, e.to_string().as_bytes()))?;
        let upload_id = created.upload_id().to_string();
        let uploaded = self.upload_parts(&full_key, &upload_id, &data).await;
        let result = match uploaded {
            Ok(etags) => {
                let complete = self.bucket.complete_multipart_upload(
                    self.credentials.as_ref(),
                    &full_key,
                    &upload_id,
                    etags.iter().map(String::as_str),
                );
                let url_action = self.bucket.complete_multipart_upload(
                    self.credentials.as_ref(),
                    &full_key,
                    &upload_id,
                    etags.iter().map(String::as_str),
                );
                let body = Bytes::from(complete.body());
                let response = self
                    .send("CompleteMultipartUpload", &url_action, &[], body)
                    .await?;
                match response.status {
                    200 => Ok(()),
                    status => Err(failure("CompleteMultipartUpload", status, &response.body)),
                }
            }
            Err(e) => Err(e),
        };
        if result.is_err() {
            let abort = self.bucket.abort_multipart_upload(
                self.credentials.as_ref(),
                &full_key,
                &upload_id,
            );
            let _ = self
                .send("AbortMultipartUpload", &abort, &[], Bytes::new())
                .await;
        }
        result
    }

    async fn upload_parts(
        &self,
        full_key: &str,
        upload_id: &str,
        data: &Bytes,
    ) -> Result<Vec<String>, WalError> {
        let mut etags = Vec::new();
        for (index, start) in (0..data.len()).step_by(self.part_size_bytes).enumerate() {
            let end = (start + self.part_size_bytes).min(data.len());
            let part_number =
                u16::try_from(index + 1).map_err(|_| WalError::ObjectTooLarge(data.len()))?;
            let action = self.bucket.upload_part(
                self.credentials.as_ref(),
                full_key,
                part_number,
                upload_id,
            );
            let response = self
                .send("UploadPart", &action, &[], data.slice(start..end))
                .await?;
            match (response.status, response.etag) {
                (200, Some(etag)) => etags.push(etag),
                (status, _) => return Err(failure("UploadPart", status, &response.body)),
            }
        }
        Ok(etags)
    }

    pub async fn get_range(&self, key: &str, offset: u64, len: usize) -> Result<Bytes, WalError> {
        if len == 0 {
            return Ok(Bytes::new());
        }
        let full_key = self.full_key(key);
        let action = self.bucket.get_object(self.credentials.as_ref(), &full_key);
        let range = format!("bytes={}-{}", offset, offset + len as u64 - 1);
        let response = self
            .send("GetObject", &action, &[("range", range)], Bytes::new())
            .await?;
        let body = match response.status {
            206 => response.body,
            // A server that ignores Range sends the whole object.
            200 if response.body.len() as u64 >= offset + len as u64 => {
                response.body.slice(offset as usize..offset as usize + len)
            }
            200 | 416 => Bytes::new(),
            404 => return Err(WalError::NotFound(key.to_string())),
            status => return Err(failure("GetObject", status, &response.body)),
        };
        if body.len() != len {
            return Err(WalError::ShortObject {
                key: key.to_string(),
                offset,
                len,
            });
        }
        Ok(body)
    }

    /// The object's size, or None when there is no such object (HeadObject).
    pub async fn size(&self, key: &str) -> Result<Option<u64>, WalError> {
        let full_key = self.full_key(key);
        let action = self
            .bucket
            .head_object(self.credentials.as_ref(), &full_key);
        let response = self.send("HeadObject", &action, &[], Bytes::new()).await?;
        match response.status {
            200 => response
                .content_length
                .map(Some)
                .ok_or_else(|| WalError::Http {
                    op: "HeadObject",
                    status: 200,
                    message: "no Content-Length".to_string(),
                }),
            404 => Ok(None),
            status => Err(failure("HeadObject", status, &response.body)),
        }
    }

    pub async fn delete(&self, key: &str) -> Result<(), WalError> {
        let full_key = self.full_key(key);
        let action = self
            .bucket
            .delete_object(self.credentials.as_ref(), &full_key);
        let response = self
            .send("DeleteObject", &action, &[], Bytes::new())
            .await?;
        match response.status {
            200 | 204 | 404 => Ok(()),
            status => Err(failure("DeleteObject", status, &response.body)),
        }
    }

    /// Deletes in batches of at most 1000 keys; returns the keys that are gone.
    pub async fn delete_many(&self, keys: &[String]) -> Result<Vec<String>, WalError> {
        let mut deleted = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(DELETE_BATCH_MAX) {
            let objects: Vec<ObjectIdentifier> = chunk
                .iter()
                .map(|k| ObjectIdentifier::new(self.full_key(k)))
                .collect();
            let action = self
                .bucket
                .delete_objects(self.credentials.as_ref(), objects.iter());
            let url_action = self
                .bucket
                .delete_objects(self.credentials.as_ref(), objects.iter());
            let (body, md5) = action.body_with_md5();
            let response = self
                .send(
                    "DeleteObjects",
                    &url_action,
                    &[("content-md5", md5)],
                    Bytes::from(body),
                )
                .await?;
            if response.status != 200 {
                return Err(failure("DeleteObjects", response.status, &response.body));
            }
            let text = String::from_utf8_lossy(&response.body);
            let refused: Vec<String> = match rusty_s3::actions::DeleteObjectsResponse::parse(&text)
            {
                Ok(parsed) => parsed.errors.into_iter().map(|e| e.key).collect(),
                Err(e) => return Err(failure("DeleteObjects", 200, e.to_string().as_bytes())),
            };
            for (key, full) in chunk.iter().zip(&objects) {
                if !refused.contains(&full.key) {
                    deleted.push(key.clone());
                }
            }
        }
        Ok(deleted)
    }

    /// Every object under `prefix`, following ListObjectsV2's continuation tokens.
    pub async fn list(&self, prefix: &str) -> Result<Vec<ListedObject>, WalError> {
        let full_prefix = format!("{}/", self.full_key(prefix));
        let strip = if self.key_prefix.is_empty() {
            0
        } else {
            self.key_prefix.len() + 1
        };
        let mut listed = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut action = ListObjectsV2::new(&self.bucket, self.credentials.as_ref());
            action.with_prefix(full_prefix.as_str());
            if let Some(token) = &token {
                action.with_continuation_token(token.as_str());
            }
            let response = self
                .send("ListObjectsV2", &action, &[], Bytes::new())
                .await?;
            if response.status != 200 {
                return Err(failure("ListObjectsV2", response.status, &response.body));
            }
            let text = String::from_utf8_lossy(&response.body);
            let page = ListObjectsV2::parse_response(&text)
                .map_err(|e| failure("ListObjectsV2", 200, e.to_string().as_bytes()))?;
            for object in page.contents {
                let modified = object
                    .last_modified
                    .as_deref()
                    .and_then(parse_timestamp)
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                if let Some(key) = object.key.get(strip..) {
                    listed.push(ListedObject {
                        key: key.to_string(),
                        modified,
                    });
                }
            }
            match page.next_continuation_token {
                Some(next) => token = Some(next),
                None => return Ok(listed),
            }
        }
    }
}

fn action_method<'a, A: S3Action<'a>>(_: &A) -> rusty_s3::Method {
    A::METHOD
}

/// An S3 answer with a status the operation does not take, with the start of its error
/// document.
pub fn failure(op: &'static str, status: u16, body: &[u8]) -> WalError {
    let text = String::from_utf8_lossy(body);
    WalError::Http {
        op,
        status,
        message: text.chars().take(200).collect(),
    }
}

/// S3 writes LastModified as RFC 3339.
fn parse_timestamp(text: &str) -> Option<SystemTime> {
    let timestamp: jiff::Timestamp = text.parse().ok()?;
    let millis = u64::try_from(timestamp.as_millisecond()).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_millis(millis))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_s3_timestamps() {
        let t = parse_timestamp("2009-10-12T17:50:30.000Z").unwrap();
        let secs = t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
        assert_eq!(secs, 1_255_369_830);
        assert!(parse_timestamp("yesterday").is_none());
    }
}
