//! Which version of a subject a path names: a number from 1, or `latest` (also `-1`).

use crate::RegistryError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionSelector {
    Latest,
    Number(i32),
}

impl VersionSelector {
    pub fn parse(text: &str) -> Result<VersionSelector, RegistryError> {
        if text.eq_ignore_ascii_case("latest") || text == "-1" {
            return Ok(VersionSelector::Latest);
        }
        match text.parse::<i32>() {
            Ok(n) if n >= 1 => Ok(VersionSelector::Number(n)),
            _ => Err(RegistryError::InvalidVersion(text.to_string())),
        }
    }
}

impl std::fmt::Display for VersionSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VersionSelector::Latest => f.write_str("latest"),
            VersionSelector::Number(n) => write!(f, "{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_from_one_and_latest() {
        assert_eq!(
            VersionSelector::parse("latest").unwrap(),
            VersionSelector::Latest
        );
        assert_eq!(
            VersionSelector::parse("-1").unwrap(),
            VersionSelector::Latest
        );
        assert_eq!(
            VersionSelector::parse("7").unwrap(),
            VersionSelector::Number(7)
        );
        for bad in ["0", "-2", "x", "2147483648", ""] {
            assert_eq!(
                VersionSelector::parse(bad).unwrap_err().error_code(),
                42202,
                "{bad}"
            );
        }
    }
}
