//! After a write: does the file still parse? A warning the model reads in
//! the tool result, the cheap form of the diagnostics an editor shows.
//!
//! Owns: [`warning`]. JSON is parsed in-process (`serde_json`). Python is
//! parsed by `python3 -I` with `ast.parse` (parsing runs none of the
//! file's code), with an empty environment, the source on stdin and a
//! 3-second limit; without `python3` on `PATH` nothing is said. Other
//! files are not checked.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Bytes of a file, at most, that are checked.
const MAX_BYTES: usize = 512 * 1024;
/// How long `python3` may take.
const PYTHON_LIMIT: Duration = Duration::from_secs(3);

const PARSE: &str = "import ast, sys\ntry:\n    ast.parse(sys.stdin.read())\nexcept SyntaxError as e:\n    print(f'{type(e).__name__}: {e.msg} (line {e.lineno})')\n";

/// `"\nWarning: …"` when `content`, the new text of `path` (shown to the
/// model as `shown`), no longer parses; `None` when it does or cannot be
/// checked.
pub fn warning(path: &Path, shown: &str, content: &str) -> Option<String> {
    let problem = problem(path, content)?;
    Some(format!("\nWarning: {shown} does not parse now: {problem}. Read it and fix it."))
}

/// What the parser says of `content`, the text of `path`, when it does
/// not parse; `None` when it does or cannot be checked (see [`warning`]).
pub fn problem(path: &Path, content: &str) -> Option<String> {
    if content.len() > MAX_BYTES {
        return None;
    }
    match path.extension().and_then(|e| e.to_str())? {
        "json" => serde_json::from_str::<serde_json::Value>(content).err().map(|e| e.to_string()),
        "py" => python(content),
        _ => None,
    }
}

/// [`warning`] for the file a tool just wrote, read back through the
/// workspace confinement; empty when there is nothing to say.
pub fn after_write(ctx: &super::ToolContext, file_path: &str) -> String {
    let Ok(target) = ctx.resolve(file_path) else { return String::new() };
    let Ok(content) = ctx.read_text(&target, MAX_BYTES as u64 + 1) else { return String::new() };
    warning(target.path(), &ctx.display(target.path()), &content).unwrap_or_default()
}

/// Compares two sources given on stdin, separated by a NUL.
const SAME_AST: &str = "import ast, sys\na, b = sys.stdin.read().split('\\0', 1)\ntry:\n    print(ast.dump(ast.parse(a)) == ast.dump(ast.parse(b)))\nexcept SyntaxError:\n    print(False)\n";

/// True when `a` and `b` are the same code of `path`'s kind, only laid out
/// differently: Python with the same syntax tree (`python3 -I`, as
/// [`warning`] runs it), JSON with the same value. `false` when they differ
/// or cannot be compared (other kinds, no `python3`, too large).
pub fn same_code(path: &Path, a: &str, b: &str) -> bool {
    if a.len() > MAX_BYTES || b.len() > MAX_BYTES || a.contains('\0') || b.contains('\0') {
        return false;
    }
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => matches!(
            (serde_json::from_str::<serde_json::Value>(a), serde_json::from_str::<serde_json::Value>(b)),
            (Ok(x), Ok(y)) if x == y
        ),
        Some("py") => run_python(SAME_AST, &format!("{a}\0{b}")).is_some_and(|out| out == "True"),
        _ => false,
    }
}

fn python(content: &str) -> Option<String> {
    run_python(PARSE, content)
}

/// Runs `script` under `python3 -I` with an empty environment and `input`
/// on stdin, within [`PYTHON_LIMIT`]; its trimmed output, `None` when empty
/// or when it could not run.
fn run_python(script: &str, input: &str) -> Option<String> {
    let mut child = Command::new("python3")
        .args(["-I", "-c", script])
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let source = input.to_owned();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(source.as_bytes());
    });
    let deadline = Instant::now() + PYTHON_LIMIT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let _ = writer.join();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
    let out = out.trim();
    (!out.is_empty()).then(|| out.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_json_and_python_are_named() {
        assert!(warning(Path::new("a.json"), "a.json", "{\"a\": 1}").is_none());
        let w = warning(Path::new("a.json"), "a.json", "{\"a\": 1").unwrap();
        assert!(w.contains("a.json does not parse now"), "{w}");
        assert!(warning(Path::new("a.txt"), "a.txt", "{").is_none());
        if Command::new("python3").arg("-V").output().is_ok() {
            assert!(warning(Path::new("m.py"), "m.py", "def f():\n    return 1\n").is_none());
            let w = warning(Path::new("m.py"), "m.py", "    print(1)\nx = 2\n").unwrap();
            assert!(w.contains("IndentationError: unexpected indent (line 1)"), "{w}");
            let py = Path::new("m.py");
            assert!(same_code(py, "x = \"a\"\n\n\ny = [1,2]\n", "x = 'a'\ny = [1, 2]"));
            assert!(!same_code(py, "x = 'a'\n", "x = 'b'\n"));
            assert!(!same_code(py, "x = (\n", "x = (\n"), "what does not parse is not compared");
        }
        assert!(same_code(Path::new("a.json"), "{\"a\": 1, \"b\": [1]}", "{\"b\":[1],\"a\":1}"));
        assert!(!same_code(Path::new("a.txt"), "a", "a "));
    }
}
