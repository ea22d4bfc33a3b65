//! `shoal token create|list|renew|expire`: delegation tokens (KIP-48), as
//! `kafka-delegation-tokens.sh` manages them. The client must log in by SASL (`-X` or
//! `--command-config`); a token's HMAC is printed in base64, the password a client logging in
//! with the token gives (with `tokenauth="true"` in its ScramLoginModule options).

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use bytes::Bytes;
use kafka_protocol::protocol::StrBytes;
use serde_json::json;
use shoal_protocol::messages::create_delegation_token_request::CreatableRenewers;
use shoal_protocol::messages::describe_delegation_token_request::DescribeDelegationTokenOwner;
use shoal_protocol::messages::{
    CreateDelegationTokenRequest, DescribeDelegationTokenRequest, ExpireDelegationTokenRequest,
    RenewDelegationTokenRequest,
};

use super::{check, print_table, Admin, AdminError, Format, Target};

const CREATE_VERSION: i16 = 3;
const DESCRIBE_VERSION: i16 = 3;
const RENEW_VERSION: i16 = 2;
const EXPIRE_VERSION: i16 = 2;

#[derive(clap::Subcommand, Debug)]
pub enum TokenCommand {
    /// Makes a token, owned by the logged-in user unless --owner names another.
    Create {
        /// e.g. User:alice (needs CREATE_TOKENS on that user).
        #[arg(long)]
        owner: Option<String>,
        /// Repeatable: a user who may renew and expire the token, e.g. User:bob.
        #[arg(long = "renewer")]
        renewers: Vec<String>,
        /// The token's maximum lifetime (-1: the broker's delegation.token.max.lifetime.ms).
        #[arg(long, default_value_t = -1, allow_hyphen_values = true)]
        max_lifetime_ms: i64,
    },
    /// The tokens the logged-in user may see, of the --owner principals (all without one).
    List {
        /// Repeatable: only tokens these principals own or renew.
        #[arg(long = "owner")]
        owners: Vec<String>,
    },
    /// Moves a token's expiry on (by the broker's delegation.token.expiry.time.ms unless
    /// --period-ms is shorter).
    Renew {
        /// The token's HMAC, base64 as `create` prints it.
        #[arg(long)]
        hmac: String,
        #[arg(long, default_value_t = -1, allow_hyphen_values = true)]
        period_ms: i64,
    },
    /// Expires a token after --period-ms, or at once (-1, the default).
    Expire {
        #[arg(long)]
        hmac: String,
        #[arg(long, default_value_t = -1, allow_hyphen_values = true)]
        period_ms: i64,
    },
}

pub fn run(target: &Target, command: TokenCommand) -> Result<(), AdminError> {
    let (mut admin, format) = (target.connect()?, target.format);
    match command {
        TokenCommand::Create {
            owner,
            renewers,
            max_lifetime_ms,
        } => create(&mut admin, format, owner, &renewers, max_lifetime_ms),
        TokenCommand::List { owners } => list(&mut admin, format, &owners),
        TokenCommand::Renew { hmac, period_ms } => {
            let request = RenewDelegationTokenRequest::default()
                .with_hmac(hmac_bytes(&hmac)?)
                .with_renew_period_ms(period_ms);
            let answer = admin.call(RENEW_VERSION, &request)?;
            check(answer.error_code, None)?;
            print_expiry(format, answer.expiry_timestamp_ms);
            Ok(())
        }
        TokenCommand::Expire { hmac, period_ms } => {
            let request = ExpireDelegationTokenRequest::default()
                .with_hmac(hmac_bytes(&hmac)?)
                .with_expiry_time_period_ms(period_ms);
            let answer = admin.call(EXPIRE_VERSION, &request)?;
            check(answer.error_code, None)?;
            print_expiry(format, answer.expiry_timestamp_ms);
            Ok(())
        }
    }
}

/// "User:alice" as (type, name).
fn principal(text: &str) -> Result<(StrBytes, StrBytes), AdminError> {
    match text.split_once(':') {
        Some((kind, name)) if !kind.is_empty() && !name.is_empty() => Ok((
            StrBytes::from_string(kind.to_string()),
            StrBytes::from_string(name.to_string()),
        )),
        _ => Err(AdminError::Protocol(format!(
            "'{text}' is not a principal: Type:name, e.g. User:alice"
        ))),
    }
}

fn hmac_bytes(text: &str) -> Result<Bytes, AdminError> {
    BASE64
        .decode(text.trim())
        .map(Bytes::from)
        .map_err(|_| AdminError::Protocol("--hmac: the token's HMAC in base64".into()))
}

fn create(
    admin: &mut Admin,
    format: Format,
    owner: Option<String>,
    renewers: &[String],
    max_lifetime_ms: i64,
) -> Result<(), AdminError> {
    let mut request = CreateDelegationTokenRequest::default().with_max_lifetime_ms(max_lifetime_ms);
    if let Some(owner) = owner {
        let (kind, name) = principal(&owner)?;
        request = request
            .with_owner_principal_type(Some(kind))
            .with_owner_principal_name(Some(name));
    }
    for renewer in renewers {
        let (kind, name) = principal(renewer)?;
        request.renewers.push(
            CreatableRenewers::default()
                .with_principal_type(kind)
                .with_principal_name(name),
        );
    }
    let answer = admin.call(CREATE_VERSION, &request)?;
    check(answer.error_code, None)?;
    let token = Token {
        id: answer.token_id.to_string(),
        hmac: BASE64.encode(&answer.hmac),
        owner: format!("{}:{}", answer.principal_type, answer.principal_name),
        renewers: renewers.to_vec(),
        expiry_ms: answer.expiry_timestamp_ms,
        max_ms: answer.max_timestamp_ms,
    };
    print(format, &[token]);
    Ok(())
}

fn list(admin: &mut Admin, format: Format, owners: &[String]) -> Result<(), AdminError> {
    let owners = match owners {
        [] => None,
        owners => Some(
            owners
                .iter()
                .map(|o| {
                    let (kind, name) = principal(o)?;
                    Ok(DescribeDelegationTokenOwner::default()
                        .with_principal_type(kind)
                        .with_principal_name(name))
                })
                .collect::<Result<Vec<_>, AdminError>>()?,
        ),
    };
    let request = DescribeDelegationTokenRequest::default().with_owners(owners);
    let answer = admin.call(DESCRIBE_VERSION, &request)?;
    check(answer.error_code, None)?;
    let tokens: Vec<Token> = answer
        .tokens
        .iter()
        .map(|t| Token {
            id: t.token_id.to_string(),
            hmac: BASE64.encode(&t.hmac),
            owner: format!("{}:{}", t.principal_type, t.principal_name),
            renewers: (t.renewers.iter())
                .map(|r| format!("{}:{}", r.principal_type, r.principal_name))
                .collect(),
            expiry_ms: t.expiry_timestamp,
            max_ms: t.max_timestamp,
        })
        .collect();
    print(format, &tokens);
    Ok(())
}

fn print_expiry(format: Format, expiry_timestamp_ms: i64) {
    match format {
        Format::Json => println!("{}", json!({ "expiry_timestamp_ms": expiry_timestamp_ms })),
        Format::Table => println!("expires at {expiry_timestamp_ms} (ms since the epoch)"),
    }
}

struct Token {
    id: String,
    hmac: String,
    owner: String,
    renewers: Vec<String>,
    expiry_ms: i64,
    max_ms: i64,
}

fn print(format: Format, tokens: &[Token]) {
    match format {
        Format::Json => {
            let list: Vec<_> = tokens
                .iter()
                .map(|t| {
                    json!({"token_id": t.id, "hmac": t.hmac, "owner": t.owner,
                        "renewers": t.renewers, "expiry_timestamp_ms": t.expiry_ms,
                        "max_timestamp_ms": t.max_ms})
                })
                .collect();
            println!("{}", json!(list));
        }
        Format::Table => {
            let rows: Vec<Vec<String>> = tokens
                .iter()
                .map(|t| {
                    vec![
                        t.id.clone(),
                        t.hmac.clone(),
                        t.owner.clone(),
                        t.renewers.join(","),
                        t.expiry_ms.to_string(),
                        t.max_ms.to_string(),
                    ]
                })
                .collect();
            print_table(
                &[
                    "TOKEN ID",
                    "HMAC",
                    "OWNER",
                    "RENEWERS",
                    "EXPIRY MS",
                    "MAX MS",
                ],
                &rows,
            );
        }
    }
}
