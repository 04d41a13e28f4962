//! Names the commit the worker is built from, for `tasklatch_build_info` and `--version`
//! (`tasklatch_worker::build_info`): `TASKLATCH_COMMIT` when set and not empty, else
//! `git rev-parse --short=12 HEAD` of the checkout being built, else `unknown` (a build outside
//! a git checkout, or without git). The commit is re-read when `HEAD` or a branch moves.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=TASKLATCH_COMMIT");
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let git = PathBuf::from(manifest).join("../.git");
    for watched in ["HEAD", "refs/heads", "packed-refs"] {
        let path = git.join(watched);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    let commit = std::env::var("TASKLATCH_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(git_head)
        .unwrap_or_else(|| "unknown".to_owned());
    let commit = commit.trim();
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    println!("cargo:rustc-env=TASKLATCH_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=TASKLATCH_VERSION_LINE={version} (commit {commit})");
}

/// The checkout's `HEAD`, abbreviated; `None` when git cannot tell.
fn git_head() -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()?;
    let head = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && !head.is_empty()).then_some(head)
}
