//! The five tools as `tools/list` shows them: name, description, input schema (from the
//! argument types below), and the read-only and destructive hints. No tool takes a thread:
//! the thread is the run's, from the runtime's header ([`super::scope`]).

use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{Tool, ToolAnnotations};
use rmcp::schemars::JsonSchema;
use serde::Deserialize;

/// Said by every tool: statuses go stale, and changes come to the thread by themselves.
const NO_POLLING: &str = "Task statuses you saw earlier (in this conversation or in a \
     notification) are stale: read them again before acting on one. Do not poll: when a task \
     finishes, fails or asks a question, the task tracker starts a new run in this thread to \
     tell you.";

/// A tool of the agent tools.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum ToolName {
    /// `list_background_tasks`.
    List,
    /// `get_background_task`.
    Get,
    /// `cancel_background_task`.
    Cancel,
    /// `answer_background_task`.
    Answer,
    /// `start_background_task`.
    Start,
}

impl ToolName {
    /// Every tool, reading ones first.
    pub const ALL: [ToolName; 5] = [
        ToolName::List,
        ToolName::Get,
        ToolName::Cancel,
        ToolName::Answer,
        ToolName::Start,
    ];

    /// The tool's name on the wire (and its metric label).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::List => "list_background_tasks",
            ToolName::Get => "get_background_task",
            ToolName::Cancel => "cancel_background_task",
            ToolName::Answer => "answer_background_task",
            ToolName::Start => "start_background_task",
        }
    }

    /// The tool called `name`, if any.
    pub fn of(name: &str) -> Option<ToolName> {
        ToolName::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// Whether the tool only reads (served in read-only mode).
    pub fn reads(self) -> bool {
        matches!(self, ToolName::List | ToolName::Get)
    }

    /// The tools served: every one, or only the reading ones in read-only mode.
    pub fn served(read_only: bool) -> impl Iterator<Item = ToolName> {
        ToolName::ALL
            .into_iter()
            .filter(move |t| !read_only || t.reads())
    }

    /// The tool as `tools/list` shows it.
    pub fn describe(self) -> Tool {
        let (what, schema) = match self {
            ToolName::List => (LIST, schema_for_type::<ListArgs>()),
            ToolName::Get => (GET, schema_for_type::<GetArgs>()),
            ToolName::Cancel => (CANCEL, schema_for_type::<CancelArgs>()),
            ToolName::Answer => (ANSWER, schema_for_type::<AnswerArgs>()),
            ToolName::Start => (START, schema_for_type::<StartArgs>()),
        };
        let hints = ToolAnnotations::new()
            .read_only(self.reads())
            .destructive(self == ToolName::Cancel);
        Tool::new(self.as_str(), format!("{what} {NO_POLLING}"), schema).annotate(hints)
    }
}

const LIST: &str = "List your background tasks in this conversation, newest first: id, name, \
     status, times, error, whether a cancel was requested. Use it to find a task whose id you \
     no longer have.";
const GET: &str = "Show one background task of this conversation in detail: status, a \
     preview of its result, the questions it asks (answer them with answer_background_task), \
     where its notification and its cancel are.";
const CANCEL: &str = "Cancel a background task of this conversation, by task_id or by its \
     exact name; give neither when exactly one task in this conversation is still running. \
     The cancel is recorded at once and carried out by the task tracker; the task's end is \
     reported in this thread.";
const ANSWER: &str = "Answer one question a background task of this conversation asks \
     (status input_required; the question ids are the [q...] in its input request). Each \
     question is answered once; the answer is sent to the task once and never shown again.";
const START: &str = "Start a long-running tool of a configured MCP server as a background \
     task of this conversation, under a name you choose (used to list and cancel it). It \
     answers with the new task's id at once; the task's progress, questions and result come \
     to this thread as they happen. Never start the same work twice: if the answer says the \
     outcome is pending, list the tasks instead.";

/// `list_background_tasks`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// How many tasks, newest first (1 to 100, default 20).
    pub limit: Option<usize>,
}

/// `get_background_task`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct GetArgs {
    /// The task's id (`task_id` in a listing).
    pub task_id: String,
}

/// `cancel_background_task`'s arguments: at most one of the two.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct CancelArgs {
    /// The task's id.
    pub task_id: Option<String>,
    /// The exact name of one of this conversation's running tasks.
    pub name: Option<String>,
}

/// `answer_background_task`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct AnswerArgs {
    /// The task's id.
    pub task_id: String,
    /// The question's id, as the task's input request names it (`q…`, without brackets).
    pub request_id: String,
    /// The answer as a JSON object; for a form: `{"action": "accept", "content": {...}}`.
    pub answer: serde_json::Map<String, serde_json::Value>,
}

/// `start_background_task`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct StartArgs {
    /// The MCP server, by the id the worker's configuration gives it.
    pub server: String,
    /// The tool to call on that server.
    pub tool: String,
    /// The tool's arguments (a JSON object; default `{}`).
    #[serde(default)]
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// A name for the task (1 to 200 characters), shown in listings and usable to cancel it.
    pub name: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_mode_serves_only_the_reading_tools() {
        let all: Vec<&str> = ToolName::served(false).map(ToolName::as_str).collect();
        assert_eq!(all.len(), 5);
        let reading: Vec<&str> = ToolName::served(true).map(ToolName::as_str).collect();
        assert_eq!(reading, ["list_background_tasks", "get_background_task"]);
        for t in ToolName::ALL {
            assert_eq!(ToolName::of(t.as_str()), Some(t));
        }
        assert_eq!(ToolName::of("list_background_task"), None);
    }

    #[test]
    fn every_tool_has_its_hints_no_thread_argument_and_the_polling_warning() {
        for t in ToolName::ALL {
            let tool = t.describe();
            let hints = tool.annotations.clone().unwrap_or_default();
            assert_eq!(hints.read_only_hint, Some(t.reads()), "{}", t.as_str());
            assert_eq!(hints.destructive_hint, Some(t == ToolName::Cancel));
            let schema = serde_json::Value::Object((*tool.input_schema).clone());
            assert!(schema["properties"].get("thread").is_none(), "{schema}");
            assert!(!schema.to_string().contains("thread_id"), "{schema}");
            let text = tool.description.unwrap_or_default();
            assert!(
                text.contains("stale") && text.contains("Do not poll"),
                "{text}"
            );
        }
    }
}
