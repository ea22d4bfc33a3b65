//! Names the commit the binary is built from (`shoal --version`, the start-up log line):
//! `git describe`'s short hash, `-dirty` with uncommitted changes, or `unknown` outside a
//! git checkout.

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args([
            "describe",
            "--always",
            "--dirty",
            "--abbrev=12",
            "--exclude=*",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=SHOAL_COMMIT={commit}");
    // A new commit, a checkout or a staged change builds the name anew.
    for path in ["../.git/HEAD", "../.git/index", "../.git/refs/heads"] {
        println!("cargo:rerun-if-changed={path}");
    }
}
