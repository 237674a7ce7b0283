//! What the model may do without asking: approval modes, permission rules,
//! and the broker that waits for a host's answer.
//!
//! Owns: [`ApprovalMode`] (`full-auto`, `auto-edit`, `suggest`, `plan`), the
//! `config.permissions` rules (`bash(git push*)`, `write_file(.env*)`,
//! `read_file(secrets/**)`; deny beats ask beats allow), the [`Policy`] that
//! turns a tool call into a [`PolicyVerdict`]; its child [`broker`] matches
//! `permission_response` requests (pirn's opt-in extension) to the calls
//! waiting for them.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;

pub use crate::wire::{ApprovalMode, PermissionRules};

pub mod broker;

impl ApprovalMode {
    /// Parses `full-auto`, `auto-edit`, `suggest`, `plan` (also with `_`).
    pub fn parse(s: &str) -> Option<ApprovalMode> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "full-auto" => Some(ApprovalMode::FullAuto),
            "auto-edit" => Some(ApprovalMode::AutoEdit),
            "suggest" => Some(ApprovalMode::Suggest),
            "plan" => Some(ApprovalMode::Plan),
            _ => None,
        }
    }

    /// The name used in messages (`suggest`, …).
    pub fn name(self) -> &'static str {
        match self {
            ApprovalMode::FullAuto => "full-auto",
            ApprovalMode::AutoEdit => "auto-edit",
            ApprovalMode::Suggest => "suggest",
            ApprovalMode::Plan => "plan",
        }
    }
}

/// One compiled rule.
#[derive(Debug, Clone)]
struct Rule {
    text: String,
    tool: String,
    pattern: Option<GlobMatcher>,
}

impl Rule {
    /// `tool` or `tool(glob)`. For `bash` the glob is matched against the
    /// command line and `*` crosses `/`; for the file tools it is matched
    /// against the workspace-relative path and `*` stays within one directory
    /// (`**` crosses).
    fn parse(text: &str) -> Result<Rule, RuleError> {
        let t = text.trim();
        let (tool, pattern) = match t.find('(') {
            None => (t, None),
            Some(open) => {
                let Some(inner) = t[open + 1..].strip_suffix(')') else {
                    return Err(RuleError::Shape(text.to_owned()));
                };
                (&t[..open], Some(inner))
            }
        };
        let tool = tool.trim();
        let mcp = tool.starts_with(crate::mcp::client::PREFIX);
        if !crate::tools::ALL_TOOLS.contains(&tool) && tool != "*" && !mcp {
            return Err(RuleError::UnknownTool { rule: text.to_owned(), tool: tool.to_owned() });
        }
        let pattern = match pattern {
            None => None,
            Some(p) => Some(
                GlobBuilder::new(p.trim())
                    .literal_separator(tool != "bash" && !mcp)
                    .build()
                    .map_err(|e| RuleError::Glob { rule: text.to_owned(), message: e.to_string() })?
                    .compile_matcher(),
            ),
        };
        Ok(Rule { text: t.to_owned(), tool: tool.to_owned(), pattern })
    }

    fn matches(&self, tool: &str, subject: Option<&str>) -> bool {
        // `*` is any tool; `mcp__fs__*` any tool of server fs.
        let named = match self.tool.strip_suffix('*') {
            Some(prefix) => tool.starts_with(prefix),
            None => self.tool == tool,
        };
        if !named {
            return false;
        }
        match (&self.pattern, subject) {
            (None, _) => true,
            (Some(p), Some(s)) => p.is_match(s),
            (Some(_), None) => false,
        }
    }
}

/// A `config.permissions` rule that cannot be used (fails `init`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// Not `tool` or `tool(pattern)`.
    #[error("permission rule {0:?} must look like tool(pattern)")]
    Shape(String),
    /// The tool part names no tool pirn has (nor `*`).
    #[error("permission rule {rule:?} names an unknown tool {tool:?}")]
    UnknownTool { rule: String, tool: String },
    /// The pattern is not a valid glob.
    #[error("permission rule {rule:?}: {message}")]
    Glob { rule: String, message: String },
}

/// What to do with a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyVerdict {
    Allow,
    /// Needs the host's approval; the reason says why.
    Ask(String),
    /// Refused; the reason says why.
    Deny(String),
}

/// The session's approval policy.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub mode: ApprovalMode,
    allow: Vec<Rule>,
    deny: Vec<Rule>,
    ask: Vec<Rule>,
}

impl Policy {
    /// Compiles the rules. Errors name the bad rule.
    pub fn new(mode: ApprovalMode, rules: &PermissionRules) -> Result<Policy, RuleError> {
        let compile = |list: &[String]| list.iter().map(|r| Rule::parse(r)).collect::<Result<Vec<_>, _>>();
        Ok(Policy { mode, allow: compile(&rules.allow)?, deny: compile(&rules.deny)?, ask: compile(&rules.ask)? })
    }

    /// Tools the mode lets the model see (plan mode hides writes and bash).
    pub fn visible(&self, tool: &str) -> bool {
        self.mode != ApprovalMode::Plan || !writes(tool)
    }

    /// The verdict for calling `tool` with `args` in `workspace`.
    ///
    /// A file tool's path is matched twice, as written and as the OS
    /// resolves it beneath the workspace, and the stricter verdict holds:
    /// `deny: read_file(secret/**)` also denies `s -> secret/key.txt`.
    pub fn check(&self, tool: &str, args: &Value, workspace: &Path) -> PolicyVerdict {
        let written = self.by_rules(tool, subject(tool, args, workspace).as_deref());
        let verdict = match resolved_subject(tool, args, workspace) {
            Some(real) => stricter(written, self.by_rules(tool, Some(&real))),
            None => written,
        };
        if let Some(verdict) = verdict {
            return verdict;
        }
        let mode = self.mode.name();
        match self.mode {
            ApprovalMode::FullAuto => PolicyVerdict::Allow,
            ApprovalMode::AutoEdit if tool == "bash" => {
                PolicyVerdict::Ask(format!("bash (execute) requires approval in {mode} mode"))
            }
            ApprovalMode::Suggest if tool == "bash" => {
                PolicyVerdict::Ask(format!("bash (execute) requires approval in {mode} mode"))
            }
            ApprovalMode::Suggest if writes(tool) => {
                PolicyVerdict::Ask(format!("{tool} (write) requires approval in {mode} mode"))
            }
            ApprovalMode::Plan if writes(tool) => {
                PolicyVerdict::Deny(format!("{tool} is not allowed in plan mode: read, then write the plan"))
            }
            _ => PolicyVerdict::Allow,
        }
    }
}

impl Policy {
    /// What the rules say of `tool` on `subject` (deny beats ask beats
    /// allow); `None` when no rule matches and the mode decides.
    fn by_rules(&self, tool: &str, subject: Option<&str>) -> Option<PolicyVerdict> {
        if let Some(rule) = self.deny.iter().find(|r| r.matches(tool, subject)) {
            return Some(PolicyVerdict::Deny(format!("{tool} is denied by the rule {}", rule.text)));
        }
        if let Some(rule) = self.ask.iter().find(|r| r.matches(tool, subject)) {
            return Some(PolicyVerdict::Ask(format!("{tool} requires approval by the rule {}", rule.text)));
        }
        self.allow.iter().any(|r| r.matches(tool, subject)).then_some(PolicyVerdict::Allow)
    }

    /// The verdict for calling MCP tool `tool` with `args`: the rules first
    /// (a rule's pattern is matched against the arguments as compact JSON),
    /// then the mode. An MCP tool can do anything, so unless its server
    /// marks it read-only it is treated like `bash`: asked in `auto-edit` and
    /// `suggest`, refused in `plan`.
    pub fn check_mcp(&self, tool: &str, args: &Value, read_only: bool) -> PolicyVerdict {
        if let Some(verdict) = self.by_rules(tool, Some(&args.to_string())) {
            return verdict;
        }
        let mode = self.mode.name();
        match self.mode {
            _ if read_only => PolicyVerdict::Allow,
            ApprovalMode::FullAuto => PolicyVerdict::Allow,
            ApprovalMode::Plan => {
                PolicyVerdict::Deny(format!("{tool} is not allowed in plan mode (not marked read-only)"))
            }
            ApprovalMode::AutoEdit | ApprovalMode::Suggest => PolicyVerdict::Ask(format!(
                "{tool} (an MCP tool not marked read-only) requires approval in {mode} mode"
            )),
        }
    }
}

/// True for tools that change files or run commands.
fn writes(tool: &str) -> bool {
    matches!(tool, "write_file" | "edit_file" | "bash")
}

/// What a rule's pattern is matched against: the command for bash, the
/// workspace-relative path for file tools (absolute when outside).
fn subject(tool: &str, args: &Value, workspace: &Path) -> Option<String> {
    if tool == "bash" {
        return args.get("command").and_then(Value::as_str).map(str::to_owned);
    }
    let field = path_field(tool).unwrap_or("path");
    let raw = args.get(field).and_then(Value::as_str).unwrap_or(".");
    let joined = if Path::new(raw).is_absolute() { Path::new(raw).to_path_buf() } else { workspace.join(raw) };
    let mut clean = std::path::PathBuf::new();
    for c in joined.components() {
        match c {
            std::path::Component::ParentDir => {
                clean.pop();
            }
            std::path::Component::CurDir => {}
            other => clean.push(other.as_os_str()),
        }
    }
    Some(match clean.strip_prefix(workspace) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => clean.display().to_string(),
    })
}

/// For a file tool, its path as the OS resolves it beneath the workspace
/// (workspace-relative), when that differs from the written one.
fn resolved_subject(tool: &str, args: &Value, workspace: &Path) -> Option<String> {
    let field = path_field(tool)?;
    let raw = args.get(field).and_then(Value::as_str).unwrap_or(".");
    let real = crate::tools::confine::resolve(raw, workspace, &[]).ok()?;
    let rel = real.path().strip_prefix(workspace).ok()?;
    let rel = if rel.as_os_str().is_empty() { ".".to_owned() } else { rel.display().to_string() };
    (Some(&rel) != subject(tool, args, workspace).as_ref()).then_some(rel)
}

/// The argument holding a file tool's path.
fn path_field(tool: &str) -> Option<&'static str> {
    match tool {
        "read_file" | "write_file" | "edit_file" => Some("file_path"),
        "glob" | "grep" => Some("path"),
        _ => None,
    }
}

/// The stricter of two rule verdicts: deny, then ask, then none (the mode
/// decides), then allow.
fn stricter(a: Option<PolicyVerdict>, b: Option<PolicyVerdict>) -> Option<PolicyVerdict> {
    let rank = |v: &Option<PolicyVerdict>| match v {
        Some(PolicyVerdict::Deny(_)) => 3,
        Some(PolicyVerdict::Ask(_)) => 2,
        None => 1,
        Some(PolicyVerdict::Allow) => 0,
    };
    if rank(&b) > rank(&a) { b } else { a }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(mode: ApprovalMode, allow: &[&str], deny: &[&str], ask: &[&str]) -> Policy {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
        Policy::new(mode, &PermissionRules { allow: s(allow), deny: s(deny), ask: s(ask) }).unwrap()
    }

    #[test]
    fn modes() {
        let ws = Path::new("/ws");
        let bash = json!({"command": "ls"});
        let write = json!({"file_path": "a.txt", "content": ""});
        let read = json!({"file_path": "a.txt"});
        let p = policy(ApprovalMode::FullAuto, &[], &[], &[]);
        assert_eq!(p.check("bash", &bash, ws), PolicyVerdict::Allow);
        let p = policy(ApprovalMode::AutoEdit, &[], &[], &[]);
        assert!(matches!(p.check("bash", &bash, ws), PolicyVerdict::Ask(_)));
        assert_eq!(p.check("write_file", &write, ws), PolicyVerdict::Allow);
        let p = policy(ApprovalMode::Suggest, &[], &[], &[]);
        assert!(matches!(p.check("write_file", &write, ws), PolicyVerdict::Ask(_)));
        assert_eq!(p.check("read_file", &read, ws), PolicyVerdict::Allow);
        let p = policy(ApprovalMode::Plan, &[], &[], &[]);
        assert!(matches!(p.check("edit_file", &write, ws), PolicyVerdict::Deny(_)));
        assert!(!p.visible("bash") && p.visible("grep"));
    }

    #[test]
    fn rules_deny_beats_ask_beats_allow() {
        let ws = Path::new("/ws");
        let p = policy(
            ApprovalMode::FullAuto,
            &["bash(git *)"],
            &["bash(git push*)", "read_file(secrets/**)"],
            &["bash(git commit*)", "write_file(.env*)"],
        );
        assert!(matches!(p.check("bash", &json!({"command": "git push origin main"}), ws), PolicyVerdict::Deny(_)));
        assert!(matches!(p.check("bash", &json!({"command": "git commit -m x"}), ws), PolicyVerdict::Ask(_)));
        assert_eq!(p.check("bash", &json!({"command": "git status"}), ws), PolicyVerdict::Allow);
        assert!(matches!(
            p.check("read_file", &json!({"file_path": "./secrets/a/key.pem"}), ws),
            PolicyVerdict::Deny(_)
        ));
        assert!(matches!(p.check("read_file", &json!({"file_path": "/ws/secrets/key"}), ws), PolicyVerdict::Deny(_)));
        assert_eq!(p.check("read_file", &json!({"file_path": "src/secrets.rs"}), ws), PolicyVerdict::Allow);
        assert!(matches!(p.check("write_file", &json!({"file_path": ".env.local"}), ws), PolicyVerdict::Ask(_)));
        let strict = policy(ApprovalMode::Suggest, &["bash(cargo test*)"], &[], &[]);
        assert_eq!(strict.check("bash", &json!({"command": "cargo test --all"}), ws), PolicyVerdict::Allow);
        assert!(
            Policy::new(
                ApprovalMode::FullAuto,
                &PermissionRules { deny: vec!["teleport(x)".into()], ..Default::default() }
            )
            .is_err()
        );
        assert!(
            Policy::new(ApprovalMode::FullAuto, &PermissionRules { deny: vec!["bash(x".into()], ..Default::default() })
                .is_err()
        );
    }
}
