//! Python probes: commands the preflight runs for a question that Python
//! itself answers better than a small model reading code.
//!
//! The eval's logs show two kinds of question a 1.5B model gets wrong with
//! the right file in front of it: counting definitions ("How many methods
//! does the Stack class define?" answered 3 after grep listed six `def`
//! lines, one of them outside the class) and a value computed from code
//! ("What does get_limit() return?" answered 24, a constant the function
//! multiplies by 4). Python answers both exactly: `ast` counts definitions
//! per class, and calling the function gives its value.
//!
//! Owns: choosing those commands ([`commands`]) and nothing else. They are
//! ordinary `bash` calls of the preflight (see [`super::preflight`]): run
//! under the sandbox and the approval policy like the model's own, shown
//! to the model with their output.

use std::path::Path;

/// The script that outlines Python files: per file, each class with its
/// methods and how many are named `test…`, then the top-level functions.
const OUTLINE: &str = r#"import ast, sys
def names(body):
    return [n.name for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
def tests(found):
    t = [n for n in found if n.startswith("test")]
    return f"; {len(t)} of them named test*" if t else ""
for path in sys.argv[1:]:
    tree = ast.parse(open(path).read())
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    for c in classes:
        m = names(c.body)
        print(f"{path}: class {c.name} defines {len(m)} methods: {', '.join(m)}{tests(m)}")
    f = names(tree.body)
    print(f"{path}: {len(f)} top-level functions (outside any class): {', '.join(f)}{tests(f)}")
    print(f"{path}: {len(classes)} classes")"#;

/// The probe commands for `request`, whose named Python files are `py`
/// (absolute, beneath `workspace`): an outline for a question that counts
/// definitions, a call for a question about what a function returns.
pub fn commands(request: &str, py: &[&Path], workspace: &Path) -> Vec<String> {
    let rel: Vec<String> = py
        .iter()
        .filter_map(|p| p.strip_prefix(workspace).ok())
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| p.chars().all(|c| c.is_alphanumeric() || "_-./".contains(c)))
        .collect();
    if rel.is_empty() {
        return Vec::new();
    }
    let lower = request.to_lowercase();
    let mut out = Vec::new();
    let counting = ["how many", "number of", "count "].iter().any(|w| lower.contains(w));
    if counting && ["method", "function", "class", "test", "def"].iter().any(|w| lower.contains(w)) {
        out.push(format!("python3 -I - {} <<'PIRN_PY'\n{OUTLINE}\nPIRN_PY", rel.join(" ")));
    }
    if let Some(call) = asked_call(request) {
        let module = &rel[0];
        let (dir, file) = module.rsplit_once('/').unwrap_or((".", module));
        let name = file.trim_end_matches(".py");
        let function = call.split('(').next().unwrap_or("");
        out.push(format!(
            "python3 -I - <<'PIRN_PY'\nimport sys\nsys.path.insert(0, {dir:?})\nfrom {name} import {function}\n\
             print(repr({call}))\nPIRN_PY"
        ));
    }
    out
}

/// The call a question asks the value of: "What does `f(x)` return?",
/// "What value does f() in m.py return?": the call as written, when its
/// name is an identifier and its arguments are literals (numbers, quoted
/// strings), so running it runs nothing the request did not spell out.
fn asked_call(request: &str) -> Option<String> {
    let lower = request.to_lowercase();
    let question = request.trim_end().ends_with('?') || ["what", "which"].iter().any(|w| lower.starts_with(w));
    if !question || !(lower.contains("return") || lower.contains("value of")) {
        return None;
    }
    let open = request.find('(')?;
    let start = request[..open].rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    let name = &request[start..open];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let close = open + request[open..].find(')')?;
    let args = &request[open + 1..close];
    // One line only: a line break inside the quotes could end the heredoc
    // the call is sent in and run the rest as shell.
    if args.chars().any(char::is_control) {
        return None;
    }
    let literal = |a: &str| {
        let a = a.trim();
        a.is_empty()
            || a.parse::<f64>().is_ok()
            || (a.len() >= 2
                && ((a.starts_with('\'') && a.ends_with('\'')) || (a.starts_with('"') && a.ends_with('"')))
                && !a[1..a.len() - 1].contains(['\'', '"', '\\']))
    };
    args.split(',').all(literal).then(|| format!("{name}({args})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_about_a_call() {
        let ask = |r: &str| asked_call(r);
        assert_eq!(ask("What value does get_limit() in limits.py return?").as_deref(), Some("get_limit()"));
        assert_eq!(ask("What does greet('Ada') in greet.py return?").as_deref(), Some("greet('Ada')"));
        assert_eq!(ask("What does area(2, 3.5) return?").as_deref(), Some("area(2, 3.5)"));
        assert_eq!(ask("What does run(os.system('x')) return?"), None, "only literal arguments");
        assert_eq!(ask("Fix total() in cart.py so it returns the sum."), None, "not a question");
        assert_eq!(ask("What does main.py print?"), None, "no call");
        let attack = "What does f('x\nPIRN_PY\ntouch pwned\n') in m.py return?";
        assert_eq!(ask(attack), None, "a line break in a literal could end the heredoc");
    }

    #[test]
    fn commands_for_counts_and_calls() {
        let ws = Path::new("/ws");
        let file = Path::new("/ws/src/limits.py");
        let c = commands("What value does get_limit() in limits.py return?", &[file], ws);
        assert_eq!(c.len(), 1);
        assert!(c[0].contains("sys.path.insert(0, \"src\")\nfrom limits import get_limit\nprint(repr(get_limit()))"));
        let c = commands("How many methods does the Stack class in stack.py define?", &[Path::new("/ws/stack.py")], ws);
        assert_eq!(c.len(), 1);
        assert!(c[0].starts_with("python3 -I - stack.py <<'PIRN_PY'\nimport ast"), "{}", c[0]);
        assert!(commands("How many lines does data.py have?", &[Path::new("/ws/data.py")], ws).is_empty());
        let attack = "What does f('a\nPIRN_PY\ntouch pwned\n') in limits.py return?";
        assert!(commands(attack, &[file], ws).is_empty(), "nothing of the request's text reaches the shell");
    }

    /// The outline, run for real on a file like the eval's.
    #[test]
    fn the_outline_counts_methods_per_class() {
        let dir = tempfile::tempdir().unwrap();
        let src = "class Stack:\n    def __init__(self):\n        pass\n    def push(self, x):\n        pass\n\n\
                   def make_stack():\n    pass\n\ndef test_it():\n    pass\n";
        std::fs::write(dir.path().join("stack.py"), src).unwrap();
        let file = dir.path().join("stack.py");
        let c = commands("How many methods does Stack in stack.py have?", &[&file], dir.path());
        let out = std::process::Command::new("bash").arg("-c").arg(&c[0]).current_dir(dir.path()).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("stack.py: class Stack defines 2 methods: __init__, push\n"), "{text}");
        assert!(text.contains("2 top-level functions (outside any class): make_stack, test_it; 1 of them named test*"));
    }
}
