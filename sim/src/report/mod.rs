//! The timeline report: one self-contained HTML file that tells the story of one run.
//!
//! [`render`] lays out the page: the checker's verdict and the run's facts at the top
//! (`verdict`), a legend and the timeline — one lane per host and per task, with the plan's
//! faults overlaid and the first violation highlighted (`timeline`) — and the history of the
//! violating task as a table (`story`).
//!
//! Contract of the page:
//! - Self-contained: inline CSS and inline SVG only; no script, no link, no external asset, no
//!   URL of any kind (inline SVG needs no namespace URL in HTML5).
//! - XHTML-compatible markup: every element closed, every attribute quoted, so an XML parser
//!   (or a tag-balance check) accepts it after the doctype.
//! - Every text taken from the plan, the history, the verdict or the hash is escaped
//!   (`escape`): no raw `<`, no control characters.
//! - Readable for 50 tasks over 10 minutes, and small: output grows with the distinct things
//!   that happened (status changes, version moves, leases), not with raw entry counts.
//! - Deterministic: the same inputs give the same bytes.

mod activity;
mod bands;
mod describe;
mod escape;
mod geometry;
mod labels;
mod lanes;
mod leases;
mod legend;
mod marks;
mod status;
mod story;
mod timeline;
mod verdict;
mod walk;

use crate::check::Verdict;
use crate::history::Entry;
use crate::plan::Plan;
use std::fmt::Write;

/// Renders the report of a run of `plan` that recorded `entries`, was judged `verdict`, and
/// whose history hashes to `hash`, as one self-contained HTML5 page.
pub fn render(plan: &Plan, entries: &[Entry], verdict: &Verdict, hash: &str) -> String {
    let lanes = lanes::Lanes::build(plan, entries, verdict);
    let mut out = String::with_capacity(64 * 1024 + entries.len() * 160);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>");
    let _ = write!(
        out,
        "<title>tasklatch sim · seed {} · {}</title><style>{CSS}</style></head><body>",
        plan.seed,
        if verdict.passed() { "PASSED" } else { "FAILED" }
    );
    verdict::render(&mut out, plan, entries, verdict, hash);

    out.push_str("<section class=\"timeline\"><h2>Timeline</h2>");
    out.push_str(
        "<p class=\"note\">x = simulated time. Host lanes show faults (bands), crashes, restarts, \
         faults taking effect, dropped replies and activity; task lanes show the remote status \
         served (top strip), leases from grant to release or expiry (middle), and events, \
         versions, launches, runs and cancels (bottom). Hover any mark for details.</p>",
    );
    if lanes.omitted_tasks > 0 {
        let _ = write!(
            out,
            "<p class=\"note\">{} task lanes not drawn (at most {} are).</p>",
            lanes.omitted_tasks,
            lanes::MAX_TASK_LANES
        );
    }
    legend::render(&mut out);
    timeline::render(&mut out, plan, entries, verdict, &lanes);
    out.push_str("</section>");

    story::render(&mut out, plan, entries, verdict, &lanes);
    out.push_str(
        "<footer>Written by tasklatch-sim; replay the seed to regenerate.</footer></body></html>\n",
    );
    out
}

/// The page's style sheet (no `<` or `&` inside, so it is also valid XML text).
const CSS: &str = "
body{font:13px/1.4 system-ui,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:18px;margin:0 0 6px}h2{font-size:15px;margin:18px 0 6px}
.verdict{font-size:16px;font-weight:700;padding:6px 10px;border-radius:4px;display:inline-block;margin:4px 0}
.pass{background:#e3f4e7;color:#1d6b33}.fail{background:#fde2e0;color:#a5281b}
table{border-collapse:collapse;font-size:12px}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}
table.violations tr.first td{background:#fff0ee}
td.inv{font-weight:700;color:#a5281b}
dl{display:flex;flex-wrap:wrap;gap:4px 18px;margin:8px 0}
dl div{display:flex;gap:6px}dt{color:#666}dd{margin:0;font-weight:600}
#history-hash{font-family:ui-monospace,monospace;font-weight:400;word-break:break-all}
.note{color:#666;font-size:12px;margin:4px 0}
details{margin:6px 0}
.tl{display:flex;align-items:flex-start;border:1px solid #ccc}
.scroll{overflow-x:auto;flex:1}
svg text{font:10px system-ui,sans-serif}
.labels{flex:none;background:#fff;border-right:1px solid #ccc}
.lab{text-anchor:end;fill:#333}.host-t{font-weight:700}.vl-t{font-weight:700;fill:#c0392b}
.bg{fill:#fff}.bg.even{fill:#f8f8f8}.bg.host{fill:#eef2f8}.bg.vl{fill:#ffe1dd}
.sep{stroke:#888;stroke-width:1}
.grid{stroke:#000;stroke-opacity:.07;fill:none}
.tick{fill:#555;font-size:9px}
.ph{stroke:#444;stroke-dasharray:4 3;stroke-width:1}.ph-t{fill:#444;font-size:9px;font-style:italic}
.band{stroke:none}
.fc{fill:rgba(192,57,43,.28)}.fp{fill:rgba(142,68,173,.24)}.fn{fill:rgba(230,126,34,.26)}
.fl{fill:rgba(127,140,141,.18)}.fk{fill:rgba(22,160,133,.26)}.fr{fill:rgba(52,152,219,.24)}
.fg{fill:rgba(241,196,15,.32)}
.band-t{font-size:8px;fill:#333;fill-opacity:.85}
.stall{fill:rgba(142,68,173,.7)}
.a1{fill:#9aa5b1;fill-opacity:.35}.a2{fill:#6c7a89;fill-opacity:.55}.a3{fill:#34495e;fill-opacity:.8}
.st-working{fill:#4a90d9}.st-input_required{fill:#e0a800}.st-completed{fill:#2e9d4f}
.st-failed{fill:#d9534f}.st-cancelled{fill:#8a8a8a}.st-submitted{fill:#b8c7d9}.st-other{fill:#9b59b6}
.lp{fill:#5b7fbf}.ln{fill:#8e5bbf}.lc{fill:#d98a2b}
.lx{fill-opacity:.45;stroke:#333;stroke-width:.6;stroke-dasharray:2 1}.lz{fill:#e67e22}
.ver{fill:#222}.nv{fill:#9a9a9a}.ref{fill:#c0392b}
.sub{fill:#4a90d9}.cs{fill:#d98a2b}.ca{fill:#f0c080}.cr{fill:#b36b00}.rq{fill:#7a4fb3}.as{fill:#2b9d8f}.ra{fill:#1d6b61}.rc{fill:#d98a2b}
.ls{fill:#2e9d4f}.lb{fill:#e0a800}.lg{fill:#7f8c8d}.le{fill:#c0392b}
.rs{fill:#2e9d4f}.rf{fill:#c0392b}.ro{fill:#95a5a6}
.rerr{fill:#c0392b}.nx{fill:#95a5a6}.ex{fill:#9b59b6}.err{fill:#c0392b}
.crash{fill:#c0392b}.restart{fill:#2e9d4f}.up{fill:#2e9d4f}.ff{fill:#111}.drop{fill:#e67e22}
.thr{fill:#7f8c8d}.thd{fill:#7f8c8d}.lst{fill:#b0b0b0}
.vt{font-size:8px;fill:#222}
.vline{stroke:#e0141e;stroke-width:2;stroke-opacity:.85}
.vmark{fill:none;stroke:#e0141e;stroke-width:2.5}
.legend{display:block;margin:4px 0 8px}.leg-t{font-size:11px;fill:#333}
table.story td:nth-child(5){font-family:ui-monospace,monospace;font-size:11px}
table.story tr.hit td{background:#ffe1dd;font-weight:700}
footer{margin-top:18px;color:#888;font-size:11px}
";
