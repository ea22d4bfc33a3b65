//! The README's and docs/architecture.md's crate tables name exactly the workspace's members,
//! so neither goes stale when a crate is added or removed.

use std::collections::BTreeSet;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The workspace's members, as Cargo.toml lists them.
fn members() -> BTreeSet<String> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("a members line");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The crate directories (`` `name/` ``) a document's table under `heading` names in its rows.
fn table_crates(document: &str, heading: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join(document)).expect("the document");
    let section = text.split(heading).nth(1).expect("the heading");
    let table = section
        .split("\n\n")
        .find(|block| block.starts_with('|'))
        .expect("a table");
    let mut crates = BTreeSet::new();
    for row in table.lines().skip(2) {
        for name in row.split('`').skip(1).step_by(2) {
            if let Some(dir) = name.strip_suffix('/') {
                if root().join(dir).join("Cargo.toml").exists() && dir != "fuzz" {
                    crates.insert(dir.to_string());
                }
            }
        }
    }
    crates
}

#[test]
fn the_readme_lists_every_crate() {
    assert_eq!(table_crates("README.md", "## The code"), members());
}

#[test]
fn the_architecture_lists_every_crate() {
    assert_eq!(
        table_crates("docs/architecture.md", "## Crates by layer"),
        members()
    );
}
