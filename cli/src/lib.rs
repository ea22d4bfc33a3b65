//! `shoal topic|group|acl|user|schema|produce|consume|mirror|transactions|cluster ...`: everyday admin
//! over the Kafka protocol against any broker, as Redpanda's `rpk` does it: one way to connect
//! (`-b`, `-X`, `--command-config`: TLS, SASL PLAIN, SCRAM or OAUTHBEARER), tables by default,
//! `--format json` for scripts.
//! Exit status: 0 done, 1 a broker refused (the error and its message are printed), 2 the
//! command or the connection failed.

pub mod acls;
mod client;
pub mod cluster;
mod connection;
pub mod consume;
mod datetime;
mod error;
pub mod groups;
pub mod mirrors;
pub mod offsets;
mod partitioner;
pub mod produce;
mod record_json;
pub mod registry_client;
mod schema_import;
pub mod schemas;
pub mod status;
pub mod tokens;
pub mod topics;
pub mod transactions;
pub mod users;

use std::path::PathBuf;

pub use client::Admin;
pub use error::{check, only_item, AdminError};
pub use shoal_auth::name_value;
use shoal_auth::{properties, ClientSecurity};

/// Which broker an admin command asks, how it connects, and how it prints what it found.
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "Connection and output")]
pub struct Target {
    /// The broker to ask.
    #[arg(long, short, global = true, default_value = "127.0.0.1:9092")]
    pub bootstrap: String,
    /// table for people, json for scripts.
    #[arg(long, value_enum, global = true, default_value = "table")]
    pub format: Format,
    /// A Kafka client security setting, name=value (repeatable): security.protocol,
    /// sasl.mechanism, sasl.username, sasl.password, sasl.jaas.config, ssl.ca.location,
    /// ssl.certificate.location, ssl.key.location (PEM files); for OAUTHBEARER,
    /// sasl.oauthbearer.token.endpoint.url (file:// for a token file), .client.id,
    /// .client.secret, .scope, .extensions, and https.ca.location.
    #[arg(short = 'X', long = "client-config", global = true, value_parser = name_value)]
    pub client_config: Vec<(String, String)>,
    /// A file of those settings, one name=value a line ('#' starts a comment), as Kafka's
    /// tools take with --command-config; -X settings override it. Keeps a password off the
    /// command line.
    #[arg(long, global = true)]
    pub command_config: Option<PathBuf>,
}

impl Target {
    /// A connection to the bootstrap broker, secured as the settings say.
    pub fn connect(&self) -> Result<Admin, AdminError> {
        Admin::connect(&self.bootstrap, self.security()?)
    }

    fn security(&self) -> Result<ClientSecurity, AdminError> {
        let mut settings = match &self.command_config {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| e.to_string())
                .and_then(|text| properties(&text))
                .map_err(|e| AdminError::Protocol(format!("{}: {e}", path.display())))?,
            None => Vec::new(),
        };
        settings.extend(self.client_config.iter().cloned());
        ClientSecurity::from_client_settings(settings.iter().map(|(n, v)| (n.as_str(), v.as_str())))
            .map_err(AdminError::Protocol)
    }
}

/// How a command prints what it found.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
}

/// Prints rows under a header, each column as wide as its widest cell.
pub fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", padded.join("  ").trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}
