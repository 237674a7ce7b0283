//! `write_file`'s merge of a definitions-only rewrite: when a small model
//! asked to add or fix one function writes a file holding only that
//! function (and perhaps its imports), the function is merged into the file
//! instead of the file being replaced by it.
//!
//! Owns: splitting source text into top-level blocks ([`blocks`]: a `def`,
//! `class`, `function`, `fn` or `func` starting in column 0, with the
//! decorators and comments right above it, up to the next column-0 line
//! that is not a closing bracket) and the merge itself ([`merge`]): a block
//! whose name the file already defines replaces that definition, a new one
//! is added at the end (before a trailing `if __name__ == "__main__":`
//! block), new import lines go after the file's last import.
//!
//! [`changed_lines`] handles content made of only the few lines that change.
//!
//! Aider's "lazy model" handling and its whole-file format are the
//! background: a small model rewrites the part it thinks about. The merge
//! applies only to content made of nothing but imports and definitions;
//! anything else is written as asked (after `write_file`'s own guards).

/// One top-level definition of a source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The defined name (`is_palindrome`, `Rect`).
    pub name: String,
    /// 0-based line range `[start, end)`, decorators and comments above
    /// included, trailing blank lines not.
    pub lines: (usize, usize),
}

/// What [`merge`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// The file after the merge.
    pub content: String,
    /// Definitions that replaced the file's own of the same name.
    pub replaced: Vec<String>,
    /// Definitions added.
    pub added: Vec<String>,
    /// Import lines added, or put in place of the file's import from the
    /// same module.
    pub imports: usize,
}

impl Merged {
    /// True when `old` already held every definition and import as given.
    pub fn unchanged(&self) -> bool {
        self.replaced.is_empty() && self.added.is_empty() && self.imports == 0
    }
}

/// The name a column-0 line defines, if it starts a definition.
fn defines(line: &str) -> Option<&str> {
    let mut rest = line;
    for prefix in ["export default ", "export ", "pub(crate) ", "pub ", "async ", "unsafe "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = ["def ", "class ", "function ", "fn ", "func ", "struct ", "enum ", "interface "]
        .iter()
        .find_map(|k| rest.strip_prefix(k))?;
    let name_len = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
    (name_len > 0).then(|| &rest[..name_len])
}

fn is_import(line: &str) -> bool {
    ["import ", "from ", "use "].iter().any(|p| line.starts_with(p)) || line.contains("require(")
}

/// Top-level definitions of `text`, in order.
pub fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let top = |l: &str| !l.trim().is_empty() && !l.starts_with([' ', '\t', ')', ']', '}']);
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(name) = defines(lines[i]) else {
            i += 1;
            continue;
        };
        let mut start = i;
        while start > 0 && (lines[start - 1].starts_with('@') || lines[start - 1].starts_with(['#', '/'])) {
            start -= 1;
        }
        let mut end = i + 1;
        while end < lines.len() && !top(lines[end]) {
            end += 1;
        }
        let mut last = end;
        while last > i + 1 && lines[last - 1].trim().is_empty() {
            last -= 1;
        }
        out.push(Block { name: name.to_owned(), lines: (start, last) });
        i = end;
    }
    out
}

/// Merges `new` (imports and definitions only) into `old`. `None` when
/// `new` holds anything else at top level or no definition. A merge that
/// changes nothing ([`Merged::unchanged`]) keeps `old` as it is.
pub fn merge(old: &str, new: &str) -> Option<Merged> {
    let new_lines: Vec<&str> = new.lines().collect();
    let new_blocks = blocks(new);
    if new_blocks.is_empty() {
        return None;
    }
    let inside = |n: usize| new_blocks.iter().any(|b| (b.lines.0..b.lines.1).contains(&n));
    let mut imports = Vec::new();
    for (n, line) in new_lines.iter().enumerate() {
        if line.trim().is_empty() || inside(n) {
            continue;
        }
        if line.starts_with([' ', '\t']) || !is_import(line) {
            return None; // top-level code other than imports: not a merge
        }
        imports.push(*line);
    }
    let mut lines: Vec<String> = old.lines().map(str::to_owned).collect();
    let eol = if old.contains("\r\n") { "\r\n" } else { "\n" };
    let sep = if new_blocks.iter().all(|b| new_lines[b.lines.0..b.lines.1].iter().all(|l| !l.contains('{'))) {
        2 // Python: two blank lines between top-level definitions
    } else {
        1
    };
    let (mut replaced, mut added) = (Vec::new(), Vec::new());
    for b in &new_blocks {
        let body: Vec<String> = new_lines[b.lines.0..b.lines.1].iter().map(|l| l.to_string()).collect();
        let text = lines.join("\n");
        if let Some(own) = blocks(&text).into_iter().find(|o| o.name == b.name) {
            if lines[own.lines.0..own.lines.1] != body[..] {
                lines.splice(own.lines.0..own.lines.1, body);
                replaced.push(b.name.clone());
            }
            continue;
        }
        // A definition given under a new name with the body of one the
        // content leaves out: a rename, done in place.
        let given = |name: &str| new_blocks.iter().any(|n| n.name == name);
        let tail = |ls: &[String]| ls.iter().skip(1).map(|l| l.trim().to_owned()).collect::<Vec<_>>();
        if let Some(own) = blocks(&text)
            .into_iter()
            .find(|o| !given(&o.name) && o.lines.1 - o.lines.0 > 1 && tail(&lines[o.lines.0..o.lines.1]) == tail(&body))
        {
            lines.splice(own.lines.0..own.lines.1, body);
            replaced.push(format!("{} (now {})", own.name, b.name));
            continue;
        }
        let at = lines.iter().rposition(|l| l.starts_with("if __name__")).unwrap_or(lines.len());
        let mut before = at;
        while before > 0 && lines[before - 1].trim().is_empty() {
            before -= 1;
        }
        let mut chunk: Vec<String> = Vec::new();
        if before > 0 {
            chunk.extend(std::iter::repeat_n(String::new(), sep));
        }
        chunk.extend(body);
        if at < lines.len() {
            chunk.extend(std::iter::repeat_n(String::new(), sep));
        }
        lines.splice(before..at, chunk);
        added.push(b.name.clone());
    }
    let mut missing: Vec<&str> = imports.into_iter().filter(|i| !lines.iter().any(|l| l.trim() == i.trim())).collect();
    // `from m import a` where the file has `from m import b`: the rewrite's
    // line replaces the file's (a rename of what is imported), once.
    let before_imports = missing.len();
    missing.retain(|i| {
        let Some(module) = from_module(i) else { return true };
        let same: Vec<usize> = (0..lines.len()).filter(|&n| from_module(&lines[n]) == Some(module)).collect();
        match same[..] {
            [n] => {
                lines[n] = (*i).to_owned();
                false
            }
            _ => true,
        }
    });
    let at = lines.iter().rposition(|l| is_import(l)).map_or(0, |i| i + 1);
    // Replaced import lines count as changed imports too.
    let count = before_imports;
    lines.splice(at..at, missing.into_iter().map(str::to_owned));
    let mut content = lines.join(eol);
    content.push_str(eol);
    Some(Merged { content, replaced, added, imports: count })
}

/// `content` without the top-level definition named `name` (its
/// decorators and comments above it included, and the blank lines that
/// separated it from the next one), and the 1-based lines it held; `None`
/// when `content` defines no such name, or defines it twice.
pub fn delete_definition(content: &str, name: &str) -> Option<(String, (usize, usize))> {
    let found: Vec<Block> = blocks(content).into_iter().filter(|b| b.name == name).collect();
    let [block] = &found[..] else { return None };
    let lines: Vec<&str> = content.lines().collect();
    let (start, mut end) = block.lines;
    while end < lines.len() && lines[end].trim().is_empty() {
        end += 1;
    }
    let mut kept: Vec<&str> = lines[..start].to_vec();
    kept.extend(&lines[end..]);
    while kept.last().is_some_and(|l| l.trim().is_empty()) {
        kept.pop();
    }
    let eol = if content.contains("\r\n") { "\r\n" } else { "\n" };
    let mut out = kept.join(eol);
    out.push_str(eol);
    Some((out, (start + 1, block.lines.1)))
}

/// The module of a Python `from m import …` line.
fn from_module(line: &str) -> Option<&str> {
    let rest = line.trim().strip_prefix("from ")?;
    let (module, _) = rest.split_once(" import ")?;
    Some(module.trim())
}

/// Lines of content, at most, that [`changed_lines`] treats as "only the
/// lines that change".
const MAX_CHANGED_LINES: usize = 4;
/// How alike (normalised Levenshtein, trimmed) a content line and the file
/// line it replaces must be.
const LINE_ALIKE: f64 = 0.7;

/// The other lazy rewrite: content holding only the few lines that change
/// (`from utils import compute_total` for a file whose first line imports
/// `calc_total`). Each content line must be most like exactly one file line
/// (at least [`LINE_ALIKE`], no other line as close) and differ from it;
/// those lines are replaced in place, indentation kept. Returns the new
/// file and the replaced 1-based line numbers; `None` otherwise.
pub fn changed_lines(old: &str, new: &str) -> Option<(String, Vec<usize>)> {
    let wanted: Vec<&str> = new.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if wanted.is_empty() || wanted.len() > MAX_CHANGED_LINES {
        return None;
    }
    let mut lines: Vec<String> = old.lines().map(str::to_owned).collect();
    let mut replaced = Vec::new();
    for want in wanted {
        let mut best: Option<(f64, usize)> = None;
        let mut tie = false;
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim();
            if t.is_empty() {
                continue;
            }
            let score = strsim::normalized_levenshtein(t, want);
            match best {
                Some((b, _)) if (score - b).abs() < 1e-9 => tie = true,
                Some((b, _)) if score < b => {}
                _ => {
                    best = Some((score, i));
                    tie = false;
                }
            }
        }
        let (score, i) = best?;
        if tie || !(LINE_ALIKE..1.0).contains(&score) || replaced.contains(&(i + 1)) {
            return None;
        }
        let indent: String = lines[i].chars().take_while(|c| c.is_whitespace()).collect();
        lines[i] = format!("{indent}{want}");
        replaced.push(i + 1);
    }
    let eol = if old.contains("\r\n") { "\r\n" } else { "\n" };
    let mut content = lines.join(eol);
    if old.ends_with('\n') {
        content.push_str(eol);
    }
    Some((content, replaced))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "import math\n\n\ndef shout(text):\n    \"\"\"Loud.\"\"\"\n    return text.upper()\n\n\n@cache\ndef area(r):\n    return math.pi * r * r\n\n\nif __name__ == \"__main__\":\n    print(area(1))\n";

    #[test]
    fn only_the_changed_lines_are_replaced() {
        let old =
            "from utils import calc_total\n\nCART = [1]\n\nif __name__ == \"__main__\":\n    print(calc_total(CART))\n";
        let (new, lines) = changed_lines(old, "from utils import compute_total\n").unwrap();
        assert_eq!(lines, [1]);
        assert_eq!(new, old.replacen("calc_total", "compute_total", 1));
        let (new, _) = changed_lines(old, "from utils import compute_total\nprint(compute_total(CART))").unwrap();
        assert_eq!(new, old.replace("calc_total", "compute_total"));
        assert!(changed_lines(old, "import os").is_none(), "like no line");
        assert!(changed_lines("x = 1\nx = 1\n", "x = 2").is_none(), "two lines equally alike");
    }

    #[test]
    fn blocks_carry_their_decorators_and_stop_at_the_next_top_level_line() {
        let b = blocks(OLD);
        let names: Vec<(&str, (usize, usize))> = b.iter().map(|b| (b.name.as_str(), b.lines)).collect();
        assert_eq!(names, vec![("shout", (3, 6)), ("area", (8, 11))]);
        let rust = "use std::fmt;\n\npub fn a() -> u8 {\n    1\n}\n\nfn b() {}\n";
        let names: Vec<String> = blocks(rust).into_iter().map(|b| b.name).collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn a_new_function_is_added_before_the_main_guard_and_a_known_one_replaced() {
        let m = merge(OLD, "import sys\n\ndef is_even(n):\n    return n % 2 == 0\n").unwrap();
        assert_eq!(m.added, ["is_even"]);
        assert_eq!(m.imports, 1);
        let renamed = merge(
            "from billing import get_total\nimport os\n\n\ndef summary(p):\n    return get_total(p)\n",
            "from billing import compute_total\n\n\ndef summary(p):\n    return compute_total(p)\n",
        )
        .unwrap();
        assert!(renamed.content.starts_with("from billing import compute_total\nimport os\n"), "{}", renamed.content);
        assert!(!renamed.content.contains("get_total"), "the import is replaced, not added: {}", renamed.content);
        let (left, lines) = delete_definition(OLD, "shout").unwrap();
        assert_eq!(lines, (4, 6));
        assert!(left.starts_with("import math\n\n\n@cache\ndef area(r):"), "{left}");
        assert!(delete_definition(OLD, "nothing").is_none());
        assert!(m.content.starts_with("import math\nimport sys\n"), "{}", m.content);
        assert!(
            m.content
                .contains("    return math.pi * r * r\n\n\ndef is_even(n):\n    return n % 2 == 0\n\n\nif __name__"),
            "{}",
            m.content
        );
        let m = merge(OLD, "def shout(text):\n    return text.upper() + \"!\"\n").unwrap();
        assert_eq!(m.replaced, ["shout"]);
        assert_eq!(
            m.content,
            OLD.replace("    \"\"\"Loud.\"\"\"\n    return text.upper()\n", "    return text.upper() + \"!\"\n")
        );
        assert!(merge(OLD, "x = 1\ndef f():\n    pass\n").is_none(), "top-level code: not a merge");
        let m = merge(OLD, "def yell(text):\n    \"\"\"Loud.\"\"\"\n    return text.upper()\n").unwrap();
        assert_eq!(m.replaced, ["shout (now yell)"], "same body, new name: a rename in place");
        assert_eq!(m.content, OLD.replace("def shout", "def yell"));
        assert!(merge(OLD, "print('hi')\n").is_none(), "no definition");
        assert!(merge(OLD, "def shout(text):\n    \"\"\"Loud.\"\"\"\n    return text.upper()\n").unwrap().unchanged());
    }
}
