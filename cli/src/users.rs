//! `shoal user list|create|delete`: SCRAM credentials (KIP-554), as `kafka-configs.sh
//! --entity-type users --alter --add-config SCRAM-SHA-512=[password=...]` sets them; the
//! password is salted and hashed here and never sent.

use bytes::Bytes;
use kafka_protocol::protocol::StrBytes;
use serde_json::json;
use shoal_auth::scram::{random_bytes, ScramMechanism};
use shoal_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use shoal_protocol::messages::{
    AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest,
};

use super::{check, print_table, Admin, AdminError, Format, Target};

const DESCRIBE_VERSION: i16 = 0;
const ALTER_VERSION: i16 = 0;
/// Kafka's least, and what its tools use by default.
const ITERATIONS: i32 = 8192;
/// A user with no credentials at all.
const RESOURCE_NOT_FOUND: i16 = 91;

#[derive(clap::Subcommand, Debug)]
pub enum UserCommand {
    /// Every user with SCRAM credentials, and its mechanisms.
    List,
    /// Sets a user's password for a mechanism (a new user, or a new password).
    Create {
        user: String,
        /// The password; read from SHOAL_USER_PASSWORD when not given, to keep it out of the
        /// shell's history.
        #[arg(long)]
        password: Option<String>,
        #[arg(long, default_value = "SCRAM-SHA-512")]
        mechanism: String,
    },
    /// Removes a user's credentials for a mechanism.
    Delete {
        user: String,
        #[arg(long, default_value = "SCRAM-SHA-512")]
        mechanism: String,
    },
}

fn mechanism(name: &str) -> Result<ScramMechanism, AdminError> {
    [ScramMechanism::Sha256, ScramMechanism::Sha512]
        .into_iter()
        .find(|m| m.name().eq_ignore_ascii_case(name))
        .ok_or_else(|| {
            AdminError::Protocol(format!(
                "unknown mechanism '{name}': SCRAM-SHA-256 or SCRAM-SHA-512"
            ))
        })
}

pub fn run(target: &Target, command: UserCommand) -> Result<(), AdminError> {
    let (mut admin, format) = (target.connect()?, target.format);
    match command {
        UserCommand::List => list(&mut admin, format),
        UserCommand::Create {
            user,
            password,
            mechanism: name,
        } => {
            let password = password
                .or_else(|| std::env::var("SHOAL_USER_PASSWORD").ok())
                .ok_or_else(|| {
                    AdminError::Protocol("give --password or SHOAL_USER_PASSWORD".into())
                })?;
            let mechanism = mechanism(&name)?;
            let salt = random_bytes::<32>().to_vec();
            let salted = mechanism.salted_password(password.as_bytes(), &salt, ITERATIONS);
            let upsertion = ScramCredentialUpsertion::default()
                .with_name(StrBytes::from_string(user.clone()))
                .with_mechanism(mechanism.code())
                .with_iterations(ITERATIONS)
                .with_salt(Bytes::from(salt))
                .with_salted_password(Bytes::from(salted));
            alter(
                &mut admin,
                AlterUserScramCredentialsRequest::default().with_upsertions(vec![upsertion]),
            )?;
            println!("set {} for {user}", mechanism.name());
            Ok(())
        }
        UserCommand::Delete {
            user,
            mechanism: name,
        } => {
            let mechanism = mechanism(&name)?;
            let deletion = ScramCredentialDeletion::default()
                .with_name(StrBytes::from_string(user.clone()))
                .with_mechanism(mechanism.code());
            alter(
                &mut admin,
                AlterUserScramCredentialsRequest::default().with_deletions(vec![deletion]),
            )?;
            println!("deleted {} for {user}", mechanism.name());
            Ok(())
        }
    }
}

fn alter(admin: &mut Admin, request: AlterUserScramCredentialsRequest) -> Result<(), AdminError> {
    let answer = admin.call(ALTER_VERSION, &request)?;
    for r in &answer.results {
        check(r.error_code, r.error_message.as_ref().map(|m| m.as_str()))?;
    }
    Ok(())
}

fn list(admin: &mut Admin, format: Format) -> Result<(), AdminError> {
    let request = DescribeUserScramCredentialsRequest::default().with_users(None);
    let answer = admin.call(DESCRIBE_VERSION, &request)?;
    check(
        answer.error_code,
        answer.error_message.as_ref().map(|m| m.as_str()),
    )?;
    let mut users = Vec::new();
    for r in &answer.results {
        if r.error_code == RESOURCE_NOT_FOUND {
            continue;
        }
        check(r.error_code, r.error_message.as_ref().map(|m| m.as_str()))?;
        let mechanisms: Vec<(String, i32)> = r
            .credential_infos
            .iter()
            .map(|c| {
                let name = ScramMechanism::from_code(c.mechanism).map_or("unknown", |m| m.name());
                (name.to_string(), c.iterations)
            })
            .collect();
        users.push((r.user.to_string(), mechanisms));
    }
    users.sort();
    match format {
        Format::Json => {
            let list: Vec<_> = users
                .iter()
                .map(|(u, m)| {
                    json!({"user": u, "mechanisms": m.iter()
                        .map(|(n, i)| json!({"mechanism": n, "iterations": i}))
                        .collect::<Vec<_>>()})
                })
                .collect();
            println!("{}", json!(list));
        }
        Format::Table => {
            let rows: Vec<Vec<String>> = users
                .iter()
                .map(|(u, m)| {
                    let names: Vec<String> = m.iter().map(|(n, i)| format!("{n} ({i})")).collect();
                    vec![u.clone(), names.join(", ")]
                })
                .collect();
            print_table(&["USER", "MECHANISMS"], &rows);
        }
    }
    Ok(())
}
