//! Compatibility levels: which earlier versions a new schema is checked against, and in which
//! direction (a new reader of old data, an old reader of new data, or both).

use crate::RegistryError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompatibilityLevel {
    None,
    Backward,
    BackwardTransitive,
    Forward,
    ForwardTransitive,
    Full,
    FullTransitive,
}

impl CompatibilityLevel {
    /// The registry's default, as Confluent's.
    pub const DEFAULT: CompatibilityLevel = CompatibilityLevel::Backward;

    const NAMES: [(CompatibilityLevel, &'static str); 7] = [
        (CompatibilityLevel::None, "NONE"),
        (CompatibilityLevel::Backward, "BACKWARD"),
        (
            CompatibilityLevel::BackwardTransitive,
            "BACKWARD_TRANSITIVE",
        ),
        (CompatibilityLevel::Forward, "FORWARD"),
        (CompatibilityLevel::ForwardTransitive, "FORWARD_TRANSITIVE"),
        (CompatibilityLevel::Full, "FULL"),
        (CompatibilityLevel::FullTransitive, "FULL_TRANSITIVE"),
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(level, _)| *level == self)
            .map(|(_, name)| *name)
            .expect("every level is named")
    }

    /// A level by name, in any case (Confluent accepts `backward` and `BACKWARD`).
    pub fn parse(name: &str) -> Result<CompatibilityLevel, RegistryError> {
        Self::NAMES
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(name))
            .map(|(level, _)| *level)
            .ok_or(RegistryError::InvalidCompatibilityLevel)
    }

    /// The new schema must read data written with the earlier ones.
    pub fn backward(self) -> bool {
        matches!(
            self,
            Self::Backward | Self::BackwardTransitive | Self::Full | Self::FullTransitive
        )
    }

    /// The earlier schemas must read data written with the new one.
    pub fn forward(self) -> bool {
        matches!(
            self,
            Self::Forward | Self::ForwardTransitive | Self::Full | Self::FullTransitive
        )
    }

    /// Checked against every earlier version, not only the latest.
    pub fn transitive(self) -> bool {
        matches!(
            self,
            Self::BackwardTransitive | Self::ForwardTransitive | Self::FullTransitive
        )
    }
}
