//! DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), as Kafka's admin
//! clients use them. A client sends the salted password, never the password; the broker
//! keeps StoredKey and ServerKey derived from it. Each user's alterations apply all or none.

use std::collections::{BTreeMap, HashSet};

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::acl::Operation;
use shoal_coordinator::commands::{AlterScramCredentials, DescribeScramCredentials};
use shoal_coordinator::state::ScramAlteration;
use shoal_coordinator::ErrorKind;
use shoal_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use shoal_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use shoal_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use shoal_protocol::ResponseError;

use crate::context::Call;
use crate::kafka::error_codes::code_of;
use crate::security::scram::{ScramMechanism, MAX_ITERATIONS, MIN_ITERATIONS};

pub async fn describe(
    call: &Call<'_>,
    request: DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    if !call.authorized_on_cluster(Operation::Describe) {
        return DescribeUserScramCredentialsResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code());
    }
    let names: Option<Vec<String>> = request
        .users
        .map(|users| users.iter().map(|u| u.name.to_string()).collect());
    let mut seen = HashSet::new();
    let duplicates: HashSet<String> = names
        .iter()
        .flatten()
        .filter(|name| !seen.insert(name.as_str()))
        .cloned()
        .collect();
    let wanted = names.map(|names| {
        names
            .into_iter()
            .filter(|n| !duplicates.contains(n))
            .collect()
    });
    let found = call
        .broker
        .shard
        .coordinator
        .run(DescribeScramCredentials { users: wanted })
        .await
        .unwrap_or_default();
    let mut results: Vec<DescribeUserScramCredentialsResult> = found
        .into_iter()
        .map(|(user, outcome)| {
            let result = DescribeUserScramCredentialsResult::default()
                .with_user(StrBytes::from_string(user));
            match outcome {
                Ok(credentials) => result.with_credential_infos(
                    credentials
                        .into_iter()
                        .map(|(mechanism, iterations)| {
                            CredentialInfo::default()
                                .with_mechanism(mechanism)
                                .with_iterations(iterations)
                        })
                        .collect(),
                ),
                Err(error) => result
                    .with_error_code(code_of(Some(error)))
                    .with_error_message(Some(StrBytes::from_static_str(
                        "No SCRAM credential for this user.",
                    ))),
            }
        })
        .collect();
    results.extend(duplicates.into_iter().map(|user| {
        DescribeUserScramCredentialsResult::default()
            .with_user(StrBytes::from_string(user))
            .with_error_code(ResponseError::DuplicateResource.code())
            .with_error_message(Some(StrBytes::from_static_str(
                "The user is named more than once.",
            )))
    }));
    DescribeUserScramCredentialsResponse::default().with_results(results)
}

pub async fn alter(
    call: &Call<'_>,
    request: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    if !call.authorized_on_cluster(Operation::Alter) {
        let users: std::collections::BTreeSet<String> = request
            .deletions
            .iter()
            .map(|d| d.name.to_string())
            .chain(request.upsertions.iter().map(|u| u.name.to_string()))
            .collect();
        let code = ResponseError::ClusterAuthorizationFailed.code();
        let why = "Cluster authorization failed.";
        let denied = users.iter().map(|u| result(u, code, why)).collect();
        return AlterUserScramCredentialsResponse::default().with_results(denied);
    }
    let mut by_user: BTreeMap<String, Result<Vec<ScramAlteration>, (ResponseError, &str)>> =
        BTreeMap::new();
    let mut seen: HashSet<(String, i8)> = HashSet::new();
    let deletions = request
        .deletions
        .iter()
        .map(|d| (d.name.to_string(), d.mechanism, None));
    let upsertions = request
        .upsertions
        .iter()
        .map(|u| (u.name.to_string(), u.mechanism, Some(u)));
    for (user, code, upsertion) in deletions.chain(upsertions) {
        let checked = check_alteration(&user, code, upsertion, &mut seen);
        let entry = by_user.entry(user).or_insert_with(|| Ok(Vec::new()));
        match (entry.as_mut(), checked) {
            (Ok(list), Ok(alteration)) => list.push(alteration),
            (Ok(_), Err(error)) => *entry = Err(error),
            (Err(_), _) => {}
        }
    }
    let mut results = Vec::new();
    let mut valid = Vec::new();
    for (user, checked) in by_user {
        match checked {
            Ok(alterations) => valid.push((user, alterations)),
            Err((error, message)) => results.push(result(&user, error.code(), message)),
        }
    }
    let applied = call
        .broker
        .shard
        .coordinator
        .run(AlterScramCredentials { users: valid })
        .await;
    match applied {
        Ok(outcomes) => results.extend(outcomes.into_iter().map(|(user, outcome)| {
            let message = match outcome {
                Err(ErrorKind::ResourceNotFound) => "No such credential to delete.",
                _ => "",
            };
            result(&user, code_of(outcome.err()), message)
        })),
        Err(_) => {
            let code = ResponseError::CoordinatorNotAvailable.code();
            results.push(result("", code, "The coordinator did not answer."));
        }
    }
    AlterUserScramCredentialsResponse::default().with_results(results)
}

/// One deletion or upsertion, checked as Kafka does before anything is stored.
fn check_alteration(
    user: &str,
    code: i8,
    upsertion: Option<
        &shoal_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion,
    >,
    seen: &mut HashSet<(String, i8)>,
) -> Result<ScramAlteration, (ResponseError, &'static str)> {
    let mechanism = ScramMechanism::from_code(code).ok_or((
        ResponseError::UnsupportedSaslMechanism,
        "Unknown SCRAM mechanism.",
    ))?;
    if user.is_empty() {
        return Err((ResponseError::UnacceptableCredential, "Empty user name."));
    }
    if !seen.insert((user.to_string(), code)) {
        return Err((
            ResponseError::DuplicateResource,
            "A credential is altered more than once.",
        ));
    }
    let Some(upsertion) = upsertion else {
        return Ok(ScramAlteration::Delete { mechanism: code });
    };
    if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&upsertion.iterations) {
        return Err((
            ResponseError::UnacceptableCredential,
            "Iterations must be between 4096 and 16384.",
        ));
    }
    if upsertion.salt.is_empty() || upsertion.salted_password.is_empty() {
        return Err((
            ResponseError::UnacceptableCredential,
            "Salt and salted password are required.",
        ));
    }
    Ok(ScramAlteration::Upsert {
        mechanism: code,
        credential: mechanism.credential(
            &upsertion.salt,
            &upsertion.salted_password,
            upsertion.iterations,
        ),
    })
}

fn result(user: &str, code: i16, message: &'static str) -> AlterUserScramCredentialsResult {
    AlterUserScramCredentialsResult::default()
        .with_user(StrBytes::from_string(user.to_string()))
        .with_error_code(code)
        .with_error_message((code != 0).then(|| StrBytes::from_static_str(message)))
}
