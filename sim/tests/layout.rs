//! The simulator's house rules, checked on its source: a narrow crate root (at most 8 module
//! declarations in `lib.rs`), no function over 70 lines, and no cycle between the modules of
//! any folder (sibling `a` uses `b` and `b` uses `a`, directly or through other siblings).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The crate's source root.
fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = fs::read_dir(&d).unwrap_or_else(|e| panic!("read {}: {e}", d.display()));
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

/// The module path of a source file: `src/run/hosts/mcp/mod.rs` → `["run", "hosts", "mcp"]`.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The code of `text` with comments, string and char literals blanked (braces inside them
/// would confuse the counting below).
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '"' {
            out.push('"');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if chars.get(i) == Some(&'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            out.push('"');
            i += 1;
            continue;
        }
        if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            out.push_str("' '");
            i += 3;
            continue;
        }
        if c == '\'' && next == Some('\\') {
            while i < chars.len() && !(chars[i] == '\'' && i > 0 && chars[i - 1] != '\\') {
                i += 1;
            }
            out.push_str("' '");
            i += 1;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

/// `(name, first line, lines)` of every function with a body in `code`.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(at) = line.find("fn ") else { continue };
        let before = line[..at].trim();
        let words_ok = before.split_whitespace().all(|w| {
            matches!(
                w,
                "pub" | "pub(crate)" | "pub(super)" | "async" | "const" | "unsafe"
            )
        });
        if !words_ok || (at > 0 && !line[..at].ends_with(' ')) {
            continue;
        }
        let name: String = line[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let (mut depth, mut started) = (0i64, false);
        for (j, l) in lines.iter().enumerate().skip(i) {
            if !started && l.trim_end().ends_with(';') {
                break;
            }
            for ch in l.chars() {
                match ch {
                    '{' => (depth, started) = (depth + 1, true),
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if started && depth <= 0 {
                found.push((name.clone(), i + 1, j - i + 1));
                break;
            }
        }
    }
    found
}

#[test]
fn the_crate_root_declares_at_most_eight_modules() {
    let lib = read(&src().join("lib.rs"));
    let modules: Vec<&str> = lib
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.starts_with("mod ") || l.starts_with("pub mod ") || l.starts_with("pub(crate) mod ")
        })
        .collect();
    assert!(
        modules.len() <= 8,
        "lib.rs declares {} modules: {modules:?}",
        modules.len()
    );
}

#[test]
fn no_function_in_the_simulator_is_over_70_lines() {
    let mut long = Vec::new();
    for file in rust_files(&src()) {
        for (name, line, len) in functions(&code_only(&read(&file))) {
            if len > 70 {
                long.push(format!("{}:{line} {name} ({len} lines)", file.display()));
            }
        }
    }
    assert!(long.is_empty(), "functions over 70 lines: {long:#?}");
}

#[test]
fn the_function_finder_measures_a_known_shape() {
    let code = code_only("fn a() {\n    let s = \"}}}\";\n    if x { y }\n}\nfn b();\n");
    assert_eq!(functions(&code), vec![("a".to_owned(), 1, 4)]);
}

/// Every absolute module path `file` refers to: `crate::a::b…` in code, `super::…` resolved
/// against the file's module, and the paths inside `use` groups (`crate::a::{b, c::d}`).
fn references(file: &Path, code: &str) -> BTreeSet<Vec<String>> {
    let here = module_of(file);
    let mut out = BTreeSet::new();
    // Test modules sit at the end of a file and may use anything.
    let code = code.split("#[cfg(test)]").next().unwrap_or(code);
    let flat: String = code.split_whitespace().collect::<Vec<_>>().join(" ");
    let bytes: Vec<char> = flat.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let starts = |w: &str| flat[char_offset(&flat, i)..].starts_with(w);
        let boundary = i == 0
            || !(bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_' || bytes[i - 1] == ':');
        if boundary && (starts("crate::") || starts("super::")) {
            let (path, used) = path_at(&bytes[i..]);
            let mut base = here.clone();
            if path[0] == "crate" {
                base.clear();
            } else {
                base.pop();
            }
            let mut rest = path[1..].iter().peekable();
            while rest.peek().is_some_and(|s| s.as_str() == "super") {
                base.pop();
                rest.next();
            }
            for groups in expand(rest.cloned().collect()) {
                let mut full = base.clone();
                full.extend(groups);
                out.insert(full);
            }
            i += used;
        } else {
            i += 1;
        }
    }
    out
}

fn char_offset(s: &str, chars: usize) -> usize {
    s.char_indices().nth(chars).map_or(s.len(), |(o, _)| o)
}

/// The path starting at `c` (segments, with one `{…}` group kept as a single segment) and how
/// many chars it used.
fn path_at(c: &[char]) -> (Vec<String>, usize) {
    let mut segs = Vec::new();
    let mut i = 0;
    loop {
        if c.get(i) == Some(&'{') {
            let mut depth = 0;
            let start = i;
            while i < c.len() {
                match c[i] {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                i += 1;
                if depth == 0 {
                    break;
                }
            }
            segs.push(c[start..i].iter().collect());
            return (segs, i);
        }
        let start = i;
        while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
            i += 1;
        }
        segs.push(c[start..i].iter().collect());
        if c.get(i) == Some(&':') && c.get(i + 1) == Some(&':') {
            i += 2;
        } else {
            return (segs, i);
        }
    }
}

/// The paths a path with a trailing `{…}` group stands for.
fn expand(path: Vec<String>) -> Vec<Vec<String>> {
    let Some(last) = path.last().filter(|l| l.starts_with('{')) else {
        return vec![path];
    };
    let inner = &last[1..last.len() - 1];
    let head = &path[..path.len() - 1];
    let mut out = Vec::new();
    for item in split_top(inner) {
        let chars: Vec<char> = item.trim().chars().collect();
        if chars.is_empty() {
            continue;
        }
        let (sub, _) = path_at(&chars);
        for tail in expand(sub) {
            let mut p = head.to_vec();
            p.extend(tail.into_iter().filter(|s| s != "self"));
            out.push(p);
        }
    }
    out
}

/// `a, b::{c, d}, e` split on the commas outside braces.
fn split_top(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0);
    for ch in s.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    out.push(cur);
    out
}

#[test]
fn no_two_sibling_modules_depend_on_each_other() {
    // parent module → child → children it uses.
    let mut edges: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let modules: BTreeSet<Vec<String>> = rust_files(&src()).iter().map(|f| module_of(f)).collect();
    for file in rust_files(&src()) {
        let from = module_of(&file);
        for to in references(&file, &code_only(&read(&file))) {
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            let sibling = to[..(common + 1).min(to.len())].to_vec();
            if common < from.len() && common < to.len() && modules.contains(&sibling) {
                let parent = from[..common].to_vec();
                edges
                    .entry(parent)
                    .or_default()
                    .entry(from[common].clone())
                    .or_default()
                    .insert(to[common].clone());
            }
        }
    }
    let mut cycles = Vec::new();
    for (parent, graph) in &edges {
        if let Some(cycle) = find_cycle(graph) {
            cycles.push(format!(
                "in crate::{}: {}",
                parent.join("::"),
                cycle.join(" → ")
            ));
        }
    }
    assert!(cycles.is_empty(), "module cycles: {cycles:#?}");
}

/// A cycle of `graph`, if it has one (depth-first search).
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|s| s == n) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(n.to_owned());
            return Some(cycle);
        }
        if !done.insert(n.to_owned()) {
            return None;
        }
        stack.push(n.to_owned());
        for next in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(next, graph, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_cycle_finder_sees_a_cycle_through_a_third_module() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    assert_eq!(find_cycle(&g), None);
    g.entry("c".into()).or_default().insert("a".into());
    assert!(find_cycle(&g).is_some());
}
