//! Subject names: what a path or a reference may name.

use crate::RegistryError;

/// Longer names are refused (Confluent's registry sets no bound; a topic name is at most 249
/// bytes and a subject is usually a topic's name with a suffix).
pub const SUBJECT_MAX_BYTES: usize = 1024;

/// A subject name: not empty, not too long, no control characters.
pub fn check_subject(subject: &str) -> Result<(), RegistryError> {
    if subject.is_empty()
        || subject.len() > SUBJECT_MAX_BYTES
        || subject.chars().any(char::is_control)
    {
        return Err(RegistryError::InvalidSubject(subject.to_string()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_bounded_and_printable() {
        assert!(check_subject("orders-value").is_ok());
        assert!(check_subject(":.ctx:orders").is_ok());
        for bad in ["", "a\nb", &"x".repeat(SUBJECT_MAX_BYTES + 1)] {
            assert_eq!(check_subject(bad).unwrap_err().error_code(), 42208);
        }
    }
}
