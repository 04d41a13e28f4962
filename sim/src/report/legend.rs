//! The legend: every mark, bar and band the timeline uses, with what it means.

use super::marks::{defs, Glyph};
use std::fmt::Write;

/// Every legend entry: CSS class, glyph (none for a bar, band or ring), meaning.
const ITEMS: [(&str, Option<Glyph>, &str); 33] = [
    ("st-working", None, "remote: working"),
    ("st-input_required", None, "remote: input required"),
    ("st-completed", None, "remote: completed"),
    ("st-failed", None, "remote: failed"),
    ("st-cancelled", None, "remote: cancelled"),
    ("st-other", None, "remote: other status"),
    ("lp", None, "poll lease"),
    ("ln", None, "notify lease"),
    ("lc", None, "cancel lease"),
    ("lp lx", None, "lease ran to expiry"),
    ("ver", Some(Glyph::Dia), "new event version"),
    (
        "nv",
        Some(Glyph::Dia),
        "notified version / notify status moved",
    ),
    ("ref", Some(Glyph::Cross), "store refused a write (fencing)"),
    ("sub", Some(Glyph::Square), "submit"),
    ("ls", Some(Glyph::Tri), "launch: run started"),
    ("lb", Some(Glyph::Tri), "launch: 409 busy"),
    ("lg", Some(Glyph::Tri), "launch: 404 gone"),
    ("le", Some(Glyph::Tri), "launch: error"),
    ("rs", Some(Glyph::Dot), "run succeeded"),
    (
        "rf",
        Some(Glyph::Dot),
        "run failed / timed out / interrupted",
    ),
    ("cs", Some(Glyph::Square), "user cancel sent"),
    ("cr", Some(Glyph::Square), "cancel recorded by the store"),
    (
        "rq",
        Some(Glyph::Square),
        "dead letter requeued by an operator",
    ),
    ("rc", Some(Glyph::Cross), "remote cancel served"),
    ("as", Some(Glyph::Square), "user answer sent"),
    (
        "ra",
        Some(Glyph::Square),
        "answer taken by the remote server",
    ),
    ("rerr", Some(Glyph::Tick), "remote error / unknown task"),
    ("crash", Some(Glyph::Cross), "worker crash"),
    ("up", Some(Glyph::Up), "host (re)started"),
    ("ff", Some(Glyph::Tick), "fault took effect"),
    ("drop", Some(Glyph::Tick), "reply dropped after commit"),
    ("band fn", None, "fault window (band)"),
    ("vmark", None, "violation"),
];

/// The legend: every mark and band, with what it means.
pub fn render(out: &mut String) {
    const PER_ROW: usize = 5;
    const COL_W: f64 = 236.0;
    let rows = ITEMS.len().div_ceil(PER_ROW);
    let (w, h) = (COL_W * PER_ROW as f64, rows as f64 * 18.0 + 4.0);
    let _ = write!(
        out,
        "<svg class=\"legend\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\">"
    );
    defs(out, "l");
    for (i, (class, glyph, what)) in ITEMS.iter().enumerate() {
        let x = (i % PER_ROW) as f64 * COL_W + 8.0;
        let y = (i / PER_ROW) as f64 * 18.0 + 12.0;
        match (glyph, *class) {
            (Some(g), _) => {
                let _ = write!(
                    out,
                    "<use href=\"#l{}\" x=\"{x:.0}\" y=\"{:.0}\" class=\"{class}\"/>",
                    g.id(),
                    y - 3.0
                );
            }
            (None, "vmark") => {
                let _ = write!(
                    out,
                    "<circle cx=\"{x:.0}\" cy=\"{:.0}\" r=\"6\" class=\"vmark\"/>",
                    y - 3.0
                );
            }
            (None, _) => {
                let _ = write!(
                    out,
                    "<rect x=\"{:.0}\" y=\"{:.0}\" width=\"14\" height=\"6\" class=\"{class}\"/>",
                    x - 7.0,
                    y - 6.0
                );
            }
        }
        let _ = write!(
            out,
            "<text x=\"{:.0}\" y=\"{y:.0}\" class=\"leg-t\">{what}</text>",
            x + 12.0
        );
    }
    out.push_str("</svg>");
}
