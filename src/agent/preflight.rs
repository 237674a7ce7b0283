//! Preflight: the first tool calls of a send, made by pirn itself before
//! the model's first answer, when the request makes them obvious.
//!
//! A request that names its files ("Fix the bug in calc.py so that
//! `python3 test_calc.py` passes") tells any competent agent where to start:
//! read those files, the local modules they import, and run the command
//! that shows the problem. A small model skips exactly these steps: the
//! eval's logs show it answering "the bug is that calc.py already exists"
//! without ever opening calc.py, re-reading `limits.py` instead of opening
//! the `defaults.py` it imports, and rewriting `main.py` unchanged without
//! once running the command whose ImportError the request mentions.
//!
//! Owns: choosing those calls ([`plan`]: at most [`MAX_FILES`] files named
//! in the request, resolved beneath the workspace, then at most
//! [`MAX_IMPORTED`] workspace modules they import, within a byte budget;
//! then the check command the request names, as [`super::verify`] reads it)
//! and nothing else. The calls are ordinary tool calls: the loop runs them
//! through the approval gate like the model's own (a call the policy would
//! not allow unasked is left out), emits their `tool_start` / `tool_end`
//! events, lists them in `tool_calls_made`, and puts them in the
//! conversation as an assistant message with those calls and their results,
//! so the model sees exactly what pirn did. Off with `config.preflight:
//! false`.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::SendStats;
use super::answer_check::Progress;
use super::tool_call::CallContext;
use crate::conversation::Conversation;
use crate::model::ToolCall;

/// Files named in the request that are read at most.
pub const MAX_FILES: usize = 4;
/// Workspace modules imported by those files that are read at most.
pub const MAX_IMPORTED: usize = 3;
/// Largest file read (bytes): larger ones are the model's to page through.
pub const MAX_FILE_BYTES: u64 = crate::tools::read_file::WHOLE_FILE_BYTES;
/// How long the request's own command may run, in ms.
pub const COMMAND_TIMEOUT_MS: u64 = 20_000;
/// Data files: read for a question about their content, not for a count
/// (a model counts lines it is shown badly, and better with a tool).
const DATA_EXTENSIONS: &[&str] = &["csv", "tsv", "log", "txt"];

/// The preflight calls for `request`, in order (reads, then the command).
/// `budget`: bytes of file content they may bring in (a quarter of the
/// context window, or less). `run_command`: the check command named in the
/// request, when the session may run it unasked. Ids are `pirn_pre_<n>`.
pub fn plan(request: &str, workspace: &Path, budget: usize, run_command: Option<&str>) -> Vec<ToolCall> {
    let counting = asks_for_a_count(request);
    let mut files: Vec<PathBuf> = Vec::new();
    let mut spent = 0usize;
    let mut take = |path: PathBuf, files: &mut Vec<PathBuf>| {
        let Ok(meta) = std::fs::metadata(&path) else { return };
        let len = usize::try_from(meta.len()).unwrap_or(usize::MAX);
        if !meta.is_file() || meta.len() > MAX_FILE_BYTES || spent + len > budget || files.contains(&path) {
            return;
        }
        spent += len;
        files.push(path);
    };
    for name in mentioned_files(request) {
        if files.len() >= MAX_FILES {
            break;
        }
        let is_data = Path::new(&name).extension().is_some_and(|e| DATA_EXTENSIONS.iter().any(|d| e == *d));
        if counting && is_data {
            continue;
        }
        if let Some(path) = locate(&name, workspace) {
            take(path, &mut files);
        }
    }
    // A rename: the file that defines the old name, and a search for its uses.
    let renaming = super::rename::pair(request).map(|(old, _)| old);
    if let Some(old) = &renaming
        && files.len() < MAX_FILES
    {
        let (uses, _) = crate::tools::references::find_uses(workspace, std::slice::from_ref(old), 50, &|| false);
        if let Some((path, _, _)) = uses.iter().find(|(_, _, line)| defines(line, old)) {
            take(path.clone(), &mut files);
        }
    }
    let named = files.clone();
    let mut imported = 0;
    for file in &named {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        for module in local_imports(file, &text, workspace) {
            if imported >= MAX_IMPORTED {
                break;
            }
            let before = files.len();
            take(module, &mut files);
            imported += files.len() - before;
        }
    }
    let py: Vec<&Path> =
        named.iter().map(PathBuf::as_path).filter(|p| p.extension().is_some_and(|e| e == "py")).collect();
    let probes = super::py_probe::commands(request, &py, workspace);
    let mut calls: Vec<ToolCall> = files
        .iter()
        .filter_map(|f| f.strip_prefix(workspace).ok())
        .map(|rel| json!({ "file_path": rel.to_string_lossy() }))
        .map(|args| ("read_file", args))
        .chain(renaming.map(|old| ("grep", json!({ "pattern": format!("\\b{old}\\b") }))))
        .chain(probes.into_iter().map(|c| ("bash", json!({ "command": c, "timeout_ms": COMMAND_TIMEOUT_MS }))))
        .chain(run_command.map(|c| ("bash", json!({ "command": c, "timeout_ms": COMMAND_TIMEOUT_MS }))))
        .enumerate()
        .map(|(i, (name, args))| ToolCall {
            id: format!("pirn_pre_{}", i + 1),
            name: name.to_owned(),
            arguments: args.to_string(),
        })
        .collect();
    calls.truncate(MAX_FILES + MAX_IMPORTED + 4);
    calls
}

/// True when `line` (trimmed) defines `name`: `def`, `class`, `function`,
/// `fn`, `const`/`let`/`var`, or `name = …` at the start of a line.
fn defines(line: &str, name: &str) -> bool {
    let line = line.trim_start();
    let rest = ["async def ", "def ", "class ", "function ", "fn ", "pub fn ", "const ", "let ", "var "]
        .iter()
        .find_map(|k| line.strip_prefix(k))
        .unwrap_or(line);
    rest.strip_prefix(name).is_some_and(|after| {
        let after = after.trim_start();
        (rest.len() < line.len() && !after.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
            || (after.starts_with('=') && !after.starts_with("=="))
    })
}

/// "How many …", "count …", "number of …": a question answered by counting.
fn asks_for_a_count(request: &str) -> bool {
    let lower = request.to_lowercase();
    ["how many", "count ", "number of"].iter().any(|p| lower.contains(p))
}

/// File names in `request` (`name.ext` with a source or data extension,
/// as the answer checks read them), in order, without repeats.
pub fn mentioned_files(request: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for token in request.split(|c: char| c.is_whitespace() || "`'\"()[]{},;<>*".contains(c)) {
        let token = token.trim_end_matches(['.', ':', '!', '?']).trim_start_matches("./");
        if super::answer_check::looks_like_file(token) && !out.iter().any(|t| t == token) {
            out.push(token.to_owned());
        }
    }
    out
}

/// The file `name` names beneath `workspace`: the path itself, else (a bare
/// name) the one file of that name in the tree. Resolved by the OS beneath
/// the workspace (no symlink out, no `..`); `None` when it does not exist,
/// is ambiguous or leaves the workspace.
pub(super) fn locate(name: &str, workspace: &Path) -> Option<PathBuf> {
    let confined = |p: &str| inside(Path::new(p), workspace);
    if let Some(p) = confined(name) {
        return Some(p);
    }
    if name.contains('/') {
        return None;
    }
    let mut found = ignore::WalkBuilder::new(workspace)
        .require_git(false)
        .build()
        .flatten()
        .take(crate::context::workspace::MAX_VISITED)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()) && e.file_name() == name)
        .map(|e| e.into_path());
    let first = found.next()?;
    if found.next().is_some() {
        return None;
    }
    let rel = first.strip_prefix(workspace).ok()?.to_string_lossy().into_owned();
    confined(&rel)
}

/// `path` (relative to `workspace`, or absolute) resolved by the OS beneath
/// the workspace, when it is a file there.
fn inside(path: &Path, workspace: &Path) -> Option<PathBuf> {
    crate::tools::confine::resolve(&path.to_string_lossy(), workspace, &[])
        .ok()
        .map(|c| c.path().to_path_buf())
        .filter(|p| p.starts_with(workspace) && p.is_file())
}

/// The workspace files that `file` imports: Python `import a.b` / `from a.b
/// import c` / `from . import c` (a module beside the file or at the root,
/// `a/b.py` or `a/b/__init__.py`), and JavaScript or TypeScript relative
/// `import … from "./x"` / `require("./x")`. Standard and installed modules
/// are not in the workspace, so they are never found.
pub fn local_imports(file: &Path, text: &str, workspace: &Path) -> Vec<PathBuf> {
    let dir = file.parent().unwrap_or(workspace);
    let ext = file.extension().and_then(|e| e.to_str()).unwrap_or("");
    let mut modules: Vec<PathBuf> = Vec::new();
    let mut add = |candidates: Vec<PathBuf>| {
        if let Some(p) = candidates.into_iter().find_map(|p| inside(&p, workspace))
            && p != file
            && !modules.contains(&p)
        {
            modules.push(p);
        }
    };
    for line in text.lines().map(str::trim) {
        match ext {
            "py" => {
                for (base, module) in python_imports(line) {
                    let roots: Vec<&Path> = if base { vec![dir] } else { vec![dir, workspace] };
                    let rel = module.replace('.', "/");
                    add(roots
                        .iter()
                        .flat_map(|r| [r.join(format!("{rel}.py")), r.join(&rel).join("__init__.py")])
                        .collect());
                }
            }
            "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" => {
                if let Some(spec) = js_import(line) {
                    let base = dir.join(spec);
                    let mut c = vec![base.clone()];
                    c.extend(["js", "ts", "jsx", "tsx", "mjs"].iter().map(|e| base.with_extension(e)));
                    c.extend(["index.js", "index.ts"].iter().map(|i| base.join(i)));
                    add(c);
                }
            }
            _ => {}
        }
    }
    modules
}

/// The modules a Python import line names, each with `true` when relative
/// to the file's package (`from .x import y`, `from . import y`).
fn python_imports(line: &str) -> Vec<(bool, String)> {
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    if let Some(rest) = line.strip_prefix("from ") {
        let Some((module, names)) = rest.split_once(" import ") else { return Vec::new() };
        let module = module.trim();
        let relative = module.starts_with('.');
        let module = module.trim_start_matches('.');
        if module.is_empty() {
            // `from . import a, b`: each name may be a module beside the file.
            return names
                .split(',')
                .map(|n| n.split(" as ").next().unwrap_or("").trim().trim_matches(['(', ')']))
                .filter(|n| ident(n))
                .map(|n| (true, n.to_owned()))
                .collect();
        }
        return if ident(module) { vec![(relative, module.to_owned())] } else { Vec::new() };
    }
    if let Some(rest) = line.strip_prefix("import ") {
        return rest
            .split(',')
            .map(|m| m.split(" as ").next().unwrap_or("").trim())
            .filter(|m| ident(m))
            .map(|m| (false, m.to_owned()))
            .collect();
    }
    Vec::new()
}

/// The relative module of a JavaScript import or require line (`./x`, `../y`).
fn js_import(line: &str) -> Option<&str> {
    if !(line.starts_with("import ") || line.contains("require(")) {
        return None;
    }
    let start = line.find(['"', '\''])?;
    let quote = line[start..].chars().next()?;
    let rest = &line[start + 1..];
    let spec = &rest[..rest.find(quote)?];
    Some(spec).filter(|s| s.starts_with("./") || s.starts_with("../"))
}

/// Runs the preflight of a send whose request `message` was just pushed:
/// the [`plan`]ned calls the session enables and its approval policy allows
/// unasked, as one assistant message of tool calls with their results
/// (events, approval, `tool_calls_made` as for the model's own calls).
/// Files read earlier in the session are not read again. Returns each
/// call's (signature, result), as the loop remembers an answer's calls.
pub async fn run(
    cx: &CallContext<'_>,
    conv: &mut Conversation,
    stats: &mut SendStats,
    progress: &mut Progress,
    message: &str,
) -> Vec<(String, String)> {
    let config = cx.config;
    let allowed = |name: &str, args: &serde_json::Value| super::tool_call::allowed_unasked(config, name, args);
    let command = super::verify::command_for(None, message)
        .filter(|c| allowed("bash", &json!({ "command": c })) && is_check_run(c));
    let window = config.window_known(conv.budget.learned_window).map(u64::from);
    let already: std::collections::HashSet<PathBuf> = conv.read_files.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let calls: Vec<ToolCall> = plan(message, &config.workspace, budget(window), command.as_deref())
        .into_iter()
        .filter(|c| {
            let args: serde_json::Value = serde_json::from_str(&c.arguments).unwrap_or_default();
            let seen = args
                .get("file_path")
                .and_then(|p| p.as_str())
                .is_some_and(|p| already.contains(&config.workspace.join(p)));
            !seen && allowed(&c.name, &args)
        })
        .collect();
    if calls.is_empty() {
        return Vec::new();
    }
    tracing::info!(calls = calls.len(), "preflight");
    // The request's own command is a look, not a change the model made.
    let results =
        super::tool_call::run_own(cx, conv, stats, &calls, |name, text| progress.record_look(name, text)).await;
    super::calls::still_valid(&calls, results)
}

/// A command worth running before any change: a script or a test run
/// (`python3 x.py`, `python3 -m unittest`, `pytest`, `node x.js`, `npm
/// test`, `go test`, `cargo test`), not a build or an install (`make`,
/// `bash x.sh`, `npm install`), whose effects the user asked for after
/// the change, if at all.
fn is_check_run(command: &str) -> bool {
    let words: Vec<&str> = command.split_whitespace().collect();
    matches!(words.as_slice(), ["python3" | "python" | "pytest" | "node", ..] | ["npm" | "go" | "cargo", "test", ..])
}

/// True when `calls` (an answer's) are preflight calls (see [`plan`]).
pub fn is_preflight(call: &ToolCall) -> bool {
    call.id.starts_with("pirn_pre_")
}

/// Bytes of file content a preflight may bring in, for a context window
/// of `window` tokens (unknown: 8 KiB): a quarter of it at 3 bytes a
/// token, at most 24 KiB.
pub fn budget(window: Option<u64>) -> usize {
    match window {
        Some(w) => usize::try_from(w.saturating_mul(3) / 4).unwrap_or(usize::MAX).min(24 * 1024),
        None => 8 * 1024,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    fn paths(calls: &[ToolCall]) -> Vec<String> {
        calls
            .iter()
            .map(|c| {
                let v: serde_json::Value = serde_json::from_str(&c.arguments).unwrap();
                format!("{}:{}", c.name, v.get("file_path").or(v.get("command")).unwrap().as_str().unwrap())
            })
            .collect()
    }

    #[test]
    fn named_files_then_their_local_imports_then_the_command() {
        let dir = ws(&[
            ("calc.py", "import os\nfrom helpers.util import x\n"),
            ("helpers/util.py", "x = 1\n"),
            ("test_calc.py", "import unittest\nfrom calc import add\n"),
            ("other.py", ""),
        ]);
        let root = dir.path().canonicalize().unwrap();
        let calls =
            plan("Running `python3 test_calc.py` fails. Fix calc.py.", &root, 8192, Some("python3 test_calc.py"));
        assert_eq!(
            paths(&calls),
            ["read_file:test_calc.py", "read_file:calc.py", "read_file:helpers/util.py", "bash:python3 test_calc.py"]
        );
        assert!(calls.iter().all(is_preflight));
    }

    #[test]
    fn bare_names_resolve_only_when_unique_and_never_outside() {
        let dir = ws(&[("src/a/parse.py", ""), ("src/b/parse.py", ""), ("src/dates.py", "")]);
        let root = dir.path().canonicalize().unwrap();
        assert_eq!(paths(&plan("Where is dates.py? And parse.py?", &root, 8192, None)), ["read_file:src/dates.py"]);
        let outside = ws(&[("secret.py", "KEY = 1\n")]);
        std::os::unix::fs::symlink(outside.path().join("secret.py"), root.join("link.py")).unwrap();
        assert!(plan("Read link.py", &root, 8192, None).is_empty(), "a symlink out is never read");
        assert!(plan("Read ../secret.py", &root, 8192, None).is_empty());
    }

    #[test]
    fn budget_size_and_counts_bound_it() {
        let big = "x".repeat(9000);
        let dir = ws(&[("big.py", &big), ("a.py", "1234"), ("data.csv", "h\n1\n")]);
        let root = dir.path().canonicalize().unwrap();
        assert!(plan("Explain big.py", &root, 100_000, None).is_empty(), "over MAX_FILE_BYTES");
        assert!(plan("Explain a.py", &root, 3, None).is_empty(), "over the budget");
        assert!(plan("How many rows does data.csv have?", &root, 8192, None).is_empty(), "a count uses a tool");
        assert_eq!(paths(&plan("What is in data.csv?", &root, 8192, None)), ["read_file:data.csv"]);
    }

    #[test]
    fn a_rename_reads_the_definition_and_searches_the_uses() {
        let dir = ws(&[
            ("geometry.py", "class Circle:\n    def get_area(self):\n        return 1\n"),
            ("main.py", "print(c.get_area())\n"),
        ]);
        let root = dir.path().canonicalize().unwrap();
        let calls = plan("Rename the method get_area of Circle to area.", &root, 8192, None);
        assert_eq!(paths(&calls[..1]), ["read_file:geometry.py"]);
        assert_eq!(calls[1].name, "grep");
        assert!(calls[1].arguments.contains(r#"\\bget_area\\b"#), "{}", calls[1].arguments);
        assert!(defines("    def get_area(self):", "get_area") && defines("TIMEOUT = 15", "TIMEOUT"));
        assert!(!defines("x = get_area()", "get_area") && !defines("TIMEOUT == 15", "TIMEOUT"));
    }

    #[test]
    fn import_forms() {
        assert_eq!(python_imports("from . import a, b as c"), [(true, "a".into()), (true, "b".into())]);
        assert_eq!(python_imports("from .pkg.mod import f"), [(true, "pkg.mod".into())]);
        assert_eq!(python_imports("import x.y as z, w"), [(false, "x.y".into()), (false, "w".into())]);
        assert_eq!(js_import("import { f } from './lib/util';"), Some("./lib/util"));
        assert_eq!(js_import("const x = require(\"../x\")"), Some("../x"));
        assert_eq!(js_import("import React from 'react'"), None);
    }
}
