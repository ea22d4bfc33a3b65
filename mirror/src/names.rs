//! Mirror names follow the topic-name rules, minus the suffixes that mark state.

use crate::MirrorError;

/// `mirror.name` gets this suffix when its topics are removed (failover).
pub const REMOVED_SUFFIX: &str = ".removed";
const PAUSED_SUFFIX: &str = ".paused";
const NAME_MAX_CHARS: usize = 249;

pub fn validate_mirror_name(name: &str) -> Result<(), MirrorError> {
    let valid = !name.is_empty()
        && name.len() <= NAME_MAX_CHARS
        && name != "."
        && name != ".."
        && !name.ends_with(REMOVED_SUFFIX)
        && !name.ends_with(PAUSED_SUFFIX)
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if valid {
        Ok(())
    } else {
        Err(MirrorError::InvalidMirrorName)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_kip_rules() {
        for good in ["dr", "east-1.backup", "a_b", &"x".repeat(249)] {
            assert_eq!(validate_mirror_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            "dr.removed",
            "dr.paused",
            "with space",
            "é",
            &"x".repeat(250),
        ] {
            assert_eq!(
                validate_mirror_name(bad),
                Err(MirrorError::InvalidMirrorName),
                "{bad}"
            );
        }
    }
}
