//! The file's shape: one struct per section, with the defaults an operator may leave out.

use serde::Deserialize;
use std::collections::BTreeMap;
use tasklatch_agent_server::AgentServerConfig;
use tasklatch_core::policy::Policy;
use tasklatch_core::secret::Secret;
use tasklatch_mcp::ServerConfig;

/// The whole file.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Where the tasks are kept.
    pub database: DatabaseSection,
    /// How the loops run.
    #[serde(default)]
    pub loops: LoopsSection,
    /// The engine's timings.
    #[serde(default)]
    pub engine: EngineSection,
    /// The HTTP listener.
    #[serde(default)]
    pub http: HttpSection,
    /// Deleting finished, settled tasks after an age.
    #[serde(default)]
    pub retention: RetentionSection,
    /// Who may call the API, and as which owner.
    pub auth: AuthSection,
    /// The MCP servers, by the id tasks name them with.
    #[serde(default)]
    pub servers: BTreeMap<String, ServerConfig>,
    /// The Agent Server that runs the notifications.
    pub agent_server: AgentServerConfig,
    /// The agent tools over MCP at `/mcp` (off unless enabled).
    #[serde(default)]
    pub agent_tools: AgentToolsSection,
    /// The background-task panel at `/ui` (off unless enabled).
    #[serde(default)]
    pub ui: UiSection,
}

/// `[ui]`: the background-task panel at `/ui/threads/{thread}` (`crate::ui`).
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UiSection {
    /// Serve the panel (default false).
    pub enabled: bool,
    /// The pages that may show the panel in a frame (CSP `frame-ancestors`): origins such as
    /// `https://chat.example.com`, or `'self'`; empty (the default): no page may.
    pub frame_ancestors: Vec<String>,
    /// Mark the session cookie `Secure` (default true: browsers then send it over HTTPS and to
    /// `localhost` only).
    pub secure_cookie: bool,
    /// How long a browser session lasts, in minutes (default 480).
    pub session_minutes: u64,
}

impl Default for UiSection {
    fn default() -> Self {
        UiSection {
            enabled: false,
            frame_ancestors: Vec::new(),
            secure_cookie: true,
            session_minutes: 480,
        }
    }
}

/// `[agent_tools]`: the MCP server at `/mcp` through which an agent lists, reads, cancels,
/// answers and starts its background tasks (`crate::agent_tools`).
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentToolsSection {
    /// Serve `/mcp` (default false).
    pub enabled: bool,
    /// The request header the agent runtime sets on every call with the thread of the run
    /// the call is made in; the tools take the thread from it and from nowhere else.
    pub thread_header: String,
    /// Serve only the reading tools (list and get).
    pub read_only: bool,
    /// `Host` values (`name` or `name:port`) accepted at `/mcp` besides the loopback names
    /// and the address of `http.listen`: the names the agent runtime reaches the worker by.
    pub allowed_hosts: Vec<String>,
}

impl Default for AgentToolsSection {
    fn default() -> Self {
        AgentToolsSection {
            enabled: false,
            thread_header: "x-tasklatch-thread".into(),
            read_only: false,
            allowed_hosts: Vec::new(),
        }
    }
}

/// `[database]`.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseSection {
    /// A `postgres://` URL. Secret (it may hold a password): never logged or shown. `Secret`
    /// implements `Deserialize` but never `Serialize`, so it is read from this file and can be
    /// written nowhere.
    pub url: Secret,
    /// Connections in the pool (shared by the lanes and the API).
    #[serde(default = "default_pool_size")]
    pub pool_size: u32,
    /// How long to wait for a connection, in milliseconds.
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// The schema tasklatch's tables, functions and migration history live in.
    #[serde(default = "default_schema")]
    pub schema: String,
    /// `statement_timeout` of every pooled connection, in milliseconds.
    #[serde(default = "default_statement_timeout_ms")]
    pub statement_timeout_ms: u64,
    /// `lock_timeout` of every pooled connection, in milliseconds (at most the statement timeout).
    #[serde(default = "default_lock_timeout_ms")]
    pub lock_timeout_ms: u64,
    /// Start even when a failover could lose acknowledged writes: standbys replicate
    /// asynchronously, none is synchronous now, or `synchronous_commit` is `off`/`local` while
    /// standbys are attached or named (`tasklatch_pg::ReplicationMode::AtRisk`). Default false:
    /// the worker refuses to start then. A lone primary (no standby attached, none named) starts
    /// either way.
    #[serde(default)]
    pub allow_async_replication: bool,
    /// The servers to find the primary among, each `host:port` (`[address]:port` for IPv6; the
    /// port defaults to 5432), probed in this order. Each replaces the URL's host and port; the
    /// URL still gives the user, the password, the database and its parameters. Empty (the
    /// default): the URL's own host, as before. With a list, the pool follows the primary
    /// across failovers (`tasklatch_pg::open_following`).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// A separate `postgres://` URL for the wake-up listener's `LISTEN` connection: a direct
    /// connection past a pooler (the worker refuses a transaction pooler for its pool, and
    /// `LISTEN` needs a session of its own). Secret, like `url`.
    /// Default: the pool's own connection (the primary, when `hosts` is given).
    #[serde(default)]
    pub listen_url: Option<Secret>,
}

fn default_schema() -> String {
    tasklatch_pg::DEFAULT_SCHEMA.to_owned()
}

fn default_statement_timeout_ms() -> u64 {
    millis(tasklatch_pg::DEFAULT_STATEMENT_TIMEOUT)
}

fn default_lock_timeout_ms() -> u64 {
    millis(tasklatch_pg::DEFAULT_LOCK_TIMEOUT)
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn default_pool_size() -> u32 {
    10
}

fn default_connect_timeout_ms() -> u64 {
    5_000
}

/// `[loops]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoopsSection {
    /// Engines in this process, each with its own worker id (`host-pid-lane`).
    pub lanes: usize,
    /// Rows claimed per loop and pass.
    pub batch_size: usize,
    /// Each lane passes at least this often (milliseconds): the fallback when no wake-up comes.
    pub tick_ms: u64,
    /// Whether to `LISTEN` for wake-ups (channel `tasklatch_wakeup`).
    pub wakeups: bool,
}

impl Default for LoopsSection {
    fn default() -> Self {
        LoopsSection {
            lanes: 1,
            batch_size: Policy::default().batch_size,
            tick_ms: 1_000,
            wakeups: true,
        }
    }
}

/// `[engine]`: the engine's timings in milliseconds (`tasklatch_core::policy::Policy`).
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineSection {
    /// Remote poll interval when the server gives no hint; the base of the poll backoff.
    pub poll_interval_ms: u64,
    /// Upper bound of the poll backoff.
    pub max_poll_backoff_ms: u64,
    /// How long a poll claim holds its lease.
    pub poll_lease_ms: u64,
    /// How long a notification claim holds its lease.
    pub notify_lease_ms: u64,
    /// How long a cancel claim holds its lease.
    pub cancel_lease_ms: u64,
    /// How soon a dispatched run is looked at again, and a busy (409) thread retried.
    pub run_check_interval_ms: u64,
    /// How long the claim that launched a run waits for it to end before writing it
    /// dispatched (0: never wait).
    pub run_confirm_wait_ms: u64,
    /// Base of the delivery and cancel backoff.
    pub retry_base_ms: u64,
    /// Upper bound of the delivery and cancel backoff.
    pub max_retry_backoff_ms: u64,
    /// Delay before retrying a row after an unexpected error.
    pub release_backoff_ms: u64,
    /// An external call starts only while this much of its lease is left.
    pub min_lease_left_ms: u64,
    /// A notification run still going this long after its launch is interrupted and retried.
    pub max_run_life_ms: u64,
    /// The largest difference between this worker's clock and the database's it claims
    /// under; checked at start-up and before every pass.
    pub max_clock_skew_ms: u64,
    /// How long a submit's saved intent waits for its remote task's id before the task is
    /// ended as "may have started but could not be tracked" (DOMAIN §7).
    pub submit_grace_ms: u64,
    /// How long a notification or a cancel waits out a peer (Agent Server, MCP server) that
    /// cannot be reached, times out or answers 5xx before it becomes a dead letter of reason
    /// `unavailable`; an outage never spends a failure budget (DOMAIN §3, §6).
    pub max_unavailable_ms: u64,
    /// Upper bound of the backoff while a peer is unavailable: delivery and cancels resume
    /// within it once the peer is back.
    pub max_unavailable_backoff_ms: u64,
    /// While an MCP server's polls fail, one of its backed-off tasks is polled at least this
    /// often, so that its return is seen soon whatever the backoff of the rest.
    pub outage_probe_interval_ms: u64,
}

impl Default for EngineSection {
    /// Core's defaults, except `run_check_interval_ms` (2 s instead of 10 s): a run that ends
    /// quickly is confirmed, and a busy thread retried, within two seconds.
    fn default() -> Self {
        let p = Policy::default();
        let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        EngineSection {
            poll_interval_ms: ms(p.poll_interval),
            max_poll_backoff_ms: ms(p.max_poll_backoff),
            poll_lease_ms: ms(p.poll_lease),
            notify_lease_ms: ms(p.notify_lease),
            cancel_lease_ms: ms(p.cancel_lease),
            run_check_interval_ms: 2_000,
            run_confirm_wait_ms: ms(p.run_confirm_wait),
            retry_base_ms: ms(p.retry_base),
            max_retry_backoff_ms: ms(p.max_retry_backoff),
            release_backoff_ms: ms(p.release_backoff),
            min_lease_left_ms: ms(p.min_lease_left),
            max_run_life_ms: ms(p.max_run_life),
            max_clock_skew_ms: ms(p.max_clock_skew),
            submit_grace_ms: ms(p.submit_grace),
            max_unavailable_ms: ms(p.max_unavailable),
            max_unavailable_backoff_ms: ms(p.max_unavailable_backoff),
            outage_probe_interval_ms: ms(p.outage_probe_interval),
        }
    }
}

/// `[retention]`: off unless `after_hours` is set.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionSection {
    /// Finished tasks whose every notification is settled are deleted this many hours after
    /// their last remote change or their notification settling, whichever is later, with
    /// their ended runs; 0 (the default) keeps every task.
    pub after_hours: u64,
    /// A dead-lettered notification keeps its task this many hours after it became a dead
    /// letter, unless an operator requeues it first (default 720, 30 days; a value below
    /// `after_hours` is raised to it).
    pub dead_letter_after_hours: u64,
    /// How often the retention loop runs, in milliseconds.
    pub interval_ms: u64,
    /// Tasks deleted per statement (one short transaction each).
    pub batch_size: usize,
}

impl Default for RetentionSection {
    fn default() -> Self {
        RetentionSection {
            after_hours: 0,
            dead_letter_after_hours: 720,
            interval_ms: 60_000,
            batch_size: 500,
        }
    }
}

/// `[http]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpSection {
    /// The address to listen on, e.g. `127.0.0.1:8080`.
    pub listen: String,
    /// The largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Requests served at once (1 to 10,000); one more is answered 503 at once.
    pub max_in_flight: usize,
}

impl Default for HttpSection {
    fn default() -> Self {
        HttpSection {
            listen: "127.0.0.1:8080".into(),
            max_body_bytes: 64 << 10,
            max_in_flight: 256,
        }
    }
}

/// How callers of the API are authenticated.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMode {
    /// `Authorization: Bearer <token>`; tokens are configured as SHA-256 hashes with an owner.
    #[default]
    Tokens,
    /// A reverse proxy in front of the worker has authenticated the caller and names the owner
    /// in a header. Only safe when nothing but that proxy can reach the listener.
    TrustedProxy,
}

/// `[auth]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSection {
    /// `tokens` (default) or `trusted_proxy`.
    #[serde(default)]
    pub mode: AuthMode,
    /// Bearer tokens (mode `tokens`).
    #[serde(default)]
    pub tokens: Vec<TokenEntry>,
    /// The header naming the owner (mode `trusted_proxy`), e.g. `x-forwarded-user`.
    #[serde(default)]
    pub proxy_header: Option<String>,
}

/// One API token: whose it is, and the SHA-256 of the token (lower-case hex).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    /// The owner a caller with this token acts as.
    pub owner: String,
    /// `sha256(token)` as 64 lower-case hex digits (`tasklatch worker hash-token`).
    pub sha256: String,
}
