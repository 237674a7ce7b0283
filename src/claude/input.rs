//! Claude Code's stream-json input: stdin's lines framed and parsed.
//!
//! Owns: the types of what the SDK writes to pirn ([`In`]: prompts,
//! control requests, answers to pirn's requests; shapes as the SDKs send
//! them, see [`super::wire`]), [`Incoming`] (one line, parsed, or why it
//! cannot be) and [`read_stdin`],
//! which frames stdin with the 10 MiB bound and sends each line on. A
//! control request whose body cannot be read keeps its `request_id`, so
//! it is answered with an error instead of left to the SDK's timeout.

use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::wire::MAX_LINE_BYTES;

/// One line of stdin, parsed.
pub(super) enum Incoming {
    Line(Box<In>),
    /// Not a message pirn understands (the reason).
    Bad(String),
    /// A control request whose body pirn cannot read: answered with an
    /// error (an SDK would otherwise wait for its timeout).
    BadControl {
        request_id: String,
        why: String,
    },
    /// `--input-format text`: the prompt.
    Prompt(String),
}

/// Reads stdin's lines into `tx` until EOF (or a read error). A line is
/// bounded at [`MAX_LINE_BYTES`], as the JSONL worker bounds its requests:
/// a longer one, or one that is not UTF-8, is discarded and reported as a
/// bad line, and reading goes on.
pub(super) async fn read_stdin(tx: mpsc::Sender<Incoming>) {
    use crate::transport::lines::{LineFrame, LineFramer};
    use tokio::io::AsyncReadExt;
    let mut stdin = tokio::io::stdin();
    let mut framer = LineFramer::default();
    let mut eof = false;
    while !eof {
        eof = matches!(stdin.read_buf(framer.buffer()).await, Ok(0) | Err(_));
        while let Some(frame) = framer.next_frame(eof) {
            let input = match frame {
                LineFrame::Line(line) if line.trim().is_empty() => continue,
                LineFrame::Line(line) => match serde_json::from_str::<In>(&line) {
                    Ok(m) => Incoming::Line(Box::new(m)),
                    Err(e) => {
                        let value: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
                        match value["request_id"].as_str().filter(|_| value["type"] == "control_request") {
                            Some(id) => Incoming::BadControl { request_id: id.to_owned(), why: e.to_string() },
                            None => Incoming::Bad(format!("{e}: {}", line.chars().take(200).collect::<String>())),
                        }
                    }
                },
                LineFrame::TooLong => Incoming::Bad(format!("a line longer than {MAX_LINE_BYTES} bytes; discarded")),
                LineFrame::NotUtf8(e) => Incoming::Bad(format!("a line that is not valid UTF-8 ({e}); discarded")),
            };
            if tx.send(input).await.is_err() {
                return;
            }
        }
    }
}

/// One line the SDK writes to pirn's stdin.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum In {
    /// A prompt.
    User(UserIn),
    /// A request of the SDK.
    ControlRequest { request_id: String, request: ControlIn },
    /// The SDK's answer to one of pirn's requests.
    ControlResponse { response: ControlResponseIn },
    /// The SDK gave up on one of its own requests (nothing to do: pirn
    /// answers each at once).
    ControlCancelRequest {},
    /// Liveness only.
    KeepAlive {},
}

/// A `user` line: `message.content` is a string or content blocks.
#[derive(Debug, Clone, Deserialize)]
pub struct UserIn {
    pub message: UserInBody,
    #[serde(default)]
    pub session_id: Option<String>,
    /// The Agent SDK's `SDKUserMessage.priority` (`now`, `next`, `later`):
    /// `now` and `next` while a turn runs steer it (see `super::steer`).
    #[serde(default)]
    pub priority: Option<String>,
}

/// The message of a [`UserIn`].
#[derive(Debug, Clone, Deserialize)]
pub struct UserInBody {
    pub content: UserContent,
}

/// A prompt's content.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    Text(String),
    Blocks(Vec<InBlock>),
}

/// A content block of a prompt: text is taken; any other kind (images,
/// documents) is refused by name.
#[derive(Debug, Clone, Deserialize)]
pub struct InBlock {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
}

/// Control requests the SDKs send (subtype-tagged). Unknown subtypes are
/// answered with an error naming them.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum ControlIn {
    Initialize(Box<InitializeIn>),
    Interrupt {},
    SetPermissionMode {
        mode: String,
    },
    SetModel {
        #[serde(default)]
        model: Option<String>,
    },
    McpStatus {},
    /// Put the files back to before the turn of user message
    /// `user_message_id` (see `super::checkpoints`).
    RewindFiles {
        user_message_id: String,
        #[serde(default)]
        dry_run: Option<bool>,
    },
    #[serde(other)]
    Unsupported,
}

/// `initialize`: the fields pirn reads. The TypeScript SDK sends the
/// system prompt and the JSON schema here rather than on the command line.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeIn {
    #[serde(default)]
    pub hooks: Option<Value>,
    #[serde(default)]
    pub agents: Option<Value>,
    #[serde(default)]
    pub sdk_mcp_servers: Option<Vec<String>>,
    #[serde(default)]
    pub json_schema: Option<Value>,
    #[serde(default)]
    pub system_prompt: Option<SystemPromptIn>,
    #[serde(default)]
    pub append_system_prompt: Option<String>,
    #[serde(default)]
    pub mcp_servers: Option<serde_json::Map<String, Value>>,
    /// Subagents' text reaches the SDK too (by default only their tool
    /// calls and results do).
    #[serde(default)]
    pub forward_subagent_text: Option<bool>,
}

/// `initialize.systemPrompt`: one string or several, joined.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum SystemPromptIn {
    One(String),
    Many(Vec<String>),
}

impl SystemPromptIn {
    /// The prompt's text (parts joined by blank lines).
    pub fn text(&self) -> String {
        match self {
            SystemPromptIn::One(s) => s.clone(),
            SystemPromptIn::Many(v) => v.join("\n\n"),
        }
    }
}

/// The `response` of a `control_response` the SDK writes.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum ControlResponseIn {
    Success {
        request_id: String,
        /// A [`CanUseToolAnswer`] for `can_use_tool`; a hook's answer
        /// (the JSON a command hook prints) for `hook_callback`.
        #[serde(default)]
        response: Option<Value>,
    },
    Error {
        request_id: String,
        #[serde(default)]
        error: Option<String>,
    },
}

/// The SDK's answer to `can_use_tool`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CanUseToolAnswer {
    /// `allow` or `deny`.
    pub behavior: String,
    #[serde(default)]
    pub updated_input: Option<Value>,
    #[serde(default)]
    pub message: Option<String>,
    /// Deny and stop the turn.
    #[serde(default)]
    pub interrupt: Option<bool>,
}
