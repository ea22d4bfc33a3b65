//! Every metric family the Prometheus endpoint exports, for `docs/metrics.md` (a test keeps
//! the file equal to what this writes). Tests fail if a scrape renders a family missing here or
//! this lists one no scrape renders.

use super::family::Family;
use super::tables::{
    ShardCounters, ShardGauges, ShardHistograms, COORDINATOR, FETCH_CACHE_HIT_RATIO,
    PARTITION_REWRITES, REQUESTS, REQUEST_DURATION, STORE_REQUESTS,
};

/// Every family, sorted by name.
pub fn families() -> Vec<&'static Family> {
    let mut all: Vec<&'static Family> = vec![
        &REQUESTS,
        &REQUEST_DURATION,
        &FETCH_CACHE_HIT_RATIO,
        &STORE_REQUESTS,
        &crate::mirror::progress::MIRROR_LAG,
    ];
    all.extend(ShardCounters::FAMILIES);
    all.extend(ShardHistograms::FAMILIES);
    all.extend(ShardGauges::FAMILIES);
    all.extend(PARTITION_REWRITES.iter().map(|(family, _)| family));
    all.extend(COORDINATOR.iter().map(|(family, _)| family));
    all.extend(
        crate::rewrite::COMPACTION_STATUS
            .iter()
            .map(|(family, _)| family),
    );
    all.extend(crate::groups::GROUP_LAGS.iter().map(|(family, _)| family));
    all.extend(
        crate::table_progress::TABLE_PROGRESS
            .iter()
            .map(|(family, _)| family),
    );
    all.sort_by_key(|family| family.name);
    all
}

/// `docs/metrics.md`.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Metrics\n\n\
         What `GET /metrics` on `metrics_listen` exports (Prometheus text format), written from\n\
         the declarations the broker renders them by (`shards/src/metrics/tables.rs` and the\n\
         modules `shards/src/metrics/catalogue.rs` names; `SHOAL_WRITE_METRICS_DOC=1 cargo test\n\
         -p shoal-shards metrics_doc` rewrites this file; the test fails while it differs).\n\
         Counters count since the broker started; every shard's are summed. A Grafana dashboard\n\
         over them is [`grafana/shoal.json`](grafana/shoal.json).\n\n\
         | metric | type | labels | meaning |\n|---|---|---|---|\n",
    );
    for family in families() {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            family.name,
            family.kind.as_str(),
            family.labels.join(", "),
            family.help
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::ShardMetrics;
    use shoal_coordinator::CoordinatorMetrics;

    #[test]
    fn every_family_a_scrape_renders_is_listed_and_every_listed_one_is_rendered() {
        let snapshot = ShardMetrics::new(0).snapshot();
        let text = snapshot.render(|k| k.to_string(), &CoordinatorMetrics::default())
            + &crate::mirror::progress::render_lags(Vec::new())
            + &crate::rewrite::render_compaction(&[], 0)
            + &crate::groups::render_group_lags(&[])
            + &crate::table_progress::render_table_progress(&Default::default());
        let rendered: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        let listed = families();
        for name in &rendered {
            assert!(
                listed.iter().any(|f| f.name == *name),
                "{name} is not listed"
            );
        }
        for family in &listed {
            let line = format!("# TYPE {} {}", family.name, family.kind.as_str());
            assert!(
                text.contains(&line),
                "{} is listed, not rendered",
                family.name
            );
        }
        assert_eq!(rendered.len(), listed.len(), "a family is rendered twice");
        assert_eq!(text.matches("# HELP ").count(), listed.len());
    }

    #[test]
    fn metrics_doc_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/metrics.md");
        let written = markdown();
        if std::env::var_os("SHOAL_WRITE_METRICS_DOC").is_some() {
            std::fs::write(&path, &written).unwrap();
        }
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            current == written,
            "docs/metrics.md differs from the declarations: SHOAL_WRITE_METRICS_DOC=1 cargo test \
             -p shoal-shards metrics_doc"
        );
    }
}
