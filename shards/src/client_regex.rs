//! Regular expressions clients send (a consumer group's topic subscription, a ListTransactions
//! transactional-id pattern): Kafka compiles them with RE2/J and matches whole names (its
//! `matches`), so a pattern here is anchored at both ends.

use regex::Regex;

/// The most memory one client's expression may compile into.
const COMPILED_BYTES_MAX: usize = 1 << 20;

/// `expression` as a regex that matches whole names; None if it is not a valid expression or
/// compiles into more than `COMPILED_BYTES_MAX`.
pub fn whole_match(expression: &str) -> Option<Regex> {
    regex::RegexBuilder::new(&format!("^(?:{expression})$"))
        .size_limit(COMPILED_BYTES_MAX)
        .build()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_names_match_and_bad_expressions_are_refused() {
        let regex = whole_match("orders-.*").unwrap();
        assert!(regex.is_match("orders-eu"));
        assert!(!regex.is_match("old-orders-eu"));
        assert!(!whole_match("orders").unwrap().is_match("orders-eu"));
        // An alternation stays inside the anchors.
        assert!(!whole_match("a|b").unwrap().is_match("ab"));
        assert!(whole_match("orders-(").is_none());
        assert!(
            whole_match("(a{1000}){1000}").is_none(),
            "too large once compiled"
        );
    }
}
