//! Where the shard benches write their figures: perf-results/<date>-<name>.json, with the
//! workload beside them (shared by the bench targets; not a target itself).

use std::path::Path;

/// Writes `doc` as perf-results/<today>-<name>.json and says where.
pub fn write(name: &str, doc: &serde_json::Value) {
    let date = std::process::Command::new("date")
        .arg("+%Y-%m-%d")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../perf-results")
        .join(format!("{date}-{name}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(doc).expect("json")).expect("write");
    println!("wrote {}", path.display());
}
