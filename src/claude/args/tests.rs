//! Unit tests of `args`.

use super::*;

fn args(a: &[&str]) -> Result<ClaudeArgs, ArgsError> {
    ClaudeArgs::parse_from_args(&a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
}

#[test]
fn the_python_sdks_command_line_parses() {
    let a = args(&[
        "--output-format",
        "stream-json",
        "--verbose",
        "--system-prompt",
        "",
        "--allowedTools",
        "Read,Bash(git diff:*)",
        "--max-turns",
        "3",
        "--permission-prompt-tool",
        "stdio",
        "--resume=abc",
        "--input-format",
        "stream-json",
    ])
    .unwrap();
    assert_eq!(a.output_format, ClaudeOutputFormat::StreamJson);
    assert_eq!(a.input_format, InputFormat::StreamJson);
    assert_eq!(a.resume.as_deref(), Some("abc"));
    assert_eq!(a.permission_rules().allow, ["read_file", "bash(git diff*)"]);
}

#[test]
fn flags_pirn_cannot_honour_are_refused_by_name() {
    let e = args(&["-p", "--task-budget=5", "hi"]).unwrap_err();
    assert!(e.to_string().contains("--task-budget is not supported"), "{e}");
    assert_eq!(args(&["-p", "--fallback-model=m", "hi"]).unwrap().fallback_model.as_deref(), Some("m"));
    let a = args(&["-p", "--max-budget-usd=0.5", "--settings", "{}", "hi"]).unwrap();
    assert_eq!((a.max_budget_usd, a.settings.as_deref()), (Some(0.5), Some("{}")));
    assert!(args(&["-p", "--no-such-flag", "hi"]).is_err());
    assert!(args(&["--permission-prompt-tool", "mcp__x__ask", "-p", "hi"]).is_err());
}

#[test]
fn disallowed_tools_leave_the_set_and_patterns_become_deny_rules() {
    let a = args(&["-p", "--disallowedTools", "Write Bash(rm:*)", "hi"]).unwrap();
    assert_eq!(a.tool_set().unwrap(), ["read_file", "edit_file", "glob", "grep", "bash"]);
    assert_eq!(a.permission_rules().deny, ["bash(rm*)"]);
    assert!(args(&["-p", "--tools", "Read,WebFetch", "hi"]).unwrap().tool_set().is_err());
}

#[test]
fn claude_invocations_are_recognised() {
    let v = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert!(is_claude_invocation(&v(&["--output-format", "stream-json"]), false));
    assert!(is_claude_invocation(&v(&["-p", "hi"]), false));
    assert!(!is_claude_invocation(&v(&["--log", "debug"]), false));
    assert!(!is_claude_invocation(&v(&["run", "hi"]), false));
    assert!(is_claude_invocation(&v(&["--model", "m", "-p", "hi"]), true));
    assert!(!is_claude_invocation(&v(&["--model", "m", "hi"]), true));
}
