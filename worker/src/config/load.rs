//! Reading the file: TOML, then the environment overrides, then the checks of [`Settings`].
//!
//! Environment overrides (secrets belong in the environment, not in a file in a repository):
//! - [`DATABASE_URL_ENV`] (`TASKLATCH_DATABASE_URL`) replaces `database.url`;
//! - any string value written `"env:NAME"` is replaced by the variable `NAME` — for header
//!   values (`servers.<id>.headers.<name>`, `agent_server.headers.<name>`), token hashes, the
//!   database URL, or anything else. `NAME` must be upper-case letters, digits and `_`, and set.
//!
//! Errors name the file, the line or the field; they never quote a value from the file or the
//! environment (serde's own messages quote values, so every quoted part is cut out of them).

use super::file::FileConfig;
use super::settings::Settings;
use std::path::Path;

/// The variable that replaces `database.url`.
pub const DATABASE_URL_ENV: &str = "TASKLATCH_DATABASE_URL";
/// The prefix of a value read from the environment.
pub const ENV_PREFIX: &str = "env:";
/// The largest configuration file read.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// A configuration that cannot be used: where, and why. Never holds a configured value.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("config: {place}: {reason}")]
pub struct ConfigError {
    /// The file, a line of it, or a dotted field path.
    pub place: String,
    /// What is wrong.
    pub reason: String,
}

impl ConfigError {
    /// An error about `place`.
    pub fn new(place: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError {
            place: place.into(),
            reason: reason.into(),
        }
    }
}

/// Reads, overrides and checks the file at `path`; `env` looks variables up (the process
/// environment in production: `|k| std::env::var(k).ok()`).
pub fn load(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Settings, ConfigError> {
    let place = path.display().to_string();
    let size = std::fs::metadata(path)
        .map_err(|e| ConfigError::new(&place, format!("cannot read: {}", e.kind())))?
        .len();
    if size > MAX_FILE_BYTES {
        return Err(ConfigError::new(
            &place,
            format!("larger than {MAX_FILE_BYTES} bytes"),
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::new(&place, format!("cannot read: {}", e.kind())))?;
    Settings::check(parse(&text, env)?)
}

/// Parses `text` and applies the environment overrides (no other checks).
pub fn parse(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<FileConfig, ConfigError> {
    let mut table: toml::Table = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        let place = line.map_or("config file".to_owned(), |l| format!("line {l}"));
        ConfigError::new(place, scrub(e.message()))
    })?;
    for (key, value) in table.iter_mut() {
        substitute(key, value, env)?;
    }
    if let Some(url) = env(DATABASE_URL_ENV) {
        let database = table
            .entry("database")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if let toml::Value::Table(t) = database {
            t.insert("url".into(), toml::Value::String(url));
        }
    }
    toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| ConfigError::new("config file", scrub(e.message())))
}

/// Replaces every `"env:NAME"` string under `value` (at dotted `path`) by the variable's value.
fn substitute(
    path: &str,
    value: &mut toml::Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), ConfigError> {
    match value {
        toml::Value::String(s) => {
            if let Some(name) = s.strip_prefix(ENV_PREFIX) {
                if !valid_env_name(name) {
                    return Err(ConfigError::new(
                        path,
                        "`env:` must be followed by a variable name (A-Z, 0-9, _)",
                    ));
                }
                *s = env(name).ok_or_else(|| {
                    ConfigError::new(path, format!("the environment variable {name} is not set"))
                })?;
            }
        }
        toml::Value::Table(t) => {
            for (k, v) in t.iter_mut() {
                substitute(&format!("{path}.{k}"), v, env)?;
            }
        }
        toml::Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                substitute(&format!("{path}[{i}]"), v, env)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn valid_env_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `message` with every quoted part replaced by `…`: serde quotes offending values in double
/// quotes (`string "…"`) or backticks (`unknown variant `…``), and a value may be a secret put
/// in the wrong field (an `env:` value substituted into an enum field). Kept: a backtick-quoted
/// name right after `field ` (a key of the file, not a value) and backtick-quoted parts after
/// `expected` (the accepted names, from the code).
fn scrub(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut chars = message.chars();
    while let Some(c) = chars.next() {
        if c != '"' && c != '`' {
            out.push(c);
            continue;
        }
        let quoted: String = chars.by_ref().take_while(|&q| q != c).collect();
        let named = c == '`' && (out.ends_with("field ") || out.contains("expected"));
        out.push(c);
        out.push_str(if named { &quoted } else { "…" });
        out.push(c);
    }
    out.trim().replace('\n', "; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
        [database]
        url = "postgres://u:PLANTED-DB-PASSWORD@127.0.0.1/db"
        [auth]
        tokens = [{ owner = "alice", sha256 = "env:ALICE_HASH" }]
        [servers.research]
        url = "http://127.0.0.1:1/mcp"
        headers = { Authorization = "env:RESEARCH_TOKEN" }
        [agent_server]
        base_url = "http://127.0.0.1:2"
        assistant_id = "agent"
    "#;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn env_values_replace_marked_strings_and_the_database_url() {
        let env = env_of(&[
            ("ALICE_HASH", "abc"),
            ("RESEARCH_TOKEN", "Bearer PLANTED-MCP"),
            (DATABASE_URL_ENV, "postgres://from-env/db"),
        ]);
        let c = parse(MINIMAL, &env).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.auth.tokens[0].sha256, "abc");
        assert_eq!(
            c.servers["research"].headers["Authorization"].expose(),
            "Bearer PLANTED-MCP"
        );
        assert_eq!(c.database.url.expose(), "postgres://from-env/db");
    }

    #[test]
    fn a_missing_variable_is_named_with_its_field() {
        let env = env_of(&[("ALICE_HASH", "abc")]);
        let e = parse(MINIMAL, &env).err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some(
                "config: servers.research.headers.Authorization: the environment variable \
                 RESEARCH_TOKEN is not set"
            )
        );
    }

    #[test]
    fn errors_never_quote_a_value() {
        let env = env_of(&[("ALICE_HASH", "abc"), ("RESEARCH_TOKEN", "t")]);
        let wrong_type = MINIMAL.replace(
            "[auth]",
            "[loops]\nlanes = \"PLANTED-IN-WRONG-FIELD\"\n[auth]",
        );
        let e = parse(&wrong_type, &env)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("lanes") || e.contains("invalid type"), "{e}");
        assert!(!e.contains("PLANTED"), "{e}");
        let broken = MINIMAL.replace("assistant_id = \"agent\"", "assistant_id = \"PLANTED");
        let e = parse(&broken, &env)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("config: line "), "{e}");
        assert!(!e.contains("PLANTED"), "{e}");
    }

    #[test]
    fn unknown_fields_are_refused() {
        let env = env_of(&[("ALICE_HASH", "abc"), ("RESEARCH_TOKEN", "t")]);
        let typo = MINIMAL.replace("[auth]", "[loops]\nlane = 2\n[auth]");
        let e = parse(&typo, &env)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("unknown field `lane`"), "{e}");
    }

    #[test]
    fn scrub_cuts_every_quoted_part() {
        assert_eq!(
            scrub("invalid type: string \"s3cr3t\", expected u32"),
            "invalid type: string \"…\", expected u32"
        );
        assert_eq!(scrub("a \"b\" c \"d"), "a \"…\" c \"…\"");
        assert_eq!(
            scrub("unknown variant `s3cr3t`, expected one of `auto`, `legacy`"),
            "unknown variant `…`, expected one of `auto`, `legacy`"
        );
        assert_eq!(
            scrub("invalid type: character `x`, expected a string"),
            "invalid type: character `…`, expected a string"
        );
        assert_eq!(scrub("unknown field `lane`"), "unknown field `lane`");
    }

    #[test]
    fn an_env_secret_in_an_enum_field_is_not_quoted() {
        let env = env_of(&[
            ("ALICE_HASH", "abc"),
            ("RESEARCH_TOKEN", "t"),
            ("SECRET", "PLANTED-ENV-SECRET"),
        ]);
        let wrong = MINIMAL.replace(
            "headers = { Authorization",
            "protocol = \"env:SECRET\"\n        headers = { Authorization",
        );
        let e = parse(&wrong, &env)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("unknown variant"), "{e}");
        assert!(!e.contains("PLANTED"), "{e}");
    }
}
