//! Consumer groups' lag as Prometheus gauges, from the coordinator's committed offsets and
//! high watermarks at scrape time: what a lag exporter would compute, without one.

use std::fmt::Write;

use shoal_coordinator::messages::GroupLag;

/// Reads one figure out of a group's lag.
type LagValue = fn(&GroupLag) -> i64;

/// `shoal_group_lag_records` (summed over the group's partitions) and
/// `shoal_group_lag_max_records` (its worst partition), a series a group.
pub fn render_group_lags(lags: &[GroupLag]) -> String {
    let families: [(&str, LagValue); 2] = [
        ("shoal_group_lag_records", |l| l.total),
        ("shoal_group_lag_max_records", |l| l.max),
    ];
    let mut out = String::new();
    for (name, value) in families {
        let _ = writeln!(out, "# TYPE {name} gauge");
        for lag in lags {
            let group = label_value(&lag.group);
            let _ = writeln!(out, "{name}{{group=\"{group}\"}} {}", value(lag));
        }
    }
    out
}

/// A label value as the text format needs it: group ids are the clients' own strings.
fn label_value(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_id_cannot_break_out_of_its_label() {
        let lags = [GroupLag {
            group: "evil\"} 1\nshoal_x{a=\"\\".into(),
            partitions: 1,
            total: 7,
            max: 7,
        }];
        let text = render_group_lags(&lags);
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(text.contains(r#"shoal_group_lag_records{group="evil\"} 1\nshoal_x{a=\"\\"} 7"#));
    }
}
