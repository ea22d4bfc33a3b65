//! UpdateFeatures: the finalized feature levels, changed as the engine validated them.

use crate::command::{Command, Round};
use crate::entry::Entry;
use crate::features::FinalizedFeatures;

/// `changes` (feature, level) made to the levels at `expected_epoch`; refused, answering
/// the levels now, if another change came first (two brokers at once cannot lose one).
#[derive(Debug, Clone)]
pub struct SetFeatureLevels {
    pub expected_epoch: i64,
    pub changes: Vec<(String, i16)>,
}

impl Command for SetFeatureLevels {
    type Reply = Result<(), FinalizedFeatures>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let current = round.state().features().clone();
        if current.epoch != self.expected_epoch {
            return Err(current);
        }
        let record = current.with(&self.changes).record();
        round.append(&Entry::of(round.now_ms(), record));
        // The brokers learn the levels with the next topic catalogue.
        round.topics_changed();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::{GROUP_VERSION, TRANSACTION_VERSION};
    use crate::frames::scan_frames;
    use crate::state::CoordinatorState;
    use crate::CoordinatorMetrics;

    fn run(
        state: &mut CoordinatorState,
        log: &mut Vec<u8>,
        command: SetFeatureLevels,
    ) -> Result<(), FinalizedFeatures> {
        let metrics = CoordinatorMetrics::default();
        command.run(&mut Round::new(state, log, 1, &metrics))
    }

    #[test]
    fn levels_change_at_the_epoch_they_were_validated_against_and_survive_replay() {
        let (mut state, mut log) = (CoordinatorState::default(), Vec::new());
        let down = |epoch| SetFeatureLevels {
            expected_epoch: epoch,
            changes: vec![(TRANSACTION_VERSION.to_string(), 1)],
        };
        run(&mut state, &mut log, down(0)).unwrap();
        assert_eq!(state.topics_view().features().level(TRANSACTION_VERSION), 1);
        // Validated against the levels before that change: refused, with the levels now.
        let now = run(&mut state, &mut log, down(0)).unwrap_err();
        assert_eq!((now.epoch, now.level(GROUP_VERSION)), (1, 1));

        let mut replayed = CoordinatorState::default();
        for entry in &scan_frames(&log).entries {
            replayed.apply(entry);
        }
        assert_eq!(replayed, state);
        let image = state.encode_snapshot();
        assert_eq!(CoordinatorState::decode_snapshot(&image).unwrap(), state);
    }
}
