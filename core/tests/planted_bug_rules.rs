//! The house rule of planted bugs (`src/mutation.rs`): a planted bug replaces one value after
//! the correct code. This scans every `core/src/**/*.rs` outside the mutation module at test
//! time: no site asks `mutation::active` itself (every planted bug enters through
//! `mutation::substitute`), and no function holds more than two substitutions. Comment lines
//! are skipped; a function is counted from one `fn` line to the next.

use std::fs;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// Whether `line` (trimmed) starts a function item.
fn starts_fn(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().take(4).collect();
    let item = words.iter().position(|w| *w == "fn").is_some_and(|at| {
        words[..at]
            .iter()
            .all(|w| w.starts_with("pub") || *w == "async")
    });
    item && !line.starts_with("//")
}

#[test]
fn planted_bugs_enter_through_one_substitution_at_most_two_per_function() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mutation = src.join("mutation");
    let mut problems = Vec::new();
    let mut sites = 0;
    for file in files
        .iter()
        .filter(|f| !f.starts_with(&mutation) && f.file_name().is_some_and(|n| n != "mutation.rs"))
    {
        let text = fs::read_to_string(file).expect("read source");
        let shown = file
            .strip_prefix(&src)
            .unwrap_or(file)
            .display()
            .to_string();
        let (mut function, mut in_function) = (String::from("(top)"), 0);
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.starts_with("//") {
                continue;
            }
            if starts_fn(line) {
                (function, in_function) = (format!("{shown}:{}", n + 1), 0);
            }
            if line.contains("mutation::active(") {
                problems.push(format!("{shown}:{}: asks mutation::active itself", n + 1));
            }
            let here = line.matches("mutation::substitute(").count();
            sites += here;
            in_function += here;
            if here > 0 && in_function > 2 {
                problems.push(format!("{function}: more than two substitutions"));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(
        sites >= 40,
        "only {sites} substitution sites found: is the scan still right?"
    );
}
