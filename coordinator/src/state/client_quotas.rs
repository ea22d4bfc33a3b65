//! The coordinator's client quotas: applied from the log, listed and described (the values
//! and their checks are `crate::client_quotas`).

use shoal_protocol::records::ShoalClientQuotaRecord;

use super::CoordinatorState;
use crate::client_quotas::{entity_of, ClientQuotas, QuotaEntity, QuotaMatch, QuotaValue};

impl CoordinatorState {
    pub(crate) fn apply_client_quota(&mut self, record: &ShoalClientQuotaRecord) {
        let entity = entity_of(record);
        let quotas = self.client_quotas.entry(entity.clone()).or_default();
        match record.remove {
            true => quotas.remove(&record.key),
            false => quotas.insert(record.key.clone(), QuotaValue(record.value)),
        };
        if quotas.is_empty() {
            self.client_quotas.remove(&entity);
        }
    }

    /// Every entity with quotas, and them.
    pub fn client_quotas(&self) -> &ClientQuotas {
        &self.client_quotas
    }

    /// DescribeClientQuotas: the entities every part of `filter` matches (a strict filter:
    /// that have no other part), with their quotas.
    pub fn describe_client_quotas(
        &self,
        filter: &[(String, QuotaMatch)],
        strict: bool,
    ) -> Vec<(QuotaEntity, Vec<(String, f64)>)> {
        let matches = |entity: &QuotaEntity| {
            let each = filter.iter().all(|(entity_type, wanted)| {
                entity.iter().find(|(t, _)| t == entity_type).is_some_and(
                    |(_, name)| match wanted {
                        QuotaMatch::Exact(n) => name.as_ref() == Some(n),
                        QuotaMatch::Default => name.is_none(),
                        QuotaMatch::Any => true,
                    },
                )
            });
            each && (!strict || entity.len() == filter.len())
        };
        self.client_quotas
            .iter()
            .filter(|(entity, _)| matches(entity))
            .map(|(entity, quotas)| {
                let quotas = quotas.iter().map(|(k, v)| (k.clone(), v.0)).collect();
                (entity.clone(), quotas)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client_quotas::{entity, quota_record, CLIENT_ID, USER};
    use crate::entry::Entry;

    #[test]
    fn quotas_are_set_removed_and_described_by_filter() {
        let mut state = CoordinatorState::default();
        let alice = entity(&[(USER, Some("alice"))]);
        let alice_app = entity(&[(USER, Some("alice")), (CLIENT_ID, Some("app"))]);
        let default_user = entity(&[(USER, None)]);
        for (e, key, value) in [
            (&alice, "producer_byte_rate", Some(1000.0)),
            (&alice, "consumer_byte_rate", Some(2000.0)),
            (&alice_app, "producer_byte_rate", Some(500.0)),
            (&default_user, "request_percentage", Some(50.0)),
        ] {
            let record = quota_record(e, key, value);
            state.apply(&Entry::of(1, record));
        }
        let users = |state: &CoordinatorState, m: QuotaMatch, strict| {
            state
                .describe_client_quotas(&[(USER.to_string(), m)], strict)
                .into_iter()
                .map(|(e, _)| e)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            users(&state, QuotaMatch::Exact("alice".into()), false),
            vec![alice.clone(), alice_app.clone()]
        );
        assert_eq!(
            users(&state, QuotaMatch::Exact("alice".into()), true),
            vec![alice.clone()]
        );
        assert_eq!(
            users(&state, QuotaMatch::Default, true),
            vec![default_user.clone()]
        );
        assert_eq!(users(&state, QuotaMatch::Any, false).len(), 3);
        // Removing an entity's last quota forgets the entity.
        let record = quota_record(&alice_app, "producer_byte_rate", None);
        state.apply(&Entry::of(2, record));
        assert_eq!(users(&state, QuotaMatch::Any, false).len(), 2);
        let described = state.describe_client_quotas(&[], false);
        let alices = described.iter().find(|(e, _)| *e == alice).expect("alice");
        assert_eq!(alices.1.len(), 2, "alice's two quotas");
    }
}
