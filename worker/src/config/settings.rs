//! The checked configuration every part of the worker reads.
//!
//! [`Settings::check`] refuses anything the worker could not run safely with: limits out of
//! range, timings that would let a call outlive its lease (every MCP request timeout and the
//! launcher's call timeout must be below `min_lease_left`, itself below every lease, and twice
//! `max_clock_skew` plus any MCP request timeout too), a pool
//! too small for the lanes, an empty or malformed token list. Errors name the field.

use super::agent_tools::AgentTools;
use super::file::{AuthMode, EngineSection, FileConfig, LoopsSection, RetentionSection};
use super::load::ConfigError;
use super::ui::Ui;
use crate::retention::Retention;
use sqlx::postgres::PgConnectOptions;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;
use tasklatch_agent_server::AgentServerConfig;
use tasklatch_core::ids::OwnerId;
use tasklatch_core::policy::{Policy, MAX_BATCH, MAX_ID};
use tasklatch_mcp::{McpConfig, ServerConfig};
use tasklatch_pg::{Host, SchemaName, SessionSettings};

/// Lanes per process, at most.
pub const MAX_LANES: usize = 16;
/// Connections per pool, at most.
pub const MAX_POOL_SIZE: u32 = 200;
/// The shortest and longest tick.
const TICK_RANGE_MS: (u64, u64) = (10, 60_000);
/// The smallest and largest body limit.
const BODY_RANGE: (usize, usize) = (1 << 10, 1 << 20);
/// Accepted `http.max_in_flight`: requests served at once.
const IN_FLIGHT_RANGE: (usize, usize) = (1, 10_000);
/// The longest timing accepted anywhere (one day).
const MAX_TIMING_MS: u64 = 24 * 60 * 60 * 1_000;
/// The longest retention age accepted (ten years).
const MAX_RETENTION_HOURS: u64 = 10 * 366 * 24;
/// API tokens, at most.
const MAX_TOKENS: usize = 10_000;

/// The database connection. No `Debug`: the options hold the password.
#[derive(Clone)]
pub struct DatabaseSettings {
    /// Where to connect (parsed from the secret URL), with [`DatabaseSettings::session`]
    /// applied: every connection made with them starts in the schema, with the timeouts.
    pub options: PgConnectOptions,
    /// The schema and the statement and lock timeouts.
    pub session: SessionSettings,
    /// Connections in the pool.
    pub pool_size: u32,
    /// How long to wait for a connection.
    pub connect_timeout: Duration,
    /// Whether to start although a failover could lose acknowledged writes
    /// (`database.allow_async_replication`, checked at start by `run::check_replication`).
    pub allow_async_replication: bool,
    /// `database.hosts`: the servers to find the primary among (empty: the URL's host only).
    pub hosts: Vec<Host>,
    /// `database.listen_url`'s options, for the wake-up listener (`None`: the pool's own).
    pub listen_options: Option<PgConnectOptions>,
}

/// How API callers are authenticated.
#[derive(Clone, Debug)]
pub enum Auth {
    /// Bearer tokens: `sha256(token)` in lower-case hex → owner.
    Tokens(BTreeMap<String, OwnerId>),
    /// The owner is named by this header, set by a trusted reverse proxy (lower-case name).
    TrustedProxy(String),
}

/// Everything the worker runs with, checked. No `Debug`: it holds secrets.
#[derive(Clone)]
pub struct Settings {
    /// The database.
    pub database: DatabaseSettings,
    /// Engines in this process.
    pub lanes: usize,
    /// Each lane passes at least this often.
    pub tick: Duration,
    /// Whether to listen for wake-ups.
    pub wakeups: bool,
    /// The engine's timings and batch size.
    pub policy: Policy,
    /// The HTTP listener's address.
    pub listen: SocketAddr,
    /// The largest request body accepted.
    pub max_body_bytes: usize,
    /// Requests served at once; more are answered 503 at once.
    pub max_in_flight: usize,
    /// The retention loop, if switched on.
    pub retention: Option<Retention>,
    /// API authentication.
    pub auth: Auth,
    /// The MCP servers (validated).
    pub mcp: McpConfig,
    /// The Agent Server (validated, and fits the policy).
    pub agent_server: AgentServerConfig,
    /// The agent tools at `/mcp`; `None` when not served.
    pub agent_tools: Option<AgentTools>,
    /// The background-task panel at `/ui`; `None` when not served.
    pub ui: Option<Ui>,
}

impl Settings {
    /// Checks `file` into settings; the first problem found is returned.
    pub fn check(file: FileConfig) -> Result<Settings, ConfigError> {
        let policy = policy_of(&file.engine, &file.loops)?;
        let lanes = in_range("loops.lanes", file.loops.lanes, 1, MAX_LANES)?;
        let database = database_of(&file, lanes)?;
        let tick = Duration::from_millis(in_range(
            "loops.tick_ms",
            file.loops.tick_ms,
            TICK_RANGE_MS.0,
            TICK_RANGE_MS.1,
        )?);
        let listen = SocketAddr::from_str(&file.http.listen)
            .map_err(|_| ConfigError::new("http.listen", "must be an IP address and a port"))?;
        let max_body_bytes = in_range(
            "http.max_body_bytes",
            file.http.max_body_bytes,
            BODY_RANGE.0,
            BODY_RANGE.1,
        )?;
        let max_in_flight = in_range(
            "http.max_in_flight",
            file.http.max_in_flight,
            IN_FLIGHT_RANGE.0,
            IN_FLIGHT_RANGE.1,
        )?;
        let retention = retention_of(&file.retention)?;
        let mcp = mcp_of(&file, &policy)?;
        agent_server_fits(&file.agent_server, &policy)?;
        let auth = auth_of(&file)?;
        let agent_tools = AgentTools::check(&file.agent_tools, listen, &auth)?;
        let ui = Ui::check(&file.ui)?;
        Ok(Settings {
            database,
            lanes,
            tick,
            wakeups: file.loops.wakeups,
            policy,
            listen,
            max_body_bytes,
            max_in_flight,
            retention,
            auth,
            mcp,
            agent_server: file.agent_server,
            agent_tools,
            ui,
        })
    }
}

/// The retention loop from `[retention]`: `None` when `after_hours` is 0.
fn retention_of(r: &RetentionSection) -> Result<Option<Retention>, ConfigError> {
    if r.after_hours == 0 {
        return Ok(None);
    }
    let hours = in_range(
        "retention.after_hours",
        r.after_hours,
        1,
        MAX_RETENTION_HOURS,
    )?;
    let dead_letter_hours = in_range(
        "retention.dead_letter_after_hours",
        r.dead_letter_after_hours.max(hours),
        1,
        MAX_RETENTION_HOURS,
    )?;
    let every = in_range("retention.interval_ms", r.interval_ms, 1_000, MAX_TIMING_MS)?;
    let batch = in_range("retention.batch_size", r.batch_size, 1, MAX_BATCH)?;
    Ok(Some(Retention {
        after: Duration::from_secs(hours * 3_600),
        dead_letters_after: Duration::from_secs(dead_letter_hours * 3_600),
        every: Duration::from_millis(every),
        batch,
    }))
}

/// The options of a secret `postgres://` URL at `place` (the parser's own message may quote the
/// URL: it is not passed on).
fn url_options(place: &str, url: &str) -> Result<PgConnectOptions, ConfigError> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(ConfigError::new(
            place,
            "must be a postgres:// or postgresql:// URL",
        ));
    }
    PgConnectOptions::from_str(url)
        .map_err(|_| ConfigError::new(place, "is not a valid PostgreSQL URL"))
}

/// `database.hosts` (empty: none), checked against the URL's `options` (TCP, not a socket).
fn hosts_of(entries: &[String], options: &PgConnectOptions) -> Result<Vec<Host>, ConfigError> {
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    let hosts =
        Host::parse_list(entries).map_err(|e| ConfigError::new("database.hosts", e.to_string()))?;
    tasklatch_pg::tcp_base(options).map_err(|e| ConfigError::new("database.url", e.reason))?;
    Ok(hosts)
}

fn database_of(file: &FileConfig, lanes: usize) -> Result<DatabaseSettings, ConfigError> {
    let options = url_options("database.url", file.database.url.expose())?;
    let hosts = hosts_of(&file.database.hosts, &options)?;
    let listen_options = match &file.database.listen_url {
        Some(url) => Some(url_options("database.listen_url", url.expose())?),
        None => None,
    };
    let min_pool = u32::try_from(lanes + 2).unwrap_or(u32::MAX);
    let pool_size = in_range(
        "database.pool_size",
        file.database.pool_size,
        min_pool,
        MAX_POOL_SIZE,
    )
    .map_err(|e| ConfigError::new(e.place, format!("{} (lanes + 2 at least)", e.reason)))?;
    let connect_timeout = Duration::from_millis(in_range(
        "database.connect_timeout_ms",
        file.database.connect_timeout_ms,
        1,
        MAX_TIMING_MS,
    )?);
    let schema = SchemaName::new(&file.database.schema)
        .map_err(|e| ConfigError::new("database.schema", e.to_string()))?;
    let statement_timeout = Duration::from_millis(in_range(
        "database.statement_timeout_ms",
        file.database.statement_timeout_ms,
        1,
        MAX_TIMING_MS,
    )?);
    let lock_timeout = Duration::from_millis(
        in_range(
            "database.lock_timeout_ms",
            file.database.lock_timeout_ms,
            1,
            file.database.statement_timeout_ms,
        )
        .map_err(|e| {
            ConfigError::new(
                e.place,
                format!("{} (at most database.statement_timeout_ms)", e.reason),
            )
        })?,
    );
    let session = SessionSettings {
        schema,
        statement_timeout,
        lock_timeout,
    };
    Ok(DatabaseSettings {
        options: session.apply(options),
        session,
        pool_size,
        connect_timeout,
        allow_async_replication: file.database.allow_async_replication,
        hosts,
        listen_options,
    })
}

/// The engine's policy from `[engine]` and `[loops]`, with the lease ordering checked.
fn policy_of(e: &EngineSection, l: &LoopsSection) -> Result<Policy, ConfigError> {
    let ms = |field: &'static str, v: u64| -> Result<Duration, ConfigError> {
        Ok(Duration::from_millis(in_range(
            &format!("engine.{field}"),
            v,
            1,
            MAX_TIMING_MS,
        )?))
    };
    let policy = Policy {
        poll_interval: ms("poll_interval_ms", e.poll_interval_ms)?,
        max_poll_backoff: ms("max_poll_backoff_ms", e.max_poll_backoff_ms)?,
        poll_lease: ms("poll_lease_ms", e.poll_lease_ms)?,
        notify_lease: ms("notify_lease_ms", e.notify_lease_ms)?,
        cancel_lease: ms("cancel_lease_ms", e.cancel_lease_ms)?,
        run_check_interval: ms("run_check_interval_ms", e.run_check_interval_ms)?,
        run_confirm_wait: Duration::from_millis(in_range(
            "engine.run_confirm_wait_ms",
            e.run_confirm_wait_ms,
            0,
            MAX_TIMING_MS,
        )?),
        retry_base: ms("retry_base_ms", e.retry_base_ms)?,
        max_retry_backoff: ms("max_retry_backoff_ms", e.max_retry_backoff_ms)?,
        release_backoff: ms("release_backoff_ms", e.release_backoff_ms)?,
        min_lease_left: ms("min_lease_left_ms", e.min_lease_left_ms)?,
        batch_size: in_range("loops.batch_size", l.batch_size, 1, MAX_BATCH)?,
        max_run_life: ms("max_run_life_ms", e.max_run_life_ms)?,
        max_clock_skew: ms("max_clock_skew_ms", e.max_clock_skew_ms)?,
        submit_grace: ms("submit_grace_ms", e.submit_grace_ms)?,
        max_unavailable: Duration::from_millis(in_range(
            "engine.max_unavailable_ms",
            e.max_unavailable_ms,
            MIN_MAX_UNAVAILABLE_MS,
            MAX_MAX_UNAVAILABLE_MS,
        )?),
        max_unavailable_backoff: ms("max_unavailable_backoff_ms", e.max_unavailable_backoff_ms)?,
        outage_probe_interval: ms("outage_probe_interval_ms", e.outage_probe_interval_ms)?,
    };
    if policy.max_run_life <= policy.run_check_interval {
        return Err(ConfigError::new(
            "engine.max_run_life_ms",
            "must exceed run_check_interval_ms (a run is looked at before it is given up)",
        ));
    }
    let shortest = shortest_lease(&policy);
    if policy.min_lease_left >= shortest {
        return Err(ConfigError::new(
            "engine.min_lease_left_ms",
            "must be below every lease (poll, notify and cancel)",
        ));
    }
    if policy.min_lease_left + policy.run_confirm_wait >= policy.notify_lease {
        return Err(ConfigError::new(
            "engine.run_confirm_wait_ms",
            "must be below notify_lease_ms minus min_lease_left_ms (the wait's lookups are \
             external calls and need the lease's margin)",
        ));
    }
    if policy.submit_grace < MIN_SUBMIT_GRACE {
        return Err(ConfigError::new(
            "engine.submit_grace_ms",
            "must be at least 60000: a submit's saved intent must outlive a routine database \
             failover, or a task the API acknowledged is ended as untracked",
        ));
    }
    if policy.max_clock_skew.saturating_mul(2) >= policy.min_lease_left {
        return Err(ConfigError::new(
            "engine.max_clock_skew_ms",
            "twice it must be below engine.min_lease_left_ms (two workers may be off both ways)",
        ));
    }
    Ok(policy)
}

/// The shortest `engine.max_unavailable_ms` accepted: a peer's routine restart or deploy must
/// never dead-letter what waits on it.
const MIN_MAX_UNAVAILABLE_MS: u64 = 10 * 60 * 1_000;
/// The longest `engine.max_unavailable_ms` accepted (30 days).
const MAX_MAX_UNAVAILABLE_MS: u64 = 30 * 24 * 60 * 60 * 1_000;

/// The shortest `engine.submit_grace_ms` accepted: a database failover takes 30 to 120 s.
const MIN_SUBMIT_GRACE: Duration = Duration::from_secs(60);

/// The shortest of the three leases: a shutdown ends within it.
pub fn shortest_lease(policy: &Policy) -> Duration {
    policy
        .poll_lease
        .min(policy.notify_lease)
        .min(policy.cancel_lease)
}

fn mcp_of(file: &FileConfig, policy: &Policy) -> Result<McpConfig, ConfigError> {
    let mcp = McpConfig {
        servers: file.servers.clone(),
    };
    if mcp.servers.is_empty() {
        return Err(ConfigError::new(
            "servers",
            "at least one MCP server is needed",
        ));
    }
    mcp.validate()
        .map_err(|e| ConfigError::new(format!("servers.{}.{}", e.server, e.field), e.reason))?;
    for (id, server) in &mcp.servers {
        if server.request_timeout() >= policy.min_lease_left {
            return Err(ConfigError::new(
                format!("servers.{id}.request_timeout_ms"),
                "must be below engine.min_lease_left_ms, so a call never outlives its lease",
            ));
        }
        if server.request_timeout() + policy.max_clock_skew.saturating_mul(2)
            >= policy.min_lease_left
        {
            return Err(ConfigError::new(
                "engine.max_clock_skew_ms",
                format!(
                    "twice it plus servers.{id}.request_timeout_ms must be below \
                     engine.min_lease_left_ms, so no worker within it sees a running call's \
                     lease as expired"
                ),
            ));
        }
        call_deadline_fits(id, server, policy)?;
    }
    Ok(mcp)
}

/// One driver call (several requests) must end, on any worker within the clock skew, before
/// its lease could be judged expired: `2 × max_clock_skew + call_deadline < min_lease_left`.
fn call_deadline_fits(id: &str, server: &ServerConfig, policy: &Policy) -> Result<(), ConfigError> {
    if server.call_deadline() + policy.max_clock_skew.saturating_mul(2) >= policy.min_lease_left {
        return Err(ConfigError::new(
            format!("servers.{id}.call_deadline_ms"),
            "it plus twice engine.max_clock_skew_ms must be below engine.min_lease_left_ms, so \
             no driver call (all its requests together) outlives its lease on any worker",
        ));
    }
    Ok(())
}

fn agent_server_fits(config: &AgentServerConfig, policy: &Policy) -> Result<(), ConfigError> {
    let valid = config
        .validate()
        .map_err(|e| ConfigError::new("agent_server", e.to_string()))?;
    valid
        .fits(policy)
        .map_err(|e| ConfigError::new("agent_server", e.to_string()))
}

fn auth_of(file: &FileConfig) -> Result<Auth, ConfigError> {
    let a = &file.auth;
    match a.mode {
        AuthMode::Tokens => {
            if a.proxy_header.is_some() {
                return Err(ConfigError::new(
                    "auth.proxy_header",
                    "only with mode = \"trusted_proxy\"",
                ));
            }
            if a.tokens.is_empty() || a.tokens.len() > MAX_TOKENS {
                return Err(ConfigError::new(
                    "auth.tokens",
                    format!("between 1 and {MAX_TOKENS} tokens are needed in mode \"tokens\""),
                ));
            }
            let mut tokens = BTreeMap::new();
            for (i, t) in a.tokens.iter().enumerate() {
                let place = format!("auth.tokens[{i}]");
                if !valid_id(&t.owner) {
                    return Err(ConfigError::new(
                        format!("{place}.owner"),
                        format!("must be 1 to {MAX_ID} characters without control characters"),
                    ));
                }
                if t.sha256.len() != 64
                    || !t.sha256.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
                {
                    return Err(ConfigError::new(
                        format!("{place}.sha256"),
                        "must be 64 lower-case hex digits (`tasklatch worker hash-token`)",
                    ));
                }
                if tokens
                    .insert(t.sha256.clone(), OwnerId::from(t.owner.as_str()))
                    .is_some()
                {
                    return Err(ConfigError::new(place, "the same token is listed twice"));
                }
            }
            Ok(Auth::Tokens(tokens))
        }
        AuthMode::TrustedProxy => {
            if !a.tokens.is_empty() {
                return Err(ConfigError::new(
                    "auth.tokens",
                    "not used with mode = \"trusted_proxy\"; remove them",
                ));
            }
            let header = a
                .proxy_header
                .as_deref()
                .unwrap_or_default()
                .to_ascii_lowercase();
            if axum::http::HeaderName::from_str(&header).is_err() || header == "authorization" {
                return Err(ConfigError::new(
                    "auth.proxy_header",
                    "a header name is needed in mode \"trusted_proxy\" (not authorization)",
                ));
            }
            Ok(Auth::TrustedProxy(header))
        }
    }
}

/// An owner or thread id as the API accepts it: 1 to `MAX_ID` characters, no control
/// characters.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.chars().count() <= MAX_ID && !id.chars().any(char::is_control)
}

/// Whether `c` is refused in a submit's task name and tool (text shown in listings, logs and
/// the operator's terminal): a control character (Unicode general category Cc:
/// U+0000–U+001F, U+007F–U+009F) or a bidirectional formatting control (U+061C, U+200E, U+200F,
/// U+202A–U+202E, U+2066–U+2069), which can reorder or hide what is displayed around it. The
/// submit body's published `pattern` (`api::shapes::SubmitBody`) refuses the same characters.
pub fn is_hidden_control(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

pub(super) fn in_range<T: PartialOrd + std::fmt::Display + Copy>(
    place: &str,
    value: T,
    min: T,
    max: T,
) -> Result<T, ConfigError> {
    if value < min || value > max {
        return Err(ConfigError::new(
            place,
            format!("must be between {min} and {max}, not {value}"),
        ));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_support::{check, BASE};

    #[test]
    fn the_minimal_file_gets_safe_defaults() {
        let s = check(BASE).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.lanes, 1);
        assert_eq!(s.tick, Duration::from_secs(1));
        assert!(s.wakeups);
        assert_eq!(s.policy.run_check_interval, Duration::from_secs(2));
        assert_eq!(s.policy.notify_lease, Policy::default().notify_lease);
        assert_eq!(s.max_body_bytes, 65_536);
        assert_eq!(s.max_in_flight, 256);
        assert_eq!(s.listen.to_string(), "127.0.0.1:8080");
        assert!(matches!(&s.auth, Auth::Tokens(t) if t.len() == 1));
    }

    #[test]
    fn each_rule_names_its_field_and_no_value() {
        let cases = [
            ("[loops]\nlanes = 0", "loops.lanes"),
            ("[loops]\nbatch_size = 100000", "loops.batch_size"),
            ("[loops]\ntick_ms = 1", "loops.tick_ms"),
            (
                "[engine]\nmin_lease_left_ms = 60000",
                "engine.min_lease_left_ms",
            ),
            ("[engine]\npoll_lease_ms = 0", "engine.poll_lease_ms"),
            ("[engine]\nmax_run_life_ms = 2000", "engine.max_run_life_ms"),
            (
                "[engine]\nmax_clock_skew_ms = 0",
                "engine.max_clock_skew_ms",
            ),
            (
                "[engine]\nmax_clock_skew_ms = 15000",
                "engine.max_clock_skew_ms",
            ),
            (
                "[engine]\nmax_clock_skew_ms = 12000",
                "engine.max_clock_skew_ms",
            ),
            ("[http]\nlisten = \"localhost\"", "http.listen"),
            ("[http]\nmax_body_bytes = 10", "http.max_body_bytes"),
            ("[http]\nmax_in_flight = 0", "http.max_in_flight"),
        ];
        for (extra, field) in cases {
            let text = format!("{extra}\n{BASE}");
            let e = check(&text).err().unwrap_or_default();
            assert!(e.contains(field), "{extra}: {e}");
            assert!(!e.contains("PLANTED"), "{e}");
        }
        let e = check(&BASE.replace("postgres://u:", "mysql://u:"))
            .err()
            .unwrap_or_default();
        assert!(e.contains("database.url") && !e.contains("PLANTED"), "{e}");
        let slow = BASE.replace(
            "url = \"http://127.0.0.1:1/mcp\"",
            "url = \"http://127.0.0.1:1/mcp\"\nrequest_timeout_ms = 25000",
        );
        let e = check(&format!("[engine]\nmin_lease_left_ms = 20000\n{slow}"))
            .err()
            .unwrap_or_default();
        assert!(e.contains("servers.research.request_timeout_ms"), "{e}");
        let e = check(&BASE.replace("sha256 = \"2b", "sha256 = \"XX"))
            .err()
            .unwrap_or_default();
        assert!(e.contains("auth.tokens[0].sha256"), "{e}");
    }

    #[test]
    fn the_mcp_call_deadline_must_fit_the_lease_margin() {
        let with = |deadline: u64| {
            BASE.replace(
                "url = \"http://127.0.0.1:1/mcp\"",
                &format!(
                    "url = \"http://127.0.0.1:1/mcp\"\nrequest_timeout_ms = 5000\ncall_deadline_ms = {deadline}"
                ),
            )
        };
        // min_lease_left 25 s, skew 2 s: a deadline of 20 s fits, 22 s does not (22 + 2 × 2 ≥ 25).
        let engine = "[engine]\nmin_lease_left_ms = 25000\nmax_clock_skew_ms = 2000\n";
        let fits = check(&format!("{engine}{}", with(20_000)));
        assert!(fits.is_ok(), "{:?}", fits.err());
        let e = check(&format!("{engine}{}", with(22_000)))
            .err()
            .unwrap_or_default();
        assert!(e.contains("servers.research.call_deadline_ms"), "{e}");
        let e = check(&with(60_000)).err().unwrap_or_default();
        assert!(e.contains("servers.research.call_deadline_ms"), "{e}");
    }

    #[test]
    fn the_pool_must_serve_every_lane() {
        let text = BASE.replace(
            "[database]",
            "[loops]\nlanes = 4\n[database]\npool_size = 5",
        );
        let e = check(&text).err().unwrap_or_default();
        assert!(
            e.contains("database.pool_size") && e.contains("lanes + 2"),
            "{e}"
        );
    }

    #[test]
    fn asynchronous_replication_is_refused_unless_allowed() {
        let s = check(BASE).unwrap_or_else(|e| panic!("{e}"));
        assert!(!s.database.allow_async_replication, "false by default");
        let allowed = BASE.replace("[database]", "[database]\nallow_async_replication = true");
        let s = check(&allowed).unwrap_or_else(|e| panic!("{e}"));
        assert!(s.database.allow_async_replication);
        let wrong = BASE.replace(
            "[database]",
            "[database]\nallow_async_replication = \"yes\"",
        );
        let e = check(&wrong).err().unwrap_or_default();
        assert!(e.contains("expected a boolean"), "{e}");
    }

    #[test]
    fn a_host_list_and_a_listen_url_are_checked() {
        let s = check(BASE).unwrap_or_else(|e| panic!("{e}"));
        assert!(s.database.hosts.is_empty() && s.database.listen_options.is_none());
        let listed = BASE.replace(
            "[database]",
            "[database]\nhosts = [\"db1:5432\", \"[::1]:5433\", \"db3\"]\n\
             listen_url = \"postgres://u:PLANTED-DB-PASSWORD@direct:5432/db\"",
        );
        let s = check(&listed).unwrap_or_else(|e| panic!("{e}"));
        let hosts: Vec<String> = s.database.hosts.iter().map(ToString::to_string).collect();
        assert_eq!(hosts, ["db1:5432", "[::1]:5433", "db3:5432"]);
        let listen = s
            .database
            .listen_options
            .unwrap_or_else(|| panic!("listen_url"));
        assert_eq!(listen.get_host(), "direct");
        for (bad, field) in [
            ("hosts = [\"db1:x\"]", "database.hosts"),
            ("hosts = [\"db1\", \"db1:5432\"]", "database.hosts"),
            (
                "listen_url = \"mysql://u:PLANTED@h/db\"",
                "database.listen_url",
            ),
        ] {
            let text = BASE.replace("[database]", &format!("[database]\n{bad}"));
            let e = check(&text).err().unwrap_or_default();
            assert!(e.contains(field) && !e.contains("PLANTED"), "{bad}: {e}");
        }
    }

    #[test]
    fn schema_timeouts_and_retention_are_checked() {
        let s = check(BASE).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.database.session, SessionSettings::default());
        assert_eq!(s.retention, None, "retention is off by default");
        let custom = BASE.replace(
            "[database]",
            "[retention]\nafter_hours = 48\n[database]\nschema = \"app_tl\"\nlock_timeout_ms = 200",
        );
        let s = check(&custom).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.database.session.schema.as_str(), "app_tl");
        assert_eq!(s.database.session.lock_timeout, Duration::from_millis(200));
        let r = s.retention.unwrap_or_else(|| panic!("retention on"));
        assert_eq!(r.after, Duration::from_secs(48 * 3_600));
        for (field, bad) in [
            ("database.schema", "schema = \"Public; DROP\""),
            ("database.lock_timeout_ms", "lock_timeout_ms = 40000"),
            ("database.statement_timeout_ms", "statement_timeout_ms = 0"),
        ] {
            let text = BASE.replace("[database]", &format!("[database]\n{bad}"));
            let e = check(&text).err().unwrap_or_default();
            assert!(e.contains(field) && !e.contains("DROP"), "{e}");
        }
    }

    #[test]
    fn the_run_confirm_wait_defaults_to_a_second_and_must_leave_the_lease_margin() {
        let s = check(BASE).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.policy.run_confirm_wait, Duration::from_secs(1));
        let with = |wait: u64| format!("{BASE}\n[engine]\nrun_confirm_wait_ms = {wait}\n");
        let off = check(&with(0)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            off.policy.run_confirm_wait,
            Duration::ZERO,
            "0 turns it off"
        );
        // The default lease is 60 s and the margin 30 s: a wait of 30 s leaves no margin.
        let e = check(&with(30_000)).err().unwrap_or_default();
        assert!(e.contains("engine.run_confirm_wait_ms"), "{e}");
        assert!(check(&with(29_999)).is_ok());
    }

    #[test]
    fn trusted_proxy_must_be_switched_on_explicitly() {
        let proxy = BASE.replace(
            "tokens = [{ owner = \"alice\", sha256 = \"2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90\" }]",
            "mode = \"trusted_proxy\"\nproxy_header = \"X-Forwarded-User\"",
        );
        let s = check(&proxy).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(&s.auth, Auth::TrustedProxy(h) if h == "x-forwarded-user"));
        let header_without_mode = BASE.replace("[auth]", "[auth]\nproxy_header = \"x-user\"");
        assert!(check(&header_without_mode).is_err());
        let no_tokens = BASE.replace(
            "tokens = [{ owner = \"alice\", sha256 = \"2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90\" }]",
            "",
        );
        assert!(check(&no_tokens).is_err_and(|e| e.contains("auth.tokens")));
    }
}
