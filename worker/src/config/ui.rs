//! `[ui]` checked: whether the background-task panel is served, which pages may frame it, the
//! session cookie's `Secure` flag and the session lifetime.
//!
//! A `frame_ancestors` entry is `'self'` or an origin, `http(s)://host[:port]`, whose host may
//! start with `*.` (CSP's wildcard for subdomains): nothing that could end the directive or
//! add another (no spaces, `;`, `,` or quotes). An empty list keeps `frame-ancestors 'none'`.

use super::file::UiSection;
use super::load::ConfigError;
use super::settings::in_range;
use std::time::Duration;

/// `ui.frame_ancestors` entries, at most.
const MAX_FRAME_ANCESTORS: usize = 20;
/// Characters of one `ui.frame_ancestors` entry, at most.
const MAX_ANCESTOR_LEN: usize = 253 + 20;
/// `ui.session_minutes`, from 5 minutes to a week.
const SESSION_MINUTES_RANGE: (u64, u64) = (5, 7 * 24 * 60);

/// The panel as the worker serves it (`[ui]` with `enabled = true`).
#[derive(Clone, Debug)]
pub struct Ui {
    /// The CSP `frame-ancestors` sources: `'none'` when no entry is configured.
    pub frame_ancestors: String,
    /// The session cookie carries `Secure`.
    pub secure_cookie: bool,
    /// How long a browser session lasts after the token exchange.
    pub session_ttl: Duration,
}

impl Ui {
    /// Checks `section` (also when it is disabled); `Ok(None)` when the panel is not served.
    pub(super) fn check(section: &UiSection) -> Result<Option<Ui>, ConfigError> {
        let frame_ancestors = frame_ancestors(&section.frame_ancestors)?;
        let minutes = in_range(
            "ui.session_minutes",
            section.session_minutes,
            SESSION_MINUTES_RANGE.0,
            SESSION_MINUTES_RANGE.1,
        )?;
        Ok(section.enabled.then_some(Ui {
            frame_ancestors,
            secure_cookie: section.secure_cookie,
            session_ttl: Duration::from_secs(minutes * 60),
        }))
    }
}

fn frame_ancestors(entries: &[String]) -> Result<String, ConfigError> {
    if entries.len() > MAX_FRAME_ANCESTORS {
        return Err(ConfigError::new(
            "ui.frame_ancestors",
            format!("at most {MAX_FRAME_ANCESTORS} entries"),
        ));
    }
    for (i, entry) in entries.iter().enumerate() {
        if !valid_ancestor(entry) {
            return Err(ConfigError::new(
                format!("ui.frame_ancestors[{i}]"),
                "must be 'self' or an origin such as https://chat.example.com (host may start \
                 with *.)",
            ));
        }
    }
    if entries.is_empty() {
        return Ok("'none'".to_owned());
    }
    Ok(entries.join(" "))
}

/// `'self'`, or `http(s)://host[:port]` with a host of letters, digits, `-` and `.` (an
/// optional leading `*.`) and a numeric port.
fn valid_ancestor(entry: &str) -> bool {
    if entry == "'self'" {
        return true;
    }
    if entry.len() > MAX_ANCESTOR_LEN {
        return false;
    }
    let Some(rest) = entry
        .strip_prefix("https://")
        .or_else(|| entry.strip_prefix("http://"))
    else {
        return false;
    };
    let (host, port) = match rest.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (rest, None),
    };
    let host = host.strip_prefix("*.").unwrap_or(host);
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    host_ok && port_ok
}

#[cfg(test)]
mod tests {
    use crate::config::test_support::check_with as check;

    #[test]
    fn the_panel_is_off_by_default_and_on_with_safe_defaults() {
        let s = check("").unwrap_or_else(|e| panic!("{e}"));
        assert!(s.ui.is_none());
        let s = check("[ui]\nenabled = true").unwrap_or_else(|e| panic!("{e}"));
        let ui = s.ui.unwrap_or_else(|| panic!("enabled"));
        assert_eq!(ui.frame_ancestors, "'none'");
        assert!(ui.secure_cookie);
        assert_eq!(ui.session_ttl.as_secs(), 480 * 60);
    }

    #[test]
    fn the_keys_are_read() {
        let s = check(
            "[ui]\nenabled = true\nframe_ancestors = [\"'self'\", \"https://*.chat.example:8443\"]\n\
             secure_cookie = false\nsession_minutes = 60",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let ui = s.ui.unwrap_or_else(|| panic!("enabled"));
        assert_eq!(ui.frame_ancestors, "'self' https://*.chat.example:8443");
        assert!(!ui.secure_cookie);
        assert_eq!(ui.session_ttl.as_secs(), 3600);
    }

    #[test]
    fn a_bad_ancestor_or_lifetime_is_refused_with_its_key_even_when_disabled() {
        for (extra, place) in [
            ("frame_ancestors = [\"*\"]", "ui.frame_ancestors[0]"),
            ("frame_ancestors = [\"'none'\"]", "ui.frame_ancestors[0]"),
            (
                "frame_ancestors = [\"https://a.example; script-src *\"]",
                "ui.frame_ancestors[0]",
            ),
            (
                "frame_ancestors = [\"'self'\", \"https://a b\"]",
                "ui.frame_ancestors[1]",
            ),
            (
                "frame_ancestors = [\"https://a:x\"]",
                "ui.frame_ancestors[0]",
            ),
            ("session_minutes = 1", "ui.session_minutes"),
        ] {
            let e = check(&format!("[ui]\n{extra}")).err().unwrap_or_default();
            assert!(e.contains(place), "{extra}: {e}");
        }
    }
}
