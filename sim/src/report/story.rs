//! The story of the violating task: a compact table of the history entries about it (index,
//! time, host, kind, short payload), so a maintainer can read what happened in order.
//!
//! Contract: the task is the first violation's task, else the first task its entry is about;
//! with no such task (or a passing run) nothing but a note is written. At most
//! [`MAX_STORY_ROWS`] rows are listed, centred on the violating entry; the row of the
//! violating entry carries `id="story-violation"`. Batched store calls show only this task's
//! rows. All text is escaped.

use super::describe::{kind, secs, summary};
use super::escape::text;
use super::lanes::Lanes;
use crate::check::Verdict;
use crate::history::Entry;
use crate::plan::Plan;
use std::fmt::Write;

/// Most rows of the story table.
pub const MAX_STORY_ROWS: usize = 600;

/// The task whose story the report tells, if any.
pub fn task<'a>(verdict: &'a Verdict, entries: &'a [Entry], lanes: &'a Lanes) -> Option<&'a str> {
    let v = verdict.first()?;
    if let Some(t) = v.task.as_deref() {
        return Some(t);
    }
    let e = v.entry.and_then(|i| entries.get(i))?;
    lanes.tasks_of(e).into_iter().next()
}

/// Writes the story section.
pub fn render(out: &mut String, plan: &Plan, entries: &[Entry], verdict: &Verdict, lanes: &Lanes) {
    out.push_str("<section class=\"story\">");
    let Some(label) = task(verdict, entries, lanes) else {
        if verdict.passed() {
            out.push_str(
                "<h2>Story</h2><p class=\"note\">No violation: nothing to tell.</p></section>",
            );
        } else {
            out.push_str(
                "<h2>Story</h2><p class=\"note\">The first violation names no task.</p></section>",
            );
        }
        return;
    };
    let hit = verdict.first().and_then(|v| v.entry);
    let about: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| lanes.tasks_of(e).contains(label))
        .map(|(i, _)| i)
        .collect();
    let _ = write!(
        out,
        "<h2>History of {} ({} entries)</h2>",
        text(label),
        about.len()
    );
    let (from, to) = window(&about, hit);
    if from > 0 {
        let _ = write!(
            out,
            "<p class=\"note\">{from} earlier entries not shown.</p>"
        );
    }
    let keep = |id: &str| lanes.id_is(id, label);
    table(out, plan, entries, &about[from..to], hit, &keep);
    if to < about.len() {
        let _ = write!(
            out,
            "<p class=\"note\">{} later entries not shown.</p>",
            about.len() - to
        );
    }
    if let Some(i) = hit.filter(|i| !about.contains(i)) {
        if let Some(e) = entries.get(i) {
            let _ = write!(
                out,
                "<p class=\"note\">The violating entry #{i} ({}, {} s) is not about this task: {}</p>",
                text(&kind(&e.event)),
                secs(e.at_us),
                text(&summary(plan, &e.event, &|_| true))
            );
        }
    }
    out.push_str("</section>");
}

/// The story table: one row per entry of `rows`, the violating entry `hit` highlighted;
/// batched store calls list only the rows `keep` accepts.
fn table(
    out: &mut String,
    plan: &Plan,
    entries: &[Entry],
    rows: &[usize],
    hit: Option<usize>,
    keep: &dyn Fn(&str) -> bool,
) {
    out.push_str("<table class=\"story\"><thead><tr><th>#</th><th>time (s)</th><th>host</th><th>kind</th><th>payload</th></tr></thead><tbody>");
    for &i in rows {
        let Some(e) = entries.get(i) else { continue };
        let attrs = if Some(i) == hit {
            " id=\"story-violation\" class=\"hit\""
        } else {
            ""
        };
        let _ = write!(
            out,
            "<tr{attrs}><td>{i}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            secs(e.at_us),
            text(&e.host),
            text(&kind(&e.event)),
            text(&summary(plan, &e.event, keep))
        );
    }
    out.push_str("</tbody></table>");
}

/// The slice `[from, to)` of `about` to list: all of it when short enough, else
/// [`MAX_STORY_ROWS`] rows centred on the violating entry (or the first rows).
fn window(about: &[usize], hit: Option<usize>) -> (usize, usize) {
    if about.len() <= MAX_STORY_ROWS {
        return (0, about.len());
    }
    let centre = hit.map(|h| about.partition_point(|&i| i < h)).unwrap_or(0);
    let from = centre
        .saturating_sub(MAX_STORY_ROWS / 2)
        .min(about.len() - MAX_STORY_ROWS);
    (from, from + MAX_STORY_ROWS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_centres_on_the_violation() {
        let about: Vec<usize> = (0..2_000).map(|i| i * 2).collect();
        assert_eq!(window(&about[..10], Some(4)), (0, 10));
        let (from, to) = window(&about, Some(2_000));
        assert_eq!(to - from, MAX_STORY_ROWS);
        assert!(about[from] < 2_000 && 2_000 < about[to - 1]);
        assert_eq!(window(&about, Some(0)), (0, MAX_STORY_ROWS));
        assert_eq!(
            window(&about, Some(10_000)),
            (2_000 - MAX_STORY_ROWS, 2_000)
        );
    }
}
