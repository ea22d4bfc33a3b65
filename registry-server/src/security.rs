//! Who asks the registry, and whether they may: HTTP Basic authentication against the
//! broker's SASL users (`[sasl] plain_users`, and SCRAM users' credentials in the
//! coordinator), and the broker's ACLs mapped onto the registry's resources: a subject is its
//! topic (`<topic>-key`/`<topic>-value`, any other subject a topic of its own name), global
//! settings are the cluster. See docs/schema-registry.md for the table.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use base64::Engine;
use serde::{Deserialize, Serialize};
use shoal_auth::plain::constant_time_eq;
use shoal_auth::scram::ScramMechanism;
use shoal_coordinator::acl::{self, Operation, ResourceType};
use shoal_coordinator::commands::LookupScramCredential;
use shoal_registry::RegistryError;

use super::http::Request;
use super::Registry;

/// `[schema_registry] authentication`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Authentication {
    /// Anyone who reaches the listener, as Kafka's `User:ANONYMOUS`.
    #[default]
    None,
    /// HTTP Basic with a SASL user's name and password.
    Basic,
}

/// A request's principal (`User:name`) and address, as the ACLs name them.
#[derive(Debug, Clone)]
pub struct Caller {
    pub principal: String,
    pub host: String,
}

/// How long a password checked against a SCRAM credential counts as checked: PBKDF2 is slow
/// on purpose, and a client sends its password with every request.
const VERIFIED_FOR: Duration = Duration::from_secs(60);
const VERIFIED_MAX: usize = 1024;

/// The broker's users and ACL settings the gate follows (its `[sasl]` and `[authorizer]`).
#[derive(Debug, Clone, Default)]
pub struct GateSettings {
    /// PLAIN users and their passwords.
    pub plain_users: BTreeMap<String, String>,
    /// A failed login is answered after this long.
    pub failed_authentication_delay_ms: u64,
    /// Check requests against the ACLs.
    pub authorizer_enabled: bool,
    /// Principals allowed everything.
    pub super_users: Vec<String>,
    /// A resource no ACL names is open to all.
    pub allow_everyone_if_no_acl_found: bool,
}

pub struct Gate {
    authentication: Authentication,
    settings: GateSettings,
    /// (user, digest of the password) → until when it counts as checked.
    verified: RefCell<HashMap<(String, Vec<u8>), Instant>>,
}

impl Gate {
    pub fn new(authentication: Authentication, settings: GateSettings) -> Gate {
        Gate {
            authentication,
            settings,
            verified: RefCell::new(HashMap::new()),
        }
    }

    /// The caller of `request` from `host`; 401 without valid credentials when Basic
    /// authentication is on (after the broker's failed-login delay).
    pub async fn authenticate(
        &self,
        request: &Request,
        host: &str,
        registry: &Registry,
    ) -> Result<Caller, RegistryError> {
        let name = match self.authentication {
            Authentication::None => "ANONYMOUS".to_string(),
            Authentication::Basic => match self.basic_user(request, registry).await {
                Some(name) => name,
                None => {
                    let delay = self.settings.failed_authentication_delay_ms;
                    glommio::timer::sleep(Duration::from_millis(delay)).await;
                    tracing::info!(host, "schema registry request with bad or no credentials");
                    return Err(RegistryError::Unauthorized);
                }
            },
        };
        Ok(Caller {
            principal: format!("User:{name}"),
            host: host.to_string(),
        })
    }

    /// The user whose name and password the `Authorization: Basic` header carries, if they
    /// are right.
    async fn basic_user(&self, request: &Request, registry: &Registry) -> Option<String> {
        let header = request.headers.get("authorization")?;
        let (scheme, encoded) = header.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("basic") {
            return None;
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .ok()?;
        let decoded = String::from_utf8(decoded).ok()?;
        let (user, password) = decoded.split_once(':')?;
        if let Some(expected) = self.settings.plain_users.get(user) {
            return constant_time_eq(expected.as_bytes(), password.as_bytes())
                .then(|| user.to_string());
        }
        let key = (
            user.to_string(),
            ScramMechanism::Sha256.hash(password.as_bytes()),
        );
        let now = Instant::now();
        if self
            .verified
            .borrow()
            .get(&key)
            .is_some_and(|until| *until > now)
        {
            return Some(user.to_string());
        }
        for mechanism in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
            let lookup = LookupScramCredential {
                user: user.to_string(),
                mechanism: mechanism.code(),
            };
            let Ok(Some(credential)) = registry.run(lookup).await else {
                continue;
            };
            let salted = mechanism.salted_password(
                password.as_bytes(),
                &credential.salt,
                credential.iterations,
            );
            let derived = mechanism.credential(&credential.salt, &salted, credential.iterations);
            if constant_time_eq(&derived.stored_key, &credential.stored_key) {
                let mut verified = self.verified.borrow_mut();
                verified.retain(|_, until| *until > now);
                if verified.len() >= VERIFIED_MAX {
                    verified.clear();
                }
                verified.insert(key, now + VERIFIED_FOR);
                return Some(user.to_string());
            }
            return None;
        }
        None
    }

    /// Whether the ACLs decide what `caller` may do (the authorizer is on and the caller is
    /// no super user).
    pub fn restricts(&self, caller: &Caller) -> bool {
        self.settings.authorizer_enabled && !self.settings.super_users.contains(&caller.principal)
    }

    /// Whether `caller` may do `operation` on the resource: always with the authorizer off
    /// and for super users; by the ACLs otherwise.
    pub fn may(
        &self,
        caller: &Caller,
        operation: Operation,
        resource_type: ResourceType,
        name: &str,
        registry: &Registry,
    ) -> bool {
        if !self.restricts(caller) {
            return true;
        }
        let view = registry.shard.topics.load();
        let allowed = acl::decide(
            view.acls(),
            &caller.principal,
            &caller.host,
            operation,
            resource_type,
            name,
        )
        .allows(self.settings.allow_everyone_if_no_acl_found);
        if !allowed {
            tracing::debug!(principal = %caller.principal, host = %caller.host, ?operation, ?resource_type, name, "schema registry request denied by the ACLs");
        }
        allowed
    }
}

/// The topic whose ACLs govern `subject`: TopicNameStrategy's `<topic>-key` and
/// `<topic>-value` are their topic's; any other subject is a topic of its own name.
pub fn subject_topic(subject: &str) -> &str {
    subject
        .strip_suffix("-value")
        .or_else(|| subject.strip_suffix("-key"))
        .filter(|topic| !topic.is_empty())
        .unwrap_or(subject)
}

impl Registry {
    /// `operation` on the subject's topic, or 403.
    pub fn check_subject(
        &self,
        request: &Request,
        operation: Operation,
        subject: &str,
    ) -> Result<(), RegistryError> {
        if self.may_subject(request, operation, subject) {
            Ok(())
        } else {
            Err(RegistryError::Forbidden {
                operation: format!("{operation:?}"),
                resource: format!("subject {subject}"),
            })
        }
    }

    /// Whether the request's caller may do `operation` on the subject's topic.
    pub fn may_subject(&self, request: &Request, operation: Operation, subject: &str) -> bool {
        let Some(caller) = &request.caller else {
            return true;
        };
        self.gate.may(
            caller,
            operation,
            ResourceType::Topic,
            subject_topic(subject),
            self,
        )
    }

    /// Whether the ACLs decide what the request's caller may do.
    pub fn restricted(&self, request: &Request) -> bool {
        request
            .caller
            .as_ref()
            .is_some_and(|caller| self.gate.restricts(caller))
    }

    /// `operation` on the cluster, or 403.
    pub fn check_cluster(
        &self,
        request: &Request,
        operation: Operation,
    ) -> Result<(), RegistryError> {
        let allowed = request.caller.as_ref().is_none_or(|caller| {
            self.gate.may(
                caller,
                operation,
                ResourceType::Cluster,
                acl::CLUSTER_NAME,
                self,
            )
        });
        if allowed {
            Ok(())
        } else {
            Err(RegistryError::Forbidden {
                operation: format!("{operation:?}"),
                resource: "the registry's global settings".to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_map_to_their_topics() {
        assert_eq!(subject_topic("orders-value"), "orders");
        assert_eq!(subject_topic("orders-key"), "orders");
        assert_eq!(subject_topic("shop.Order"), "shop.Order");
        assert_eq!(subject_topic("-value"), "-value");
    }
}
