//! What this binary is: the crate version and the commit it was built from (set by
//! `worker/build.rs`: `TASKLATCH_COMMIT`, else the checkout's `HEAD`, else `unknown`). Shown by
//! `tasklatch --version`, the worker's start-up line and `tasklatch_build_info`.

/// The crate version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit this binary was built from, abbreviated; `unknown` when the build could not tell.
pub const COMMIT: &str = env!("TASKLATCH_BUILD_COMMIT");

/// `VERSION (commit COMMIT)`, as `tasklatch --version` prints it after the program's name.
pub const VERSION_LINE: &str = env!("TASKLATCH_VERSION_LINE");
