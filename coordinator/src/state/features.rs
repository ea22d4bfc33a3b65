//! The coordinator's finalized feature levels: looked up and applied from the log (what
//! they mean and how they are checked is `crate::features`).

use shoal_protocol::records::ShoalFeatureLevelsRecord;

use super::CoordinatorState;
use crate::features::FinalizedFeatures;

impl CoordinatorState {
    pub(crate) fn features(&self) -> &FinalizedFeatures {
        &self.features
    }

    pub(crate) fn apply_feature_levels(&mut self, record: &ShoalFeatureLevelsRecord) {
        self.features = FinalizedFeatures::of_record(record);
    }
}
