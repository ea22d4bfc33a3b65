//! How far each topic's Iceberg table trails its topic, as the table writer (a thread of the
//! engine's) last saw it, rendered as Prometheus families at a scrape. Process-wide: the writer
//! is one thread per broker, and a scrape only reads; the lock is held to copy a few numbers.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::metrics::Family;

/// One table's progress.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableProgress {
    /// Committed records not yet in the table, summed over the topic's partitions.
    pub lag_records: i64,
    /// How old the newest row the table holds is while records wait (0 when caught up).
    pub lag_seconds: i64,
    pub commits: u64,
    pub rows: u64,
    /// Rounds whose commit failed (or stopped at a bad record).
    pub failed_commits: u64,
    pub dead_letters: u64,
}

static PROGRESS: Mutex<BTreeMap<String, TableProgress>> = Mutex::new(BTreeMap::new());

/// Changes `topic`'s table's progress.
pub fn update(topic: &str, change: impl FnOnce(&mut TableProgress)) {
    let mut progress = PROGRESS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    change(progress.entry(topic.to_string()).or_default());
}

/// Forgets the tables of topics that no longer have one.
pub fn retain(topics: &[String]) {
    let mut progress = PROGRESS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    progress.retain(|topic, _| topics.contains(topic));
}

pub fn snapshot() -> BTreeMap<String, TableProgress> {
    PROGRESS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone()
}

/// Reads one figure out of a table's progress.
type ProgressValue = fn(&TableProgress) -> i64;

pub const TABLE_PROGRESS: [(Family, ProgressValue); 6] = [
    (
        Family::gauge(
            "shoal_iceberg_table_lag_records",
            "Committed records of the topic not yet in its Iceberg table, summed over its partitions, as of the table writer's last round.",
        )
        .by(&["topic"]),
        |p| p.lag_records,
    ),
    (
        Family::gauge(
            "shoal_iceberg_table_lag_seconds",
            "How old the newest row of the topic's table is while records wait for it (0 when it holds every committed record).",
        )
        .by(&["topic"]),
        |p| p.lag_seconds,
    ),
    (
        Family::counter(
            "shoal_iceberg_table_commits_total",
            "Snapshots the table writer committed to the topic's table.",
        )
        .by(&["topic"]),
        |p| p.commits as i64,
    ),
    (
        Family::counter(
            "shoal_iceberg_table_rows_total",
            "Rows the table writer added to the topic's table.",
        )
        .by(&["topic"]),
        |p| p.rows as i64,
    ),
    (
        Family::counter(
            "shoal_iceberg_table_failed_commits_total",
            "Rounds in which the topic's table did not take all it should have: a failure (logged), a lost race, or a bad record one of its partitions stops before.",
        )
        .by(&["topic"]),
        |p| p.failed_commits as i64,
    ),
    (
        Family::counter(
            "shoal_iceberg_table_dead_letters_total",
            "Records set aside in the topic's dead-letter table.",
        )
        .by(&["topic"]),
        |p| p.dead_letters as i64,
    ),
];

/// Every family, a series a table.
pub fn render_table_progress(progress: &BTreeMap<String, TableProgress>) -> String {
    let mut out = String::new();
    for (family, value) in &TABLE_PROGRESS {
        family.header(&mut out);
        for (topic, table) in progress {
            family.sample(&mut out, &[topic], value(table));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_table_is_a_series_of_each_family() {
        let progress = BTreeMap::from([(
            "orders".to_string(),
            TableProgress {
                lag_records: 7,
                rows: 100,
                ..TableProgress::default()
            },
        )]);
        let text = render_table_progress(&progress);
        assert!(text.contains("shoal_iceberg_table_lag_records{topic=\"orders\"} 7"));
        assert!(text.contains("shoal_iceberg_table_rows_total{topic=\"orders\"} 100"));
        let empty = render_table_progress(&BTreeMap::new());
        assert!(!empty.contains("topic="), "{empty}");
    }
}
