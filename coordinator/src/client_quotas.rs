//! Client quotas (KIP-13, KIP-124, KIP-257, KIP-546) as AlterClientQuotas sets them and
//! DescribeClientQuotas reports them: byte rates and request shares per user, per client id,
//! or per (user, client id), each part named or the type's default. Kept in the log so they
//! survive restarts and hold for every broker of a cluster.

use std::collections::BTreeMap;

use shoal_protocol::records::{ShoalClientQuotaRecord, ShoalQuotaEntityData};

pub const USER: &str = "user";
pub const CLIENT_ID: &str = "client-id";

/// The parts of the entity a quota applies to, by type (`user` before `client-id`); a part
/// without a name is its type's default entity (`<default>` in kafka-configs).
pub type QuotaEntity = Vec<(String, Option<String>)>;

/// The quotas Kafka defines for users and client ids, and whether each is a whole number.
pub const QUOTA_KEYS: [(&str, bool); 4] = [
    ("producer_byte_rate", true),
    ("consumer_byte_rate", true),
    ("request_percentage", false),
    ("controller_mutation_rate", false),
];

/// A quota's value: finite (checked before it is written and when the log is read), so
/// equality is an equivalence and the state can compare whole.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuotaValue(pub f64);

impl Eq for QuotaValue {}

/// An entity part a DescribeClientQuotas filter asks for: one name, the default, or any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuotaMatch {
    Exact(String),
    Default,
    Any,
}

/// A valid entity, ordered as the log keeps it: user and client-id only, each at most once.
pub fn checked_entity(mut entity: QuotaEntity) -> Result<QuotaEntity, String> {
    if entity.is_empty() {
        return Err("a quota entity needs a user or a client-id".into());
    }
    if let Some((unknown, _)) = entity.iter().find(|(t, _)| t != USER && t != CLIENT_ID) {
        return Err(format!("entity type {unknown:?} is not user or client-id"));
    }
    entity.sort_by_key(|(t, _)| t != USER);
    if entity.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err("an entity type is named twice".into());
    }
    Ok(entity)
}

/// A key Kafka defines as a client quota.
pub fn check_quota_key(key: &str) -> Result<(), String> {
    match QUOTA_KEYS.iter().any(|(k, _)| *k == key) {
        true => Ok(()),
        false => Err(format!("{key:?} is not a client quota")),
    }
}

/// A quota's key and value as Kafka accepts them: a known key, a positive value, a whole
/// number for byte rates.
pub fn check_quota(key: &str, value: f64) -> Result<(), String> {
    check_quota_key(key)?;
    let whole = QUOTA_KEYS.iter().any(|(k, whole)| *k == key && *whole);
    if !value.is_finite() || value <= 0.0 {
        return Err(format!("{key} must be positive, not {value}"));
    }
    if whole && value.fract() != 0.0 {
        return Err(format!(
            "{key} must be a whole number of bytes, not {value}"
        ));
    }
    Ok(())
}

/// The record setting (`Some`) or removing (`None`) one quota of an entity.
pub fn quota_record(entity: &QuotaEntity, key: &str, value: Option<f64>) -> ShoalClientQuotaRecord {
    ShoalClientQuotaRecord {
        entity: entity
            .iter()
            .map(|(t, name)| ShoalQuotaEntityData {
                entity_type: t.clone(),
                entity_name: name.clone(),
            })
            .collect(),
        key: key.to_string(),
        value: value.unwrap_or(0.0),
        remove: value.is_none(),
    }
}

/// The entity a record names.
pub fn entity_of(record: &ShoalClientQuotaRecord) -> QuotaEntity {
    record
        .entity
        .iter()
        .map(|e| (e.entity_type.clone(), e.entity_name.clone()))
        .collect()
}

/// Whose usage a quota is measured over: the parts of the client's identity its entity names
/// (a default part counts each user or client id apart; a named one, only that one).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QuotaKey {
    pub user: Option<String>,
    pub client_id: Option<String>,
}

/// Every entity's quotas.
pub type ClientQuotas = BTreeMap<QuotaEntity, BTreeMap<String, QuotaValue>>;

/// The quota `key` that applies to a client of `user` (its principal's name) and
/// `client_id`, and whose usage it bounds: Kafka's precedence (KIP-55), the first entity
/// that sets `key` among (user, client-id), (user, default client-id), (user),
/// (default user, client-id), (default user, default client-id), (default user),
/// (client-id), (default client-id).
pub fn quota_for(
    quotas: &ClientQuotas,
    user: &str,
    client_id: &str,
    key: &str,
) -> Option<(QuotaKey, f64)> {
    if quotas.is_empty() {
        return None;
    }
    // Each level's user part and client-id part: absent, the default (None), or named.
    type Part = Option<Option<String>>;
    let named = |v: &str| Some(v.to_string());
    let levels: [(Part, Part); 8] = [
        (Some(named(user)), Some(named(client_id))),
        (Some(named(user)), Some(None)),
        (Some(named(user)), None),
        (Some(None), Some(named(client_id))),
        (Some(None), Some(None)),
        (Some(None), None),
        (None, Some(named(client_id))),
        (None, Some(None)),
    ];
    levels.into_iter().find_map(|(user_part, client_part)| {
        let mut entity = QuotaEntity::new();
        if let Some(name) = &user_part {
            entity.push((USER.to_string(), name.clone()));
        }
        if let Some(name) = &client_part {
            entity.push((CLIENT_ID.to_string(), name.clone()));
        }
        let value = quotas.get(&entity)?.get(key)?;
        let measured = QuotaKey {
            user: user_part.map(|_| user.to_string()),
            client_id: client_part.map(|_| client_id.to_string()),
        };
        Some((measured, value.0))
    })
}

/// An entity from (type, name) pairs, as the tests write them.
#[cfg(test)]
pub(crate) fn entity(parts: &[(&str, Option<&str>)]) -> QuotaEntity {
    parts
        .iter()
        .map(|(t, n)| (t.to_string(), n.map(String::from)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_and_values_are_checked_as_kafka_checks_them() {
        let both = entity(&[(CLIENT_ID, Some("app")), (USER, None)]);
        assert_eq!(
            checked_entity(both).unwrap(),
            entity(&[(USER, None), (CLIENT_ID, Some("app"))]),
            "user first"
        );
        assert!(checked_entity(vec![]).is_err());
        assert!(checked_entity(entity(&[("ip", Some("10.0.0.1"))])).is_err());
        assert!(checked_entity(entity(&[(USER, Some("a")), (USER, Some("b"))])).is_err());
        assert!(check_quota("producer_byte_rate", 1_048_576.0).is_ok());
        assert!(check_quota("producer_byte_rate", 1.5).is_err());
        assert!(check_quota("request_percentage", 12.5).is_ok());
        assert!(check_quota("consumer_byte_rate", -1.0).is_err());
        assert!(check_quota("consumer_byte_rate", f64::NAN).is_err());
        assert!(check_quota("bytes_per_fortnight", 1.0).is_err());
    }

    #[test]
    fn the_most_specific_entity_setting_a_quota_applies_as_kafka_resolves_it() {
        let mut quotas = ClientQuotas::new();
        let mut set = |parts: &[(&str, Option<&str>)], key: &str, value: f64| {
            quotas
                .entry(entity(parts))
                .or_default()
                .insert(key.to_string(), QuotaValue(value));
        };
        set(&[(CLIENT_ID, None)], "producer_byte_rate", 1.0);
        set(&[(USER, None)], "producer_byte_rate", 2.0);
        set(&[(USER, Some("alice"))], "producer_byte_rate", 3.0);
        set(
            &[(USER, Some("alice")), (CLIENT_ID, Some("etl"))],
            "producer_byte_rate",
            4.0,
        );
        set(
            &[(USER, Some("alice")), (CLIENT_ID, Some("etl"))],
            "request_percentage",
            9.0,
        );
        let key = |user: Option<&str>, client: Option<&str>| QuotaKey {
            user: user.map(String::from),
            client_id: client.map(String::from),
        };
        let rate = |user, client| quota_for(&quotas, user, client, "producer_byte_rate");
        assert_eq!(
            rate("alice", "etl"),
            Some((key(Some("alice"), Some("etl")), 4.0))
        );
        // Alice's other clients share her user quota.
        assert_eq!(rate("alice", "web"), Some((key(Some("alice"), None), 3.0)));
        // Any other user: the default user quota, measured per user.
        assert_eq!(rate("bob", "web"), Some((key(Some("bob"), None), 2.0)));
        let consumer = quota_for(&quotas, "alice", "etl", "consumer_byte_rate");
        assert_eq!(consumer, None);
        let mut clients_only = ClientQuotas::new();
        clients_only
            .entry(entity(&[(CLIENT_ID, None)]))
            .or_default()
            .insert("producer_byte_rate".into(), QuotaValue(1.0));
        assert_eq!(
            quota_for(&clients_only, "bob", "web", "producer_byte_rate"),
            Some((key(None, Some("web")), 1.0)),
            "the default client-id quota, per client id"
        );
    }
}
