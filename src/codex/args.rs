//! `pirn exec`'s command line: Codex's `codex exec` flags as the Codex
//! SDK (`@openai/codex-sdk` 0.163.0, its `exec.ts`) passes them, parsed
//! once into [`ExecArgs`] and then into a [`CodexSetup`] — pirn's init config,
//! the send's options and what the surface itself needs — or refused with
//! an [`ExecError`] that names the flag and why.
//!
//! What maps: `--model`, `--sandbox` (`read-only` offers no write tools
//! and a read-only sandbox, `workspace-write` is pirn's default,
//! `danger-full-access` needs the operator's `PIRN_SANDBOX=off` or
//! `--dangerously-bypass-approvals-and-sandbox`), `--cd`, `--add-dir`,
//! `--skip-git-repo-check`, `--output-schema`, `--output-last-message`,
//! `resume ID|--last`, and the `--config` keys in [`CONFIG_KEYS`]. What
//! cannot (images, other approval policies, web search, the other config
//! keys) is refused; protocol/codex.md has the table.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use crate::wire::{ApprovalMode, InitConfig, SandboxMode};

/// `pirn exec [FLAGS] [PROMPT|-]` and `pirn exec [FLAGS] resume ID|--last
/// [PROMPT|-]`. The flags may stand before or after `resume`.
#[derive(Args, Debug, Clone, Default)]
#[command(args_conflicts_with_subcommands = false, subcommand_negates_reqs = true)]
pub struct ExecArgs {
    /// Write Codex's thread events (JSONL) on stdout instead of the final
    /// message.
    #[arg(long = "experimental-json", alias = "json", global = true)]
    pub json: bool,
    /// Model identifier sent to the endpoint [env: PIRN_MODEL; default: local].
    #[arg(long, short = 'm', global = true)]
    pub model: Option<String>,
    /// read-only, workspace-write (default) or danger-full-access.
    #[arg(long, short = 's', global = true, value_name = "MODE")]
    pub sandbox: Option<String>,
    /// The workspace (default: the current directory).
    #[arg(long = "cd", short = 'C', global = true, value_name = "DIR")]
    pub cd: Option<PathBuf>,
    /// Another directory the tools may write to (repeatable).
    #[arg(long, global = true, value_name = "DIR")]
    pub add_dir: Vec<PathBuf>,
    /// Run outside a git repository too (otherwise refused, as Codex does).
    #[arg(long, global = true)]
    pub skip_git_repo_check: bool,
    /// A JSON Schema file the final message must satisfy.
    #[arg(long, global = true, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,
    /// Also write the final message to this file.
    #[arg(long, short = 'o', global = true, value_name = "FILE")]
    pub output_last_message: Option<PathBuf>,
    /// A Codex config override, `key=value` with a TOML value (repeatable).
    #[arg(long = "config", short = 'c', global = true, value_name = "KEY=VALUE")]
    pub config: Vec<String>,
    /// An image to attach (refused: pirn's model input is text).
    #[arg(long, short = 'i', global = true, value_name = "FILE")]
    pub image: Vec<PathBuf>,
    /// Where the thread comes from (a label; pirn stores no such thing).
    #[arg(long, global = true, value_name = "SOURCE")]
    pub thread_source: Option<String>,
    /// OpenAI's cyber access programme (refused: no such thing here).
    #[arg(long, global = true, value_name = "PROGRAM")]
    pub cyber_access_program: Option<String>,
    /// Codex's shorthand for workspace-write without asking: pirn's default.
    #[arg(long, global = true)]
    pub full_auto: bool,
    /// No sandbox (the operator's flag for danger-full-access); also skips
    /// the git repository check, as Codex's does.
    #[arg(long, alias = "yolo", global = true)]
    pub dangerously_bypass_approvals_and_sandbox: bool,
    /// Keep no session log (the thread cannot be resumed).
    #[arg(long, global = true)]
    pub ephemeral: bool,
    /// always, never or auto (pirn writes no colour).
    #[arg(long, global = true, value_name = "WHEN")]
    pub color: Option<String>,
    /// The prompt; `-` or none: read from stdin.
    pub prompt: Option<String>,
    #[command(subcommand)]
    pub resume: Option<ResumeCommand>,
}

/// `resume`: continue a stored thread.
#[derive(Subcommand, Debug, Clone)]
pub enum ResumeCommand {
    /// Continue the thread (pirn session) ID, or the workspace's latest.
    Resume {
        /// The thread id (`thread.started`'s `thread_id`).
        session_id: Option<String>,
        /// The prompt; `-` or none: read from stdin.
        prompt: Option<String>,
        /// The most recent thread of the workspace.
        #[arg(long)]
        last: bool,
    },
}

/// The `--config` keys `pirn exec` honours; any other is refused.
pub const CONFIG_KEYS: &[&str] = &[
    "openai_base_url",
    "model",
    "sandbox_mode",
    "approval_policy",
    "sandbox_workspace_write.network_access",
    "web_search",
];

/// Codex's words when the workspace is not in a git repository.
pub const NOT_A_REPOSITORY: &str = "Not inside a trusted directory and --skip-git-repo-check was not specified.";

/// Why a command line is refused (exit 1, as Codex's own refusals).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ExecError {
    #[error("{0}")]
    Refused(String),
}

fn refuse(why: impl Into<String>) -> ExecError {
    ExecError::Refused(why.into())
}

/// Which thread a run continues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// A new thread.
    New,
    /// This stored session.
    Id(String),
    /// The workspace's most recent stored session.
    Last,
}

/// What the command line asks for, checked.
#[derive(Debug, Clone)]
pub struct CodexSetup {
    pub config: InitConfig,
    pub output_schema: Option<serde_json::Value>,
    /// `--config openai_base_url=…`: the endpoint, over pirn's variables.
    pub base_url: Option<String>,
    pub resume: Resume,
    /// The prompt given on the command line (`None`: read stdin).
    pub prompt: Option<String>,
    pub json: bool,
    pub last_message_file: Option<PathBuf>,
}

/// A `--config` value: TOML (`"text"`, `true`, `30`), else the raw text
/// without surrounding quotes, as Codex reads it.
fn config_value(raw: &str) -> toml_edit::Value {
    let raw = raw.trim();
    raw.parse::<toml_edit::Value>().unwrap_or_else(|_| {
        let bare = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"'));
        let bare = bare.or_else(|| raw.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')));
        toml_edit::Value::from(bare.unwrap_or(raw))
    })
}

fn config_str(key: &str, raw: &str) -> Result<String, ExecError> {
    match config_value(raw) {
        toml_edit::Value::String(s) => Ok(s.value().clone()),
        other => Err(refuse(format!("--config {key}: expected a string, got {}", other.type_name()))),
    }
}

/// `--sandbox` and `sandbox_mode`: pirn's sandbox and whether the write
/// tools are offered. `bypass`: the operator allowed no sandbox.
fn sandbox_of(mode: &str, bypass: bool) -> Result<(SandboxMode, bool), ExecError> {
    match mode {
        "read-only" => Ok((SandboxMode::ReadOnly, false)),
        "workspace-write" => Ok((SandboxMode::WorkspaceWrite, true)),
        "danger-full-access" if bypass => Ok((SandboxMode::Off, true)),
        "danger-full-access" => Err(refuse(
            "--sandbox danger-full-access needs the operator's consent: PIRN_SANDBOX=off in the environment, \
             or --dangerously-bypass-approvals-and-sandbox",
        )),
        other => {
            Err(refuse(format!("--sandbox {other:?} is not one of read-only, workspace-write, danger-full-access")))
        }
    }
}

/// Whether `dir` lies in a git working tree (a `.git` entry in it or
/// above): read from the file system, nothing run.
pub fn in_git_repo(dir: &Path) -> bool {
    dir.ancestors().any(|d| d.join(".git").exists())
}

impl ExecArgs {
    /// Checks the command line and builds the setup. `operator_sandbox_off`:
    /// the environment's `PIRN_SANDBOX` is `off`.
    pub fn setup(&self, operator_sandbox_off: bool) -> Result<CodexSetup, ExecError> {
        if !self.image.is_empty() {
            return Err(refuse("--image: pirn sends the model text only; images are not supported"));
        }
        if self.cyber_access_program.is_some() {
            return Err(refuse("--cyber-access-program: an OpenAI programme pirn has no counterpart for"));
        }
        if let Some(c) = self.color.as_deref().filter(|c| !["always", "never", "auto"].contains(c)) {
            return Err(refuse(format!("--color {c:?} is not one of always, never, auto")));
        }
        let bypass = operator_sandbox_off || self.dangerously_bypass_approvals_and_sandbox;
        // Repeated keys: the last wins (as Codex reads them); the flags
        // beat `--config`.
        let mut model = None;
        let mut sandbox = None;
        let mut base_url = None;
        let mut network = None;
        for item in &self.config {
            let Some((key, raw)) = item.split_once('=') else {
                return Err(refuse(format!("--config {item:?}: expected key=value")));
            };
            let key = key.trim();
            match key {
                "openai_base_url" => base_url = Some(config_str(key, raw)?),
                "model" => model = Some(config_str(key, raw)?),
                "sandbox_mode" => sandbox = Some(config_str(key, raw)?),
                // Codex's exec asks no one whatever the policy (it sets
                // `never`); pirn exec likewise: the sandbox decides.
                "approval_policy" => match config_str(key, raw)?.as_str() {
                    "never" | "on-request" | "on-failure" | "untrusted" => {}
                    other => return Err(refuse(format!("--config approval_policy={other:?} is not a policy"))),
                },
                "sandbox_workspace_write.network_access" => match config_value(raw) {
                    toml_edit::Value::Boolean(b) => network = Some(*b.value()),
                    other => return Err(refuse(format!("--config {key}: expected true or false, got {other}"))),
                },
                "web_search" => match config_str(key, raw)?.as_str() {
                    "disabled" => {}
                    other => {
                        return Err(refuse(format!(
                            "--config web_search={other:?}: pirn has no web search; only \"disabled\" is supported"
                        )));
                    }
                },
                other => {
                    return Err(refuse(format!(
                        "--config {other}: not a setting pirn exec honours (it honours {})",
                        CONFIG_KEYS.join(", ")
                    )));
                }
            }
        }
        let model = self.model.clone().or(model);
        let sandbox = self.sandbox.clone().or(sandbox);
        let (sandbox, writes) = match sandbox.as_deref() {
            None if self.dangerously_bypass_approvals_and_sandbox => (SandboxMode::Off, true),
            None => (SandboxMode::WorkspaceWrite, true),
            Some(mode) => sandbox_of(mode, bypass)?,
        };
        let output_schema = match &self.output_schema {
            None => None,
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| refuse(format!("--output-schema {}: {e}", path.display())))?;
                Some(
                    serde_json::from_str(&text)
                        .map_err(|e| refuse(format!("--output-schema {}: not JSON: {e}", path.display())))?,
                )
            }
        };
        let (resume, prompt) = match &self.resume {
            None => (Resume::New, self.prompt.clone()),
            Some(ResumeCommand::Resume { session_id, prompt, last }) => match (session_id, last) {
                (Some(_), true) => return Err(refuse("resume: give a thread id or --last, not both")),
                (Some(id), false) => (Resume::Id(id.clone()), prompt.clone().or_else(|| self.prompt.clone())),
                // `resume --last PROMPT`: the one positional is the prompt.
                (None, true) => (Resume::Last, prompt.clone().or_else(|| self.prompt.clone())),
                (None, false) => return Err(refuse("resume: give the thread id to continue, or --last")),
            },
        };
        let here = std::env::current_dir().map_err(|e| refuse(format!("the current directory: {e}")))?;
        let cwd = match &self.cd {
            Some(d) => here.join(d),
            None => here,
        };
        let cwd = cwd.canonicalize().map_err(|e| refuse(format!("--cd {}: {e}", cwd.display())))?;
        if !self.skip_git_repo_check && !self.dangerously_bypass_approvals_and_sandbox && !in_git_repo(&cwd) {
            return Err(refuse(NOT_A_REPOSITORY));
        }
        let tools: &[&str] = if writes {
            &["read_file", "write_file", "edit_file", "glob", "grep", "bash"]
        } else {
            &["read_file", "glob", "grep", "bash"]
        };
        let config = InitConfig {
            model: crate::environment::model_or_default(model),
            system_prompt: crate::config::DEFAULT_SYSTEM_PROMPT.to_owned(),
            tools: tools.iter().map(|t| (*t).to_owned()).collect(),
            cwd: Some(cwd.to_string_lossy().into_owned()),
            sandbox: Some(sandbox),
            // Codex's sandboxes keep the network off unless asked.
            sandbox_network: Some(sandbox == SandboxMode::Off || network.unwrap_or(false)),
            persist: self.ephemeral.then_some(false),
            approval_mode: Some(ApprovalMode::FullAuto),
            allowed_paths: Some(self.add_dir.iter().map(|d| d.to_string_lossy().into_owned()).collect())
                .filter(|d: &Vec<String>| !d.is_empty()),
            traceparent: crate::environment::traceparent(),
            ..InitConfig::default()
        };
        Ok(CodexSetup {
            config,
            output_schema,
            base_url,
            resume,
            prompt: prompt.filter(|p| p != "-"),
            json: self.json,
            last_message_file: self.output_last_message.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct CodexCli {
        #[command(flatten)]
        exec: ExecArgs,
    }

    fn parse(args: &[&str]) -> ExecArgs {
        CodexCli::try_parse_from(std::iter::once("exec").chain(args.iter().copied())).unwrap().exec
    }

    #[test]
    fn the_sdks_command_lines_parse_with_flags_on_either_side_of_resume() {
        let a = parse(&[
            "--experimental-json",
            "--model",
            "m",
            "--sandbox",
            "read-only",
            "resume",
            "abc",
            "--image",
            "x.png",
        ]);
        assert!(a.json);
        assert!(matches!(&a.resume, Some(ResumeCommand::Resume { session_id: Some(id), .. }) if id == "abc"));
        assert_eq!(a.image, [PathBuf::from("x.png")]);
        let a = parse(&["--json", "-c", "approval_policy=\"never\"", "--skip-git-repo-check", "fix it"]);
        assert_eq!(a.prompt.as_deref(), Some("fix it"));
        let s = a.setup(false).unwrap();
        assert_eq!(s.prompt.as_deref(), Some("fix it"));
        assert_eq!(s.resume, Resume::New);
    }

    #[test]
    fn what_cannot_map_is_refused_by_name() {
        let refused = |args: &[&str]| parse(args).setup(false).unwrap_err().to_string();
        assert!(refused(&["--skip-git-repo-check", "--image", "a.png"]).contains("--image"));
        assert!(parse(&["--skip-git-repo-check", "-c", "approval_policy=\"on-request\""]).setup(false).is_ok());
        assert!(refused(&["--skip-git-repo-check", "-c", "approval_policy=\"sometimes\""]).contains("approval_policy"));
        assert!(refused(&["--skip-git-repo-check", "-c", "web_search=\"live\""]).contains("web search"));
        assert!(refused(&["--skip-git-repo-check", "-c", "model_reasoning_effort=\"high\""]).contains("honours"));
        assert!(refused(&["--skip-git-repo-check", "--sandbox", "danger-full-access"]).contains("PIRN_SANDBOX=off"));
        assert!(parse(&["--skip-git-repo-check", "--sandbox", "danger-full-access"]).setup(true).is_ok());
        assert!(refused(&["--skip-git-repo-check", "resume"]).contains("thread id"));
    }

    #[test]
    fn read_only_offers_no_write_tools_and_the_config_keys_land() {
        let a = parse(&[
            "--skip-git-repo-check",
            "-s",
            "read-only",
            "-c",
            "openai_base_url=\"http://127.0.0.1:9/v1\"",
            "-c",
            "sandbox_workspace_write.network_access=false",
        ]);
        let s = a.setup(false).unwrap();
        assert!(!s.config.tools.iter().any(|t| t == "write_file" || t == "edit_file"), "{:?}", s.config.tools);
        assert_eq!(s.config.sandbox, Some(SandboxMode::ReadOnly));
        assert_eq!(s.config.sandbox_network, Some(false));
        assert_eq!(s.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
        // The network is off unless asked; the last of repeated keys wins; bare strings lose their quotes.
        let s = parse(&["--skip-git-repo-check", "-c", "model=\"a\"", "-c", "model='b'"]).setup(false).unwrap();
        assert_eq!(s.config.model, "b");
        assert_eq!(s.config.sandbox_network, Some(false));
        let s = parse(&["--skip-git-repo-check", "-c", "sandbox_workspace_write.network_access=true"]).setup(false);
        assert_eq!(s.unwrap().config.sandbox_network, Some(true));
    }

    #[test]
    fn outside_a_git_repository_is_refused_unless_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap();
        let e = parse(&["--cd", d]).setup(false).unwrap_err().to_string();
        assert_eq!(e, NOT_A_REPOSITORY);
        assert!(parse(&["--cd", d, "--yolo"]).setup(false).is_ok(), "the bypass skips the check, as Codex's");
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        assert!(parse(&["--cd", d]).setup(false).is_ok());
    }
}
