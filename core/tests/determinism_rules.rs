//! DESIGN "Determinism": core never reads a system clock or OS randomness and never iterates a
//! hash container. This scans every `core/src/**/*.rs` at test time and fails on a forbidden
//! name anywhere outside comments (string literals count as code: they are rare enough here).

use std::fs;
use std::path::{Path, PathBuf};

const FORBIDDEN: &[&str] = &[
    "HashMap",
    "HashSet",
    "SystemTime",
    "Instant::now",
    "thread_rng",
    "OsRng",
    "from_entropy",
    "getrandom",
];

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

/// `src` with every comment replaced by spaces (newlines kept, so line numbers stay right).
/// Understands line and nested block comments, string literals with escapes, raw strings
/// (`r"…"`, `r#"…"#`, byte variants) and char literals (told apart from lifetimes).
fn strip_comments(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '/' if c.get(i + 1) == Some(&'/') => {
                while i < c.len() && c[i] != '\n' {
                    out.push(' ');
                    i += 1;
                }
            }
            '/' if c.get(i + 1) == Some(&'*') => {
                let mut depth = 0;
                loop {
                    if i >= c.len() {
                        break;
                    }
                    if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                        depth += 1;
                        out.push_str("  ");
                        i += 2;
                    } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        out.push_str("  ");
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        out.push(blank(c[i]));
                        i += 1;
                    }
                }
            }
            'r' if !prev_is_ident(&c, i) && is_raw_string_start(&c, i + 1) => {
                out.push('r');
                i += 1;
                let mut hashes = 0;
                while c[i] == '#' {
                    hashes += 1;
                    out.push('#');
                    i += 1;
                }
                out.push('"');
                i += 1;
                while i < c.len() {
                    if c[i] == '"' && (0..hashes).all(|k| c.get(i + 1 + k) == Some(&'#')) {
                        out.push('"');
                        i += 1;
                        for _ in 0..hashes {
                            out.push('#');
                            i += 1;
                        }
                        break;
                    }
                    out.push(c[i]);
                    i += 1;
                }
            }
            '"' => {
                out.push('"');
                i += 1;
                while i < c.len() {
                    out.push(c[i]);
                    if c[i] == '\\' && i + 1 < c.len() {
                        out.push(c[i + 1]);
                        i += 2;
                        continue;
                    }
                    i += 1;
                    if c[i - 1] == '"' {
                        break;
                    }
                }
            }
            '\'' if is_char_literal(&c, i) => {
                out.push('\'');
                i += 1;
                while i < c.len() {
                    out.push(c[i]);
                    if c[i] == '\\' && i + 1 < c.len() {
                        out.push(c[i + 1]);
                        i += 2;
                        continue;
                    }
                    i += 1;
                    if c[i - 1] == '\'' {
                        break;
                    }
                }
            }
            ch => {
                out.push(ch);
                i += 1;
            }
        }
    }
    out
}

fn prev_is_ident(c: &[char], i: usize) -> bool {
    i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_')
}

/// After an `r` (or `br`): `"` or `#…#"`.
fn is_raw_string_start(c: &[char], mut i: usize) -> bool {
    while c.get(i) == Some(&'#') {
        i += 1;
    }
    c.get(i) == Some(&'"')
}

/// A `'` that opens a char literal (`'a'`, `'\n'`, `'\u{1F600}'`), not a lifetime (`'a`).
fn is_char_literal(c: &[char], i: usize) -> bool {
    matches!(
        (c.get(i + 1), c.get(i + 2)),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}

/// Every (line, name) where a forbidden name occurs as a whole word in `code`.
fn violations(code: &str) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        for name in FORBIDDEN {
            let mut from = 0;
            while let Some(pos) = line[from..].find(name) {
                let start = from + pos;
                let end = start + name.len();
                let before = line[..start].chars().next_back();
                let after = line[end..].chars().next();
                let word =
                    |ch: Option<char>| ch.is_some_and(|ch| ch.is_alphanumeric() || ch == '_');
                if !word(before) && !word(after) {
                    found.push((n + 1, *name));
                }
                from = end;
            }
        }
    }
    found
}

#[test]
fn core_sources_use_no_hash_containers_system_clock_or_os_randomness() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(
        files.len() >= 20,
        "found only {} files under {}",
        files.len(),
        src.display()
    );
    let mut report = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).expect("read source");
        for (line, name) in violations(&strip_comments(&text)) {
            report.push(format!("{}:{line}: {name}", file.display()));
        }
    }
    assert!(
        report.is_empty(),
        "nondeterminism in core:\n{}",
        report.join("\n")
    );
}

#[test]
fn the_scanner_ignores_comments_but_not_code() {
    let src = r##"
// HashMap in a line comment
/// SystemTime in a doc comment
/* OsRng /* nested thread_rng */ still a comment getrandom */
let a = "http://example.com"; let m: HashMap<u8, u8> = x;
let s = r#"a "quoted" // not a comment"#; let t = Instant::now();
fn f<'a>(x: &'a str) -> char { let q = '"'; SystemTime::now(); '\'' }
let ok = MyHashMapLike::new(); let rng = from_entropy_x();
"##;
    let found = violations(&strip_comments(src));
    assert_eq!(
        found,
        vec![(5, "HashMap"), (6, "Instant::now"), (7, "SystemTime")],
        "{}",
        strip_comments(src)
    );
}
