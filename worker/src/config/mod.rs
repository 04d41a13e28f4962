//! The worker's configuration file (TOML), as an operator writes it.
//!
//! `tasklatch.example.toml` at the repository root documents every field. Sections:
//! `[database]`, `[loops]`, `[engine]`, `[http]`, `[retention]`, `[auth]`, `[servers.<id>]` (the MCP servers,
//! `tasklatch_mcp::ServerConfig`), `[agent_server]` (`tasklatch_agent_server`) and
//! `[agent_tools]` (`crate::agent_tools`) and `[ui]` (`crate::ui`). Unknown
//! fields are refused everywhere, so a typo is an error rather than a silently ignored setting.
//!
//! [`load`] reads the file, applies the environment overrides for secrets and checks
//! everything into [`Settings`]; an error names the field at fault and never quotes a value.

mod agent_tools;
mod file;
mod load;
mod settings;
#[cfg(test)]
mod test_support;
mod ui;

pub use crate::retention::Retention;
pub use agent_tools::AgentTools;
pub use file::{
    AgentToolsSection, AuthMode, AuthSection, DatabaseSection, EngineSection, FileConfig,
    HttpSection, LoopsSection, RetentionSection, TokenEntry, UiSection,
};
pub use load::{load, parse, ConfigError, DATABASE_URL_ENV, ENV_PREFIX};
pub use settings::{is_hidden_control, shortest_lease, valid_id, Auth, DatabaseSettings, Settings};
pub use ui::Ui;
