//! The timeline report of real runs: well-formed, self-contained markup with a lane per host
//! and per task, the verdict and the hash at the top, the violation highlighted, hostile text
//! escaped, and a small file for 50 tasks.

use tasklatch_sim::check::{Invariant, Verdict, Violation};
use tasklatch_sim::history::{Entry, LaunchAnswer, Seen};
use tasklatch_sim::plan::sim_policy;
use tasklatch_sim::plan::{generate, Knobs};
use tasklatch_sim::plan::{Plan, UserAction};
use tasklatch_sim::report::render;
use tasklatch_sim::run::Backend;
use tasklatch_sim::run::{run, RunOptions, RunOutcome};

fn simulate(seed: u64, knobs: &Knobs) -> (Plan, RunOutcome) {
    let plan = generate(seed, knobs);
    let outcome = run(&plan, Backend::memory(sim_policy()), &RunOptions::default());
    (plan, outcome)
}

/// Checks that `html` is well-formed XHTML-compatible markup after its doctype: balanced,
/// properly nested tags, quoted attributes without duplicates or raw `<`, only known entities,
/// one root element, no control characters. Returns the number of elements.
fn well_formed(html: &str) -> Result<usize, String> {
    let rest = html.strip_prefix("<!DOCTYPE html>").ok_or("no doctype")?;
    if let Some(c) = rest
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
    {
        return Err(format!("control character U+{:04X}", c as u32));
    }
    let b = rest.as_bytes();
    let mut stack: Vec<&str> = Vec::new();
    let (mut i, mut elements, mut roots) = (0usize, 0usize, 0usize);
    let at = |i: usize| {
        format!(
            "at byte {i}: …{}…",
            &rest[i.saturating_sub(60)..(i + 60).min(rest.len())].replace('\n', " ")
        )
    };
    let name_end = |from: usize| {
        from + b[from..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b':' | b'.'))
            .count()
    };
    while i < b.len() {
        match b[i] {
            b'&' => i = entity(rest, i).map_err(|e| format!("{e} {}", at(i)))?,
            b'<' if rest[i..].starts_with("<!--") => {
                i = rest[i..]
                    .find("-->")
                    .map(|j| i + j + 3)
                    .ok_or_else(|| format!("unclosed comment {}", at(i)))?
            }
            b'<' if b.get(i + 1) == Some(&b'/') => {
                let end = name_end(i + 2);
                let name = &rest[i + 2..end];
                if b.get(end) != Some(&b'>') {
                    return Err(format!("bad end tag {}", at(i)));
                }
                match stack.pop() {
                    Some(open) if open == name => {}
                    other => return Err(format!("</{name}> closes {other:?} {}", at(i))),
                }
                i = end + 1;
            }
            b'<' => {
                let end = name_end(i + 1);
                let name = &rest[i + 1..end];
                if name.is_empty() || !name.as_bytes()[0].is_ascii_alphabetic() {
                    return Err(format!("raw '<' in text {}", at(i)));
                }
                if stack.is_empty() {
                    roots += 1;
                }
                elements += 1;
                let mut j = end;
                let mut attrs: Vec<&str> = Vec::new();
                loop {
                    while b.get(j).is_some_and(|c| c.is_ascii_whitespace()) {
                        j += 1;
                    }
                    match b.get(j) {
                        Some(b'>') => {
                            stack.push(name);
                            j += 1;
                            break;
                        }
                        Some(b'/') if b.get(j + 1) == Some(&b'>') => {
                            j += 2;
                            break;
                        }
                        Some(_) => {
                            let a_end = name_end(j);
                            let attr = &rest[j..a_end];
                            if attr.is_empty()
                                || b.get(a_end) != Some(&b'=')
                                || b.get(a_end + 1) != Some(&b'"')
                            {
                                return Err(format!(
                                    "unquoted or malformed attribute in <{name}> {}",
                                    at(j)
                                ));
                            }
                            if attrs.contains(&attr) {
                                return Err(format!("duplicate attribute {attr} {}", at(j)));
                            }
                            attrs.push(attr);
                            let mut k = a_end + 2;
                            while b.get(k).is_some_and(|c| *c != b'"') {
                                match b[k] {
                                    b'<' => return Err(format!("raw '<' in attribute {}", at(k))),
                                    b'&' => {
                                        k = entity(rest, k).map_err(|e| format!("{e} {}", at(k)))?
                                    }
                                    _ => k += 1,
                                }
                            }
                            if k >= b.len() {
                                return Err(format!("unterminated attribute {}", at(j)));
                            }
                            j = k + 1;
                        }
                        None => return Err(format!("unterminated tag {}", at(i))),
                    }
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    if !stack.is_empty() {
        return Err(format!("unclosed elements: {stack:?}"));
    }
    if roots != 1 {
        return Err(format!("{roots} root elements"));
    }
    Ok(elements)
}

/// The byte after a well-formed entity starting at `i`.
fn entity(s: &str, i: usize) -> Result<usize, String> {
    let end = s[i..].find(';').filter(|&n| n <= 10).ok_or("bare '&'")?;
    let name = &s[i + 1..i + end];
    let ok = matches!(name, "amp" | "lt" | "gt" | "quot" | "apos")
        || name
            .strip_prefix("#x")
            .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
        || name
            .strip_prefix('#')
            .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
    if ok {
        Ok(i + end + 1)
    } else {
        Err(format!("unknown entity &{name};"))
    }
}

fn assert_self_contained(html: &str) {
    let lower = html.to_lowercase();
    for banned in [
        "<script", "http://", "https://", "<link", "<iframe", "<img", "@import", "url(",
    ] {
        assert!(!lower.contains(banned), "the page contains {banned:?}");
    }
}

fn assert_lanes(html: &str, plan: &Plan) {
    let mut hosts = vec![
        "db".to_owned(),
        "mcp".to_owned(),
        "gateway".to_owned(),
        "user".to_owned(),
    ];
    hosts.extend((0..plan.workers).map(|w| format!("worker-{w}")));
    for lane in hosts.iter().chain(
        plan.tasks
            .iter()
            .map(|t| format!("task-{}", t.n))
            .collect::<Vec<_>>()
            .iter(),
    ) {
        assert!(
            html.contains(&format!("id=\"lane-{lane}\"")),
            "no lane {lane}"
        );
        assert!(
            html.contains(&format!(">{lane}<title>")),
            "no label for lane {lane}"
        );
    }
}

#[test]
fn a_real_run_renders_a_well_formed_self_contained_page() {
    let (plan, out) = simulate(3, &Knobs::default());
    let html = render(&plan, &out.entries, &out.verdict, &out.hash);
    let elements = well_formed(&html).unwrap_or_else(|e| panic!("malformed page: {e}"));
    assert!(elements > 100, "only {elements} elements");
    assert_self_contained(&html);
    assert_lanes(&html, &plan);
    let word = if out.verdict.passed() {
        "PASSED"
    } else {
        "FAILED"
    };
    assert!(html.contains(&format!(
        "id=\"verdict\" class=\"verdict {}\">{word}",
        if out.verdict.passed() { "pass" } else { "fail" }
    )));
    assert!(html.contains(&format!("<dd id=\"history-hash\">{}</dd>", out.hash)));
    assert!(html.contains(&format!("seed {}", plan.seed)));
    assert!(
        html.contains("class=\"axis\"") && html.contains(">60 s<"),
        "no time axis in seconds"
    );
    if !plan.faults.is_empty() {
        assert!(html.contains("class=\"band "), "no fault bands");
    }
    assert!(html.contains("class=\"st-"), "no remote status segments");
    assert!(html.contains("class=\"lp"), "no poll leases");
    assert_eq!(
        html,
        render(&plan, &out.entries, &out.verdict, &out.hash),
        "rendering is not deterministic"
    );
}

#[test]
fn a_synthetic_violation_is_highlighted_and_told() {
    let (plan, out) = simulate(5, &Knobs::default());
    let (index, entry) = out
        .entries
        .iter()
        .enumerate()
        .find(|(_, e)| e.task.is_some() && matches!(e.event, Seen::LaunchServed { .. }))
        .or_else(|| {
            out.entries
                .iter()
                .enumerate()
                .find(|(_, e)| e.task.is_some())
        })
        .expect("an entry about a task");
    let task = entry.task.clone().expect("a task");
    let verdict = Verdict {
        violations: vec![
            Violation {
                invariant: Invariant::Duplicated,
                task: Some(task.clone()),
                entry: Some(index),
                detail: "key yielded 2 runs <b>bold?</b>".into(),
            },
            Violation {
                invariant: Invariant::Live,
                task: None,
                entry: None,
                detail: "not settled 600 s after the faults stopped".into(),
            },
        ],
        counts: Default::default(),
    };
    let html = render(&plan, &out.entries, &verdict, &out.hash);
    well_formed(&html).unwrap_or_else(|e| panic!("malformed page: {e}"));
    assert_self_contained(&html);
    assert!(html.contains("class=\"verdict fail\">FAILED · 2 violations"));
    assert!(html.contains("id=\"violation-row-0\""), "no violation row");
    assert!(
        html.contains("key yielded 2 runs &lt;b&gt;bold?&lt;/b&gt;"),
        "violation detail missing or unescaped"
    );
    assert!(html.contains(">duplicated<") && html.contains(">live<"));
    assert!(
        html.contains(&format!("<td>{index}</td>")),
        "violation entry index missing"
    );
    assert!(html.contains("id=\"violation-line\""), "no vertical line");
    assert!(html.contains("id=\"violation-0\""), "no marker on the lane");
    assert!(
        !html.contains("id=\"violation-1\""),
        "a violation without an entry has no marker"
    );
    assert!(
        html.contains(&format!(
            "id=\"lane-{task}\" data-lane=\"{task}\" x=\"0\" y=\""
        )),
        "no lane for {task}"
    );
    let lane_rect = html
        .split(&format!("id=\"lane-{task}\""))
        .nth(1)
        .and_then(|s| s.split("/>").next())
        .unwrap_or("");
    assert!(
        lane_rect.contains("class=\"bg vl\""),
        "the violating lane is not highlighted: {lane_rect}"
    );
    assert!(
        html.contains(&format!("<h2>History of {task} (")),
        "no story table"
    );
    assert!(
        html.contains("id=\"story-violation\""),
        "the violating entry is not marked in the table"
    );
}

#[test]
fn hostile_history_text_is_escaped() {
    let (plan, mut out) = simulate(8, &Knobs::default());
    let task = format!("task-{}", plan.tasks.first().map_or(0, |t| t.n));
    let hostile = "</svg><script>alert(1)</script>\0\u{7}\u{202E}<!-- \" ' &amp;";
    let at_us = out.entries.last().map_or(0, |e| e.at_us);
    out.entries.push(Entry {
        at_us,
        host: "gateway".into(),
        task: Some(task.clone()),
        event: Seen::LaunchServed {
            key: format!("task:{hostile}:1:0"),
            owner: hostile.into(),
            thread: hostile.into(),
            prompt: hostile.into(),
            answer: LaunchAnswer::Started {
                run: hostile.into(),
            },
            created_run: Some(hostile.into()),
            dropped: false,
        },
    });
    out.entries.push(Entry {
        at_us,
        host: format!("worker-{hostile}"),
        task: Some(format!("task-{hostile}")),
        event: Seen::Exercised {
            what: tasklatch_sim::plan::WorkloadMark::HostileTaskName.into(),
        },
    });
    let index = out.entries.len() - 2;
    let verdict = Verdict {
        violations: vec![Violation {
            invariant: Invariant::Unexpected,
            task: Some(task),
            entry: Some(index),
            detail: hostile.into(),
        }],
        counts: Default::default(),
    };
    let html = render(&plan, &out.entries, &verdict, hostile);
    well_formed(&html).unwrap_or_else(|e| panic!("malformed page: {e}"));
    assert_self_contained(&html);
    assert!(!html.contains("</svg><script>"));
    assert!(
        html.contains("&lt;/svg&gt;&lt;script&gt;alert(1)&lt;/script&gt;"),
        "hostile text not shown escaped"
    );
    assert!(!html.contains('\0') && !html.contains('\u{7}') && !html.contains('\u{202E}'));
    assert!(
        html.contains("&amp;amp;"),
        "an entity in the data must be escaped, not passed through"
    );
}

#[test]
fn fifty_tasks_render_small() {
    let (plan, out) = simulate(
        11,
        &Knobs {
            workers: Some(4),
            tasks: Some(50),
            ..Knobs::default()
        },
    );
    let html = render(&plan, &out.entries, &out.verdict, &out.hash);
    well_formed(&html).unwrap_or_else(|e| panic!("malformed page: {e}"));
    assert_self_contained(&html);
    assert_lanes(&html, &plan);
    eprintln!("{} entries → {} bytes", out.entries.len(), html.len());
    assert!(
        html.len() < 3_000_000,
        "{} bytes for {} entries",
        html.len(),
        out.entries.len()
    );
}

#[test]
fn ten_minutes_of_fifty_tasks_stay_readable_and_small() {
    let mut plan = generate(
        21,
        &Knobs {
            workers: Some(4),
            tasks: Some(50),
            ..Knobs::default()
        },
    );
    stretch(&mut plan, 600_000);
    plan.check().expect("the stretched plan is valid");
    let out = run(&plan, Backend::memory(sim_policy()), &RunOptions::default());
    let html = render(&plan, &out.entries, &out.verdict, &out.hash);
    well_formed(&html).unwrap_or_else(|e| panic!("malformed page: {e}"));
    assert_lanes(&html, &plan);
    let last_s = out.entries.iter().map(|e| e.at_us).max().unwrap_or(0) as f64 / 1e6;
    let width: f64 = html
        .split("<svg class=\"plot\" width=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .and_then(|w| w.parse().ok())
        .expect("a plot width");
    assert!(last_s >= 600.0, "the run lasted only {last_s} s");
    assert!(
        (last_s * 4.0..=last_s * 4.0 + 100.0).contains(&width),
        "{width} px for {last_s} s: not 1 px per 250 ms"
    );
    eprintln!(
        "{} entries over {last_s:.0} s → {} bytes, plot {width} px wide",
        out.entries.len(),
        html.len()
    );
    assert!(
        html.len() < 2_000_000,
        "{} bytes for {} entries",
        html.len(),
        out.entries.len()
    );
}

/// Stretches every time of a plan so its chaos phase lasts `chaos_ms`.
fn stretch(plan: &mut Plan, chaos_ms: u64) {
    let old = plan.chaos_ms;
    let k = |t: &mut u64| *t = *t * chaos_ms / old;
    for t in &mut plan.tasks {
        k(&mut t.submit_at_ms);
        for s in &mut t.steps {
            k(&mut s.after_ms);
        }
        if let Some(q) = &mut t.quirk {
            k(&mut q.after_ms);
        }
    }
    for a in &mut plan.user {
        match a {
            UserAction::Cancel { at_ms, .. }
            | UserAction::ForeignCancel { at_ms, .. }
            | UserAction::DeleteThread { at_ms, .. }
            | UserAction::List { at_ms, .. }
            | UserAction::Requeue { at_ms, .. }
            | UserAction::Answer { at_ms, .. } => k(at_ms),
        }
    }
    for f in &mut plan.faults {
        k(&mut f.at_ms);
        k(&mut f.for_ms);
    }
    plan.chaos_ms = chaos_ms;
}

#[test]
fn the_markup_check_rejects_broken_markup() {
    let page = |body: &str| format!("<!DOCTYPE html>\n<html><body>{body}</body></html>");
    assert!(well_formed(&page("<p class=\"a\">x &amp; y<br/></p>")).is_ok());
    for bad in [
        "<p>",
        "<p></b>",
        "a < b",
        "<p class=a></p>",
        "<p a=\"1\" a=\"2\"></p>",
        "&nbsp;",
        "a & b",
        "<p title=\"<\"></p>",
        "\u{0}",
    ] {
        assert!(well_formed(&page(bad)).is_err(), "accepted {bad:?}");
    }
    assert!(
        well_formed("<!DOCTYPE html>\n<a></a><b></b>").is_err(),
        "two roots accepted"
    );
}
