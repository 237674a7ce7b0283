//! Unit tests of [`super`]: a valid and a broken file of each kind, the
//! unknown kinds, the size bound, and pirn's own sources (no false alarm).

use super::*;

fn check(name: &str, content: &str) -> Option<String> {
    problem(Path::new(name), content)
}

#[test]
fn python_indentation_and_syntax() {
    assert_eq!(check("m.py", "def f(x):\n    if x:\n        return 1\n    return 2\n"), None);
    let missing_name = check("m.py", "def (items):\n    return items\n");
    assert_eq!(missing_name.as_deref(), Some("syntax error at line 1 (unexpected `def`)"));
    let extra_paren = check("m.py", "x = 1\nprint(f(1)))\n");
    assert_eq!(extra_paren.as_deref(), Some("syntax error at line 2 (unexpected `print`)"));
    // tree-sitter-python is lenient about indentation: a body not indented
    // (`def f():\nreturn 1`) or a stray indent parses without an ERROR
    // node, so those are not reported (python3's ast did report them).
}

#[test]
fn rust_missing_brace() {
    assert_eq!(check("lib.rs", "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n"), None);
    let open = check("lib.rs", "fn main() {\n    let x = 1;\n\nfn g() {}\n");
    assert_eq!(open.as_deref(), Some("syntax error at line 1 (unexpected `fn`)"));
}

#[test]
fn typescript_and_tsx() {
    assert_eq!(check("a.ts", "function f(x: number): string {\n  return `${x}`;\n}\n"), None);
    let no_type = check("a.ts", "function f(x: number): {\n  return x;\n}\n");
    assert_eq!(no_type.as_deref(), Some("syntax error at line 2 (unexpected `x`)"));
    let generic = check("a.ts", "let x: Array<number = [];\n");
    assert_eq!(generic.as_deref(), Some("syntax error at line 1 (missing `>`)"));
    assert_eq!(check("a.tsx", "const A = (p: {n: number}) => <div>{p.n}</div>;\n"), None);
    let unclosed = check("a.tsx", "const A = () => <div>;\n");
    assert_eq!(unclosed.as_deref(), Some("syntax error at line 1 (unexpected `const`)"));
}

#[test]
fn javascript() {
    assert_eq!(check("a.js", "const f = (a) => a + 1;\nexport default f;\n"), None);
    assert_eq!(check("a.jsx", "const A = () => <b>hi</b>;\n"), None);
    assert_eq!(check("a.js", "const f = (a => a + 1;\n").as_deref(), Some("syntax error at line 1 (missing `)`)"));
}

#[test]
fn go_missing_paren() {
    let ok = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n";
    assert_eq!(check("main.go", ok), None);
    let bad = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\"\n}\n";
    assert_eq!(check("main.go", bad).as_deref(), Some("syntax error at line 6 (missing `)`)"));
}

#[test]
fn json_and_toml() {
    assert_eq!(check("a.json", "{\"a\": [1, 2]}"), None);
    assert_eq!(check("a.json", "{\"a\": 1").as_deref(), Some("EOF while parsing an object at line 1 column 7"));
    assert_eq!(check("a.toml", "[package]\nname = \"x\"\n"), None);
    let string = check("a.toml", "[package]\nname = \"x\n");
    assert_eq!(string.as_deref(), Some("syntax error at line 2 (invalid basic string, expected `\"`)"));
    assert_eq!(check("a.toml", "[a]\nx = 1\n[a]\n").as_deref(), Some("syntax error at line 3 (duplicate key)"));
}

#[test]
fn unknown_kinds_are_not_checked() {
    for name in ["a.txt", "Makefile", "a.yaml", "a.c", "noext", "a.PY"] {
        assert_eq!(check(name, "{ ( ]"), None, "{name}");
    }
}

#[test]
fn warning_names_the_file() {
    assert_eq!(warning(Path::new("a.py"), "src/a.py", "x = 1\n"), None);
    let w = warning(Path::new("a.py"), "src/a.py", "x = (\n").unwrap();
    assert!(w.starts_with("\nWarning: src/a.py does not parse now: syntax error at line "), "{w}");
}

#[test]
fn files_over_the_bound_are_not_checked() {
    // One long comment: cheap to parse even in a debug build under load.
    let tail = "\nx = (\n";
    let under = format!("#{}{tail}", "a".repeat(MAX_BYTES - tail.len() - 1));
    assert_eq!(under.len(), MAX_BYTES);
    assert_eq!(check("big.py", &under).as_deref(), Some("syntax error at line 2 (unexpected `x`)"));
    let over = format!("#{}{tail}", "a".repeat(MAX_BYTES - tail.len()));
    assert_eq!(check("big.py", &over), None);
}

/// Every Rust file of pirn parses: the grammar does not raise false alarms
/// on current Rust (let chains, `async` closures, raw strings).
#[test]
fn pirn_own_sources_parse() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stack = vec![root.join("src"), root.join("tests"), root.join("examples")];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                assert_eq!(problem(&path, &text), None, "{}", path.display());
                seen += 1;
            }
        }
    }
    assert!(seen > 50, "{seen} files");
}
