//! Delegation tokens through their handlers, as SASL clients use them: made, described with
//! their HMAC, kept across a restart, logged in with by SCRAM as their owner, renewed only by
//! their owner and renewers, refused once expired and then swept.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::protocol::StrBytes;
use shoal_auth::scram::ScramMechanism;
use shoal_auth::scram_client::ScramClient;
use shoal_protocol::messages::create_delegation_token_request::CreatableRenewers;
use shoal_protocol::messages::describe_delegation_token_request::DescribeDelegationTokenOwner;
use shoal_protocol::messages::*;
use shoal_protocol::ResponseError;

use super::harness::*;
use crate::context::{Broker, ClientInfo};
use crate::handlers::delegation_tokens::{change_expiry, create, describe};
use crate::handlers::sasl;
use crate::security::{Principal, Session};
use shoal_config::listeners::{Listener, SecurityProtocol};

const SECRET: &str = "test-token-secret";

fn config(dir: &std::path::Path) -> crate::config::BrokerConfig {
    let mut config = test_config(dir);
    config.delegation_token.secret_key = Some(SECRET.into());
    config.sasl.enabled_mechanisms = vec!["PLAIN".into(), "SCRAM-SHA-512".into()];
    config
}

/// A client on a SASL listener: logged in as `user`, or (None) about to log in.
fn sasl_client(user: Option<&str>) -> ClientInfo {
    let listener = Arc::new(Listener {
        name: "SASL_PLAINTEXT".into(),
        address: ([127, 0, 0, 1], 0).into(),
        protocol: SecurityProtocol::SaslPlaintext,
        advertised_host: "127.0.0.1".into(),
        advertised_port: 0,
    });
    let session = Session::new(listener);
    if let Some(user) = user {
        session.authenticated(Principal::user(user), false);
    }
    ClientInfo {
        session: Rc::new(session),
        ..ClientInfo::default()
    }
}

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

async fn create_token(broker: &Broker, client: &ClientInfo) -> CreateDelegationTokenResponse {
    let request = CreateDelegationTokenRequest::default()
        .with_max_lifetime_ms(-1)
        .with_renewers(vec![CreatableRenewers::default()
            .with_principal_type(text("User"))
            .with_principal_name(text("bob"))]);
    let call = call::<CreateDelegationTokenRequest>(broker, 3, client);
    create::handle(&call, request).await
}

async fn described(broker: &Broker, client: &ClientInfo, owner: &str) -> Vec<(String, Bytes)> {
    let request = DescribeDelegationTokenRequest::default().with_owners(Some(vec![
        DescribeDelegationTokenOwner::default()
            .with_principal_type(text("User"))
            .with_principal_name(text(owner)),
    ]));
    let call = call::<DescribeDelegationTokenRequest>(broker, 3, client);
    let response = describe::handle(&call, request).await;
    assert_eq!(response.error_code, 0);
    let tokens = response.tokens.iter();
    tokens
        .map(|t| (t.token_id.to_string(), t.hmac.clone()))
        .collect()
}

async fn renew(broker: &Broker, client: &ClientInfo, hmac: &Bytes) -> i16 {
    let request = RenewDelegationTokenRequest::default()
        .with_hmac(hmac.clone())
        .with_renew_period_ms(-1);
    let call = call::<RenewDelegationTokenRequest>(broker, 2, client);
    change_expiry::renew(&call, request).await.error_code
}

/// Logs `client` in by SCRAM-SHA-512 with the token; whether the broker accepted the proof
/// and proved itself.
async fn token_login(broker: &Broker, client: &ClientInfo, token_id: &str, hmac: &[u8]) -> bool {
    use base64::Engine;
    let password = base64::engine::general_purpose::STANDARD.encode(hmac);
    let handshake = SaslHandshakeRequest::default().with_mechanism(text("SCRAM-SHA-512"));
    let answer = sasl::handshake(&call::<SaslHandshakeRequest>(broker, 1, client), handshake).await;
    assert_eq!(answer.error_code, 0);
    let (scram, first) = ScramClient::start(ScramMechanism::Sha512, token_id, &password, true);
    let authenticate = |bytes: Vec<u8>| async move {
        let request = SaslAuthenticateRequest::default().with_auth_bytes(bytes.into());
        sasl::authenticate(&call::<SaslAuthenticateRequest>(broker, 2, client), request).await
    };
    let server_first = authenticate(first).await;
    assert_eq!(server_first.error_code, 0);
    let (last, awaiting) = scram
        .respond(&server_first.auth_bytes)
        .expect("a server first message");
    let server_final = authenticate(last).await;
    server_final.error_code == 0 && awaiting.verify(&server_final.auth_bytes).is_ok()
}

#[test]
fn a_token_outlives_a_restart_and_logs_in_as_its_owner() {
    let dir = temp_dir("delegation-tokens");
    let mut config = config(&dir);
    // ACLs on, none set: only a token's owner and renewers see it.
    config.authorizer.enabled = true;
    run_broker(config.clone(), |broker| async move {
        // PLAINTEXT clients may not ask, as on Kafka.
        let plaintext = ClientInfo::default();
        let refused = create_token(&broker, &plaintext).await;
        let not_allowed = ResponseError::DelegationTokenRequestNotAllowed.code();
        assert_eq!(refused.error_code, not_allowed);
        let made = create_token(&broker, &sasl_client(Some("alice"))).await;
        assert_eq!(made.error_code, 0);
        assert_eq!(
            (made.principal_name.as_str(), made.hmac.len()),
            ("alice", 64)
        );
        assert!(made.issue_timestamp_ms < made.expiry_timestamp_ms);
    });
    run_broker(config, |broker| async move {
        let alice = sasl_client(Some("alice"));
        let tokens = described(&broker, &alice, "alice").await;
        assert_eq!(tokens.len(), 1, "the token is kept across the restart");
        let (token_id, hmac) = tokens[0].clone();
        // Kept as a record without its HMAC, derived again from the secret.
        assert_eq!(
            hmac.as_ref(),
            shoal_auth::delegation_token::token_hmac(SECRET, &token_id)
        );

        let with_token = sasl_client(None);
        assert!(token_login(&broker, &with_token, &token_id, &hmac).await);
        assert_eq!(with_token.session.principal(), Principal::user("alice"));
        assert!(with_token.session.is_token_authenticated());
        // A session that logged in with a token may not renew it.
        let not_allowed = ResponseError::DelegationTokenRequestNotAllowed.code();
        assert_eq!(renew(&broker, &with_token, &hmac).await, not_allowed);
        let wrong = sasl_client(None);
        assert!(!token_login(&broker, &wrong, &token_id, &[7; 64]).await);

        assert_eq!(renew(&broker, &sasl_client(Some("bob")), &hmac).await, 0);
        let mismatch = ResponseError::DelegationTokenOwnerMismatch.code();
        assert_eq!(
            renew(&broker, &sasl_client(Some("carol")), &hmac).await,
            mismatch
        );
        let unknown = Bytes::from_static(&[1; 64]);
        let not_found = ResponseError::DelegationTokenNotFound.code();
        assert_eq!(renew(&broker, &alice, &unknown).await, not_found);
        // Others do not see it.
        assert!(described(&broker, &sasl_client(Some("carol")), "alice")
            .await
            .is_empty());
    });
}

#[test]
fn expired_tokens_are_refused_at_login_and_swept() {
    let dir = temp_dir("delegation-token-expiry");
    let mut config = config(&dir);
    config.delegation_token.expiry_time_ms = 300;
    config.delegation_token.expiry_check_interval_ms = 200;
    run_broker(config, |broker| async move {
        let alice = sasl_client(Some("alice"));
        let made = create_token(&broker, &alice).await;
        assert_eq!(made.error_code, 0);
        assert_eq!(made.expiry_timestamp_ms - made.issue_timestamp_ms, 300);
        glommio::timer::sleep(Duration::from_millis(400)).await;
        let token_id = made.token_id.to_string();
        assert!(!token_login(&broker, &sasl_client(None), &token_id, &made.hmac).await);
        for _ in 0..50 {
            if described(&broker, &alice, "alice").await.is_empty() {
                return;
            }
            glommio::timer::sleep(Duration::from_millis(100)).await;
        }
        panic!("the expired token was not swept");
    });
}
