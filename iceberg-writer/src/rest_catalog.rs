//! The Iceberg REST catalog protocol as a client (Apache Iceberg's `rest-catalog-open-api`;
//! served by Polaris, Lakekeeper, Gravitino, Unity, Glue's Iceberg endpoint and Iceberg's own
//! reference server). A new table is registered at the metadata file the writer stored
//! (`register`), so its field ids are the writer's; a commit sends its changes with the
//! requirements that make it fail when another writer moved `main` first
//! (`shoal_iceberg::rest_commit`), and the catalog writes the metadata file.
//!
//! Blocking: the table writer's thread calls it. Each request has a deadline and its answer a
//! bound; a commit whose answer is lost is not retried here: the next round loads the table
//! and, if the commit landed, starts from it (its offsets are in its snapshot).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use shoal_iceberg::catalog::{Catalog, Pointer, TableName, Version};
use shoal_iceberg::rest_commit::commit_request;
use shoal_iceberg::IcebergError;
use shoal_net::http_client::{self, percent_encode, HttpAnswer, HttpLimits, HttpRequest, HttpUrl};

use super::rest_auth::RestAuth;
use super::tables::METADATA_MAX_BYTES;
use crate::config::RestCatalogConfig;

/// How long connecting, and each read and write of a request, may take.
const TIMEOUT: Duration = Duration::from_secs(30);

pub struct RestCatalog {
    /// The catalog's base URL (`…/v1/` and its prefix are added).
    base: HttpUrl,
    /// The path every table route starts with: `/v1/` and the prefix the catalog's config
    /// gives, if any.
    routes: String,
    auth: RestAuth,
    tls: Option<Arc<rustls::ClientConfig>>,
}

fn failed(why: impl std::fmt::Display) -> IcebergError {
    IcebergError::Catalog(format!("REST catalog: {why}"))
}

impl RestCatalog {
    /// Asks the catalog at `config.url` for its settings (`GET /v1/config`): the prefix its
    /// routes take.
    pub fn connect(config: &RestCatalogConfig) -> Result<RestCatalog, String> {
        let base = HttpUrl::parse(config.url.trim_end_matches('/')).map_err(|e| e.to_string())?;
        let tls = match base.https {
            true => Some(
                shoal_net::tls_client::client_config(config.ca_file.as_deref(), None)
                    .map_err(|e| e.to_string())?,
            ),
            false => None,
        };
        let mut catalog = RestCatalog {
            routes: String::new(),
            auth: RestAuth::of(config, &base)?,
            base,
            tls,
        };
        let mut path = format!("{}/v1/config", catalog.base_path());
        if let Some(warehouse) = &config.warehouse {
            path.push_str(&format!("?warehouse={}", percent_encode(warehouse)));
        }
        let answer = catalog
            .send("GET", &path, None)
            .map_err(|e| e.to_string())?;
        let settings = catalog
            .json(&answer, "GET /v1/config")
            .map_err(|e| e.to_string())?;
        // Overrides win over defaults (the protocol's rule for every setting).
        let prefix =
            (settings["overrides"]["prefix"].as_str()).or(settings["defaults"]["prefix"].as_str());
        catalog.routes = match prefix {
            Some(prefix) => format!("{}/v1/{}/", catalog.base_path(), prefix.trim_matches('/')),
            None => format!("{}/v1/", catalog.base_path()),
        };
        Ok(catalog)
    }

    fn base_path(&self) -> &str {
        self.base.path.trim_end_matches('/')
    }

    /// Sends a request; a token the catalog refuses (401) is asked for anew once.
    fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<HttpAnswer, IcebergError> {
        let body = body.map(Value::to_string).unwrap_or_default();
        let answer = self.send_once(method, path, &body)?;
        if answer.status != 401 || !self.auth.renews() {
            return Ok(answer);
        }
        self.auth.forget();
        self.send_once(method, path, &body)
    }

    fn send_once(&self, method: &str, path: &str, body: &str) -> Result<HttpAnswer, IcebergError> {
        let url = self.base.with_path(path);
        let authorization = self.auth.header()?;
        let mut headers = vec![("Accept", "application/json")];
        if !body.is_empty() {
            headers.push(("Content-Type", "application/json"));
        }
        if let Some(authorization) = &authorization {
            headers.push(("Authorization", authorization));
        }
        let request = HttpRequest {
            method,
            url: &url,
            headers: &headers,
            body: body.as_bytes(),
        };
        let limits = HttpLimits {
            tls: self.tls.as_ref(),
            timeout: TIMEOUT,
            body_max_bytes: METADATA_MAX_BYTES,
        };
        http_client::send(&request, &limits).map_err(failed)
    }

    /// The answer's JSON when it is a success; else the catalog's error, with its message.
    fn json(&self, answer: &HttpAnswer, what: &str) -> Result<Value, IcebergError> {
        if !(200..300).contains(&answer.status) {
            return Err(failed(refusal(what, answer)));
        }
        serde_json::from_slice(&answer.body).map_err(|e| failed(format!("{what}: {e}")))
    }

    fn namespace_path(&self, namespace: &str) -> String {
        format!("{}namespaces/{}", self.routes, percent_encode(namespace))
    }

    fn table_path(&self, table: &TableName) -> String {
        format!(
            "{}/tables/{}",
            self.namespace_path(&table.namespace),
            percent_encode(&table.table)
        )
    }

    /// Makes the namespace unless it is there.
    fn create_namespace(&self, namespace: &str) -> Result<(), IcebergError> {
        let body = json!({"namespace": [namespace], "properties": {}});
        let path = format!("{}namespaces", self.routes);
        let answer = self.send("POST", &path, Some(&body))?;
        match answer.status {
            409 => Ok(()),
            _ => self.json(&answer, "create namespace").map(drop),
        }
    }
}

/// What a refused request says: the protocol's `ErrorModel` message, or the status.
fn refusal(what: &str, answer: &HttpAnswer) -> String {
    let said: Option<Value> = serde_json::from_slice(&answer.body).ok();
    let message = said
        .as_ref()
        .and_then(|e| e["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| {
            String::from_utf8_lossy(&answer.body)
                .chars()
                .take(300)
                .collect()
        });
    format!("{what}: HTTP {}: {message}", answer.status)
}

impl Catalog for RestCatalog {
    fn load(&self, table: &TableName) -> Result<Option<Pointer>, IcebergError> {
        let answer = self.send("GET", &self.table_path(table), None)?;
        if answer.status == 404 {
            return Ok(None);
        }
        let loaded = self.json(&answer, "load table")?;
        let location = loaded["metadata-location"]
            .as_str()
            .ok_or_else(|| failed("load table: no metadata-location"))?
            .to_string();
        let metadata = match &loaded["metadata"] {
            Value::Object(_) => loaded["metadata"].clone(),
            _ => return Err(failed("load table: no metadata")),
        };
        Ok(Some(Pointer {
            location,
            metadata: Some(metadata),
        }))
    }

    fn create(&self, table: &TableName, metadata_location: &str) -> Result<bool, IcebergError> {
        self.create_namespace(&table.namespace)?;
        let body = json!({"name": table.table, "metadata-location": metadata_location});
        let path = format!("{}/register", self.namespace_path(&table.namespace));
        let answer = self.send("POST", &path, Some(&body))?;
        match answer.status {
            409 => Ok(false),
            _ => self.json(&answer, "register table").map(|_| true),
        }
    }

    fn commit(
        &self,
        table: &TableName,
        from: Version<'_>,
        next: Version<'_>,
    ) -> Result<bool, IcebergError> {
        let body = commit_request(from.metadata, next.metadata)?;
        let answer = self.send("POST", &self.table_path(table), Some(&body))?;
        match answer.status {
            // A requirement failed: another writer committed first.
            409 => Ok(false),
            _ => self.json(&answer, "commit").map(|_| true),
        }
    }

    fn writes_metadata(&self) -> bool {
        true
    }
}
