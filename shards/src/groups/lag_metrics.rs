//! Consumer groups' lag as Prometheus gauges, from the coordinator's committed offsets and
//! high watermarks at scrape time: what a lag exporter would compute, without one.

use shoal_coordinator::messages::GroupLag;

use crate::metrics::Family;

/// Reads one figure out of a group's lag.
pub type LagValue = fn(&GroupLag) -> i64;

pub const GROUP_LAGS: [(Family, LagValue); 2] = [
    (
        Family::gauge(
            "shoal_group_lag_records",
            "Records between a group's committed offsets and the high watermarks, summed over the partitions it committed (0 where it committed past the end).",
        )
        .by(&["group"]),
        |l| l.total,
    ),
    (
        Family::gauge(
            "shoal_group_lag_max_records",
            "The same lag on the group's partition that trails most.",
        )
        .by(&["group"]),
        |l| l.max,
    ),
];

/// Both families, a series a group.
pub fn render_group_lags(lags: &[GroupLag]) -> String {
    let mut out = String::new();
    for (family, value) in &GROUP_LAGS {
        family.header(&mut out);
        for lag in lags {
            family.sample(&mut out, &[&lag.group], value(lag));
        }
    }
    out
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
        assert_eq!(text.lines().count(), 6, "{text}");
        assert!(text.contains(r#"shoal_group_lag_records{group="evil\"} 1\nshoal_x{a=\"\\"} 7"#));
    }
}
