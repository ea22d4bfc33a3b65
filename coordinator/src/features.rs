//! Kafka's feature levels (KIP-584) that Shoal serves, each at any level from 0 to its
//! highest, and the levels finalized for the cluster: ApiVersions advertises them, and
//! UpdateFeatures (`kafka-features upgrade/downgrade`) sets them in the log. A feature never
//! set is at its default, the level Kafka 4.4 finalizes for a new cluster.

use std::collections::BTreeMap;

use shoal_protocol::records::{ShoalFeatureLevel, ShoalFeatureLevelsRecord};

/// The consumer group protocol (KIP-848): level 1 serves ConsumerGroupHeartbeat.
pub const GROUP_VERSION: &str = "group.version";
/// The `group.version` level of the consumer protocol.
pub const CONSUMER_PROTOCOL_LEVEL: i16 = 1;
/// Transactions V2 (KIP-890) from level 2: transactional writes of Produce v12+ join their
/// transaction, and the Java producer runs V2 only when it sees this finalized.
pub const TRANSACTION_VERSION: &str = "transaction.version";
/// The `transaction.version` level of transactions V2.
pub const TRANSACTIONS_V2_LEVEL: i16 = 2;

/// A feature Shoal serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feature {
    pub name: &'static str,
    pub max_level: i16,
    pub default_level: i16,
}

/// Share groups (KIP-932): level 1 serves ShareGroupHeartbeat; level 2 (Kafka 4.4) adds
/// RENEW acknowledgements (KIP-1222).
pub const SHARE_VERSION: &str = "share.version";
/// The `share.version` level of share groups.
pub const SHARE_GROUPS_LEVEL: i16 = 1;
/// The `share.version` level that renews record locks.
pub const SHARE_RENEW_LEVEL: i16 = 2;

/// Streams groups (KIP-1071): level 1 serves StreamsGroupHeartbeat and StreamsGroupDescribe.
pub const STREAMS_VERSION: &str = "streams.version";
/// The `streams.version` level of streams groups.
pub const STREAMS_PROTOCOL_LEVEL: i16 = 1;

/// Every feature Shoal serves; each from level 0.
pub const FEATURES: [Feature; 4] = [
    Feature {
        name: GROUP_VERSION,
        max_level: 1,
        default_level: 1,
    },
    Feature {
        name: SHARE_VERSION,
        max_level: 2,
        default_level: 2,
    },
    Feature {
        name: STREAMS_VERSION,
        max_level: 1,
        default_level: 1,
    },
    Feature {
        name: TRANSACTION_VERSION,
        max_level: 2,
        default_level: 2,
    },
];

pub fn feature(name: &str) -> Option<Feature> {
    FEATURES.into_iter().find(|f| f.name == name)
}

/// The finalized levels: those set by UpdateFeatures, the others at their defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FinalizedFeatures {
    /// Counts the changes (0: none yet); ApiVersions' finalized features epoch.
    pub epoch: i64,
    set: BTreeMap<String, i16>,
}

impl FinalizedFeatures {
    /// The level of a feature Shoal serves (0 for any other).
    pub fn level(&self, name: &str) -> i16 {
        match (self.set.get(name), feature(name)) {
            (Some(level), _) => *level,
            (None, Some(f)) => f.default_level,
            (None, None) => 0,
        }
    }

    /// Every feature Shoal serves at its finalized level.
    pub fn levels(&self) -> impl Iterator<Item = (&'static str, i16)> + '_ {
        FEATURES.into_iter().map(|f| (f.name, self.level(f.name)))
    }

    /// These levels with `changes` made, at the next epoch.
    pub fn with(&self, changes: &[(String, i16)]) -> FinalizedFeatures {
        let mut next = self.clone();
        next.epoch += 1;
        for (name, level) in changes {
            next.set.insert(name.clone(), *level);
        }
        next
    }

    pub(crate) fn record(&self) -> ShoalFeatureLevelsRecord {
        ShoalFeatureLevelsRecord {
            epoch: self.epoch,
            features: self
                .set
                .iter()
                .map(|(name, level)| ShoalFeatureLevel {
                    name: name.clone(),
                    level: *level,
                })
                .collect(),
        }
    }

    pub(crate) fn of_record(record: &ShoalFeatureLevelsRecord) -> FinalizedFeatures {
        FinalizedFeatures {
            epoch: record.epoch,
            set: record
                .features
                .iter()
                .map(|f| (f.name.clone(), f.level))
                .collect(),
        }
    }
}

/// A record read from the log or a snapshot: features this build serves, each once, at a
/// level it serves. A feature it does not know is a newer Shoal's, never applied on a guess.
pub(crate) fn check_feature_levels(record: &ShoalFeatureLevelsRecord) -> Result<(), String> {
    if record.epoch <= 0 {
        return Err(format!("feature levels at epoch {}", record.epoch));
    }
    let mut names: Vec<&str> = Vec::with_capacity(record.features.len());
    for f in &record.features {
        let known = feature(&f.name).ok_or_else(|| format!("an unknown feature {}", f.name))?;
        if !(0..=known.max_level).contains(&f.level) {
            return Err(format!("feature {} at level {}", f.name, f.level));
        }
        names.push(&f.name);
    }
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) {
        return Err("a feature named twice".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_features_are_at_their_defaults_and_changes_move_the_epoch_on() {
        let none = FinalizedFeatures::default();
        assert_eq!(none.level(TRANSACTION_VERSION), 2);
        assert_eq!(none.level("metadata.version"), 0);
        let down = none.with(&[(TRANSACTION_VERSION.to_string(), 0)]);
        assert_eq!((down.epoch, down.level(TRANSACTION_VERSION)), (1, 0));
        assert_eq!(down.level(GROUP_VERSION), 1);
        let record = down.record();
        assert_eq!(check_feature_levels(&record), Ok(()));
        assert_eq!(FinalizedFeatures::of_record(&record), down);
        let mut bad = record.clone();
        bad.features[0].level = 3;
        assert!(check_feature_levels(&bad).is_err());
        bad.features[0].name = "nope.version".into();
        assert!(check_feature_levels(&bad).is_err());
    }
}
