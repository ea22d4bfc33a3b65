//! One mirrored partition's lifecycle (mirroring.md): INITIALIZING → PREPARING (truncate to the
//! source's last mirrored offset) → MIRRORING; STOPPING → STOPPED on removal (failover); FAILED
//! from any active state, retried with exponential backoff and full jitter; paused on top of
//! any active state. Pure: time and randomness come in as arguments.

use crate::{MirrorConfig, MirrorError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MirrorState {
    Unknown,
    Initializing,
    Preparing,
    Mirroring,
    Stopping,
    Stopped,
    Failed,
}

impl MirrorState {
    /// The `State` int8 of Read/WriteMirrorStates.
    pub fn code(self) -> i8 {
        match self {
            MirrorState::Unknown => 0,
            MirrorState::Initializing => 1,
            MirrorState::Preparing => 2,
            MirrorState::Mirroring => 3,
            MirrorState::Stopping => 4,
            MirrorState::Stopped => 5,
            MirrorState::Failed => 6,
        }
    }

    pub fn from_code(code: i8) -> Option<MirrorState> {
        Some(match code {
            0 => MirrorState::Unknown,
            1 => MirrorState::Initializing,
            2 => MirrorState::Preparing,
            3 => MirrorState::Mirroring,
            4 => MirrorState::Stopping,
            5 => MirrorState::Stopped,
            6 => MirrorState::Failed,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            MirrorState::Unknown => "UNKNOWN",
            MirrorState::Initializing => "INITIALIZING",
            MirrorState::Preparing => "PREPARING",
            MirrorState::Mirroring => "MIRRORING",
            MirrorState::Stopping => "STOPPING",
            MirrorState::Stopped => "STOPPED",
            MirrorState::Failed => "FAILED",
        }
    }

    /// States in which the partition belongs to a mirror and is read-only.
    pub fn is_active(self) -> bool {
        matches!(
            self,
            MirrorState::Initializing
                | MirrorState::Preparing
                | MirrorState::Mirroring
                | MirrorState::Failed
                | MirrorState::Stopping
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMirror {
    pub state: MirrorState,
    pub paused: bool,
    /// Set on STOPPED: the local end offset when mirroring stopped (the LMO).
    pub last_mirrored_offset: i64,
    /// PREPARING finished once (truncation done): a retry resumes at the local end offset
    /// instead of truncating again.
    pub prepared: bool,
    /// Consecutive failures; reset once mirroring works again.
    pub failures: u32,
    /// FAILED: when the next attempt is due; None when attempts are exhausted.
    pub retry_at_ms: Option<i64>,
}

impl Default for PartitionMirror {
    fn default() -> Self {
        PartitionMirror {
            state: MirrorState::Unknown,
            paused: false,
            last_mirrored_offset: -1,
            prepared: false,
            failures: 0,
            retry_at_ms: None,
        }
    }
}

impl PartitionMirror {
    /// AddTopicsToMirror: only a partition that is not mirrored (UNKNOWN) or was stopped.
    pub fn add(&mut self) -> Result<(), MirrorError> {
        match self.state {
            MirrorState::Unknown | MirrorState::Stopped => {
                *self = PartitionMirror {
                    state: MirrorState::Initializing,
                    last_mirrored_offset: self.last_mirrored_offset,
                    ..PartitionMirror::default()
                };
                Ok(())
            }
            _ => Err(MirrorError::InvalidRequest),
        }
    }

    /// The fetcher starts asking the source for the last mirrored offset.
    pub fn begin_preparing(&mut self) -> Result<(), MirrorError> {
        self.expect(MirrorState::Initializing)?;
        self.state = MirrorState::Preparing;
        Ok(())
    }

    /// Local data past the source's last mirrored offset is truncated: fetching may start.
    pub fn prepared(&mut self) -> Result<(), MirrorError> {
        self.expect(MirrorState::Preparing)?;
        self.state = MirrorState::Mirroring;
        self.prepared = true;
        self.failures = 0;
        Ok(())
    }

    /// A fetch succeeded: the failure count starts over.
    pub fn fetched(&mut self) {
        if self.state == MirrorState::Mirroring {
            self.failures = 0;
        }
    }

    /// RemoveTopicsFromMirror (failover). FAILED is allowed too: failing over is what an
    /// operator does when the source is gone.
    pub fn remove(&mut self) -> Result<(), MirrorError> {
        match self.state {
            MirrorState::Initializing
            | MirrorState::Preparing
            | MirrorState::Mirroring
            | MirrorState::Failed => {
                self.state = MirrorState::Stopping;
                self.retry_at_ms = None;
                Ok(())
            }
            _ => Err(MirrorError::TopicNotInMirror),
        }
    }

    /// Fetching has stopped at local end offset `end_offset`: it becomes the LMO.
    pub fn stopped(&mut self, end_offset: i64) -> Result<(), MirrorError> {
        self.expect(MirrorState::Stopping)?;
        self.state = MirrorState::Stopped;
        self.paused = false;
        self.last_mirrored_offset = end_offset;
        Ok(())
    }

    /// The source failed this partition; the next attempt is due after a backoff:
    /// full jitter over `min(max, initial * 2^(failures - 1))`. `jitter` is uniform in [0, 1).
    pub fn fail(&mut self, now_ms: i64, config: &MirrorConfig, jitter: f64) {
        if !matches!(
            self.state,
            MirrorState::Initializing
                | MirrorState::Preparing
                | MirrorState::Mirroring
                | MirrorState::Failed
        ) {
            return;
        }
        self.state = MirrorState::Failed;
        self.failures = self.failures.saturating_add(1);
        let exhausted = config.retry_max_attempts > 0 && self.failures > config.retry_max_attempts;
        self.retry_at_ms = (!exhausted).then(|| {
            let exponent = (self.failures - 1).min(32);
            let ceiling = config
                .retry_initial_backoff_ms
                .saturating_mul(1u64 << exponent)
                .min(config.retry_max_backoff_ms);
            now_ms.saturating_add((ceiling as f64 * jitter.clamp(0.0, 1.0)) as i64)
        });
    }

    /// A FAILED partition whose backoff has passed tries again: from PREPARING if it never got
    /// through it, else straight to MIRRORING at the local end offset.
    pub fn retry_if_due(&mut self, now_ms: i64) -> bool {
        if self.state != MirrorState::Failed || self.paused {
            return false;
        }
        match self.retry_at_ms {
            Some(at) if now_ms >= at => {
                self.state = if self.prepared {
                    MirrorState::Mirroring
                } else {
                    MirrorState::Initializing
                };
                self.retry_at_ms = None;
                true
            }
            _ => false,
        }
    }

    pub fn pause(&mut self) -> Result<(), MirrorError> {
        if !self.state.is_active() || self.state == MirrorState::Stopping {
            return Err(MirrorError::TopicNotInMirror);
        }
        if self.paused {
            return Err(MirrorError::AlreadyPaused);
        }
        self.paused = true;
        Ok(())
    }

    pub fn resume(&mut self) -> Result<(), MirrorError> {
        if !self.state.is_active() {
            return Err(MirrorError::TopicNotInMirror);
        }
        if !self.paused {
            return Err(MirrorError::NotPaused);
        }
        self.paused = false;
        Ok(())
    }

    /// Whether the fetcher should fetch records for this partition now.
    pub fn should_fetch(&self) -> bool {
        self.state == MirrorState::Mirroring && !self.paused
    }

    /// Produces are refused while the partition belongs to a mirror (READ_ONLY_TOPIC).
    pub fn is_read_only(&self) -> bool {
        self.state.is_active()
    }

    fn expect(&self, state: MirrorState) -> Result<(), MirrorError> {
        if self.state == state {
            Ok(())
        } else {
            Err(MirrorError::InvalidRequest)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn config() -> MirrorConfig {
        MirrorConfig::from_pairs([
            ("bootstrap.servers", "src:9092"),
            ("mirror.failed.retry.initial.backoff.ms", "100"),
            ("mirror.failed.retry.max.backoff.ms", "1000"),
            ("mirror.failed.retry.max.attempts", "5"),
        ])
        .unwrap()
    }

    #[test]
    fn a_partition_goes_through_its_lifecycle_and_back_for_failback() {
        let mut p = PartitionMirror::default();
        assert!(!p.is_read_only());
        p.add().unwrap();
        assert!(p.is_read_only() && !p.should_fetch());
        p.begin_preparing().unwrap();
        p.prepared().unwrap();
        assert!(p.should_fetch());
        assert_eq!(p.add(), Err(MirrorError::InvalidRequest));
        p.pause().unwrap();
        assert_eq!(p.pause(), Err(MirrorError::AlreadyPaused));
        assert!(!p.should_fetch() && p.is_read_only());
        p.resume().unwrap();
        assert_eq!(p.resume(), Err(MirrorError::NotPaused));
        p.remove().unwrap();
        p.stopped(42).unwrap();
        assert!(!p.is_read_only());
        assert_eq!(p.last_mirrored_offset, 42);
        assert_eq!(p.remove(), Err(MirrorError::TopicNotInMirror));
        // Failback: the stopped partition joins a mirror again and prepares anew.
        p.add().unwrap();
        assert_eq!((p.state, p.prepared), (MirrorState::Initializing, false));
    }

    #[test]
    fn failures_back_off_exponentially_with_jitter_and_give_up_after_max_attempts() {
        let config = config();
        let mut p = PartitionMirror::default();
        p.add().unwrap();
        p.begin_preparing().unwrap();
        p.prepared().unwrap();
        let mut ceilings = Vec::new();
        for _ in 0..5 {
            p.fail(0, &config, 1.0);
            ceilings.push(p.retry_at_ms.unwrap());
            assert!(!p.retry_if_due(p.retry_at_ms.unwrap() - 1));
            assert!(p.retry_if_due(p.retry_at_ms.unwrap()));
            assert_eq!(
                p.state,
                MirrorState::Mirroring,
                "prepared: no new truncation"
            );
        }
        assert_eq!(ceilings, vec![100, 200, 400, 800, 1000]);
        p.fail(0, &config, 0.5);
        assert_eq!(p.retry_at_ms, None, "attempts exhausted");
        assert!(!p.retry_if_due(i64::MAX));
        // A partition that failed before it prepared prepares again.
        let mut q = PartitionMirror::default();
        q.add().unwrap();
        q.fail(10, &config, 0.0);
        assert!(q.retry_if_due(10));
        assert_eq!(q.state, MirrorState::Initializing);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Add,
        Prepare,
        Prepared,
        Remove,
        Stopped(i64),
        Fail(i64, u8),
        Retry(i64),
        Pause,
        Resume,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            Just(Op::Add),
            Just(Op::Prepare),
            Just(Op::Prepared),
            Just(Op::Remove),
            (0i64..1000).prop_map(Op::Stopped),
            (0i64..10_000, 0u8..=255).prop_map(|(t, j)| Op::Fail(t, j)),
            (0i64..100_000).prop_map(Op::Retry),
            Just(Op::Pause),
            Just(Op::Resume),
        ]
    }

    proptest! {
        #[test]
        fn invariants_hold_under_any_sequence(ops in prop::collection::vec(op(), 1..60)) {
            let config = config();
            let mut p = PartitionMirror::default();
            for op in ops {
                let before = p.clone();
                let result = match op {
                    Op::Add => p.add(),
                    Op::Prepare => p.begin_preparing(),
                    Op::Prepared => p.prepared(),
                    Op::Remove => p.remove(),
                    Op::Stopped(end) => p.stopped(end),
                    Op::Fail(now, j) => { p.fail(now, &config, j as f64 / 256.0); Ok(()) }
                    Op::Retry(now) => { p.retry_if_due(now); Ok(()) }
                    Op::Pause => p.pause(),
                    Op::Resume => p.resume(),
                };
                // A refused operation changes nothing.
                if result.is_err() {
                    prop_assert_eq!(&p, &before);
                }
                // Only MIRRORING, unpaused, fetches; read-only exactly while in a mirror.
                prop_assert_eq!(p.should_fetch(), p.state == MirrorState::Mirroring && !p.paused);
                prop_assert_eq!(p.is_read_only(), p.state.is_active());
                // A retry is scheduled only for FAILED partitions, within the max backoff.
                if let Some(at) = p.retry_at_ms {
                    prop_assert_eq!(p.state, MirrorState::Failed);
                    prop_assert!(at <= 10_000 + config.retry_max_backoff_ms as i64);
                }
                prop_assert!(!p.paused || p.state.is_active(), "only mirrored partitions pause");
                prop_assert_eq!(MirrorState::from_code(p.state.code()), Some(p.state));
            }
        }
    }
}
