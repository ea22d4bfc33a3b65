//! Which images of the shards' view (`TopicsView`) the records applied since it was last
//! published changed, so that publishing rebuilds only those, as KRaft's `MetadataDelta`
//! rebuilds only the images its records touch. A commit, an offset or a group's records
//! change none: on a cluster's shared log, catching up on other brokers' produce no longer
//! rebuilds the catalogue.

use shoal_protocol::records::AnyRecord;

use super::CoordinatorState;
use crate::view::TopicsView;

/// The images changed since the last publication; a new state has published nothing, so all
/// are changed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ViewChanges {
    topics: bool,
    acls: bool,
    group_configs: bool,
    broker_configs: bool,
    features: bool,
    delegation_tokens: bool,
    client_quotas: bool,
}

impl Default for ViewChanges {
    fn default() -> Self {
        ViewChanges {
            topics: true,
            acls: true,
            group_configs: true,
            broker_configs: true,
            features: true,
            delegation_tokens: true,
            client_quotas: true,
        }
    }
}

/// Not part of the state a replay must reach: two states are equal whatever either has
/// published.
impl PartialEq for ViewChanges {
    fn eq(&self, _other: &ViewChanges) -> bool {
        true
    }
}

impl Eq for ViewChanges {}

impl ViewChanges {
    const NONE: ViewChanges = ViewChanges {
        topics: false,
        acls: false,
        group_configs: false,
        broker_configs: false,
        features: false,
        delegation_tokens: false,
        client_quotas: false,
    };

    /// The images `record` changes once applied.
    pub(super) fn note(&mut self, record: &AnyRecord) {
        match record {
            AnyRecord::DisklessPartitionCreatedRecord(_)
            | AnyRecord::ShoalTopicConfigRecord(_)
            | AnyRecord::ShoalTopicOverridesRecord(_)
            | AnyRecord::DisklessTopicDeletedRecord(_)
            | AnyRecord::ShoalMirrorCreatedRecord(_)
            | AnyRecord::ShoalTopicMirrorChangedRecord(_)
            | AnyRecord::ShoalMirrorPartitionsChangedRecord(_)
            | AnyRecord::ShoalPartitionTruncatedRecord(_) => self.topics = true,
            // The cluster-wide defaults are part of every topic's config in effect.
            AnyRecord::ShoalBrokerConfigRecord(_) => {
                self.broker_configs = true;
                self.topics = true;
            }
            AnyRecord::ShoalAclCreatedRecord(_) | AnyRecord::ShoalAclDeletedRecord(_) => {
                self.acls = true
            }
            AnyRecord::ShoalGroupConfigRecord(_) | AnyRecord::ShoalGroupDeletedRecord(_) => {
                self.group_configs = true
            }
            AnyRecord::ShoalFeatureLevelsRecord(_) => self.features = true,
            AnyRecord::ShoalDelegationTokenRecord(_)
            | AnyRecord::ShoalDelegationTokenRemovedRecord(_) => self.delegation_tokens = true,
            AnyRecord::ShoalClientQuotaRecord(_) => self.client_quotas = true,
            _ => {}
        }
    }

    fn any(&self) -> bool {
        let ViewChanges {
            topics,
            acls,
            group_configs,
            broker_configs,
            features,
            delegation_tokens,
            client_quotas,
        } = *self;
        topics
            || acls
            || group_configs
            || broker_configs
            || features
            || delegation_tokens
            || client_quotas
    }
}

impl CoordinatorState {
    /// The view to publish after `current`, with only the images changed since it rebuilt and
    /// the others shared with it; None when nothing it shows changed.
    pub fn view_after(&mut self, current: &TopicsView) -> Option<TopicsView> {
        let changed = std::mem::replace(&mut self.view_changes, ViewChanges::NONE);
        changed.any().then(|| self.view_with(current, changed))
    }

    /// The whole view, every image built afresh (`view_after` rebuilds only the changed).
    pub fn topics_view(&self) -> TopicsView {
        self.view_with(&TopicsView::default(), ViewChanges::default())
    }

    /// `current` at a new version with the `changed` images rebuilt from this state.
    fn view_with(&self, current: &TopicsView, changed: ViewChanges) -> TopicsView {
        let mut view = current.next_version();
        if changed.topics {
            view.set_topics(self.topic_metas());
        }
        if changed.acls {
            view.set_acls(self.acls.iter().cloned().collect());
        }
        if changed.group_configs {
            view.set_group_configs(self.group_configs.clone());
        }
        if changed.broker_configs {
            view.set_broker_configs(self.broker_configs.clone());
        }
        if changed.features {
            view.set_features(self.features.clone());
        }
        if changed.delegation_tokens {
            view.set_delegation_tokens(self.delegation_tokens.clone());
        }
        if changed.client_quotas {
            view.set_client_quotas(self.client_quotas.clone());
        }
        view
    }
}
