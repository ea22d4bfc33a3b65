//! Client quotas: AlterClientQuotas and DescribeClientQuotas. The shards see the quotas with
//! the next topic catalogue.

use crate::client_quotas::{
    check_quota, check_quota_key, checked_entity, quota_record, QuotaEntity, QuotaMatch,
};
use crate::command::{Command, Round};
use crate::entry::Entry;
use crate::ErrorKind;

/// One entity's alterations: each key set to a value, or removed (None).
#[derive(Debug, Clone)]
pub struct QuotaAlteration {
    pub entity: QuotaEntity,
    pub quotas: Vec<(String, Option<f64>)>,
}

/// Each entity's alterations, checked all or none per entity (INVALID_REQUEST with Kafka's
/// kind of message); written unless `validate_only`. One result per entity, in order.
#[derive(Debug, Clone)]
pub struct AlterClientQuotas {
    pub entries: Vec<QuotaAlteration>,
    pub validate_only: bool,
}

impl Command for AlterClientQuotas {
    type Reply = Vec<Result<(), (ErrorKind, String)>>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let mut changed = false;
        let results = self
            .entries
            .into_iter()
            .map(|alteration| {
                let invalid = |message: String| (ErrorKind::InvalidRequest, message);
                let entity = checked_entity(alteration.entity).map_err(invalid)?;
                let mut keys: Vec<&str> =
                    alteration.quotas.iter().map(|(k, _)| k.as_str()).collect();
                keys.sort_unstable();
                if keys.windows(2).any(|w| w[0] == w[1]) {
                    return Err(invalid("a quota is altered twice for one entity".into()));
                }
                for (key, value) in &alteration.quotas {
                    match value {
                        Some(value) => check_quota(key, *value).map_err(invalid)?,
                        // Removing needs a known key only.
                        None => check_quota_key(key).map_err(invalid)?,
                    }
                }
                if self.validate_only || alteration.quotas.is_empty() {
                    return Ok(());
                }
                let records = alteration
                    .quotas
                    .iter()
                    .map(|(key, value)| quota_record(&entity, key, *value).into())
                    .collect();
                round.append(&Entry::new(round.now_ms(), records));
                changed = true;
                Ok(())
            })
            .collect();
        if changed {
            round.topics_changed();
        }
        results
    }
}

/// DescribeClientQuotas: the entities matching every part of the filter, with their quotas.
#[derive(Debug, Clone)]
pub struct DescribeClientQuotas {
    pub filter: Vec<(String, QuotaMatch)>,
    pub strict: bool,
}

impl Command for DescribeClientQuotas {
    type Reply = Vec<(QuotaEntity, Vec<(String, f64)>)>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round
            .state()
            .describe_client_quotas(&self.filter, self.strict)
    }
}
