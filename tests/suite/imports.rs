//! Measures how pirn imports itself, from the text of `src/` (std only, parsed
//! by hand in [`super::import_graph`]). Every path a file names into the crate — `use` trees rooted at
//! `crate`/`super`/`self`/a child module (braces, `self`, globs, `as`), inline
//! paths like `crate::a::f()`, `super::X` or `turn::run()`, and `pirn::…` in
//! the binary — is resolved to the file of the longest module prefix it names
//! (a `mod.rs` when the item is defined or re-exported there). Comments,
//! strings and `#[cfg(test)]` items are skipped. Strongly connected components
//! (Tarjan) of that file graph, and of its quotient by top-level module
//! (`src/agent/**` is `agent`), are import circles: the tests fail on any,
//! printing one example edge (file:line → file) per step. An ignored report
//! lists imports that reach an item through a module file that only
//! re-exports it from a child file, and any path naming nothing found.

use std::collections::{BTreeMap, BTreeSet};

use super::import_graph::{circles, drop_tests, example, graph, tokenize, top, use_tree, word};

#[test]
fn no_import_circles_between_top_level_modules() {
    let (g, file_edges) = graph();
    let names: Vec<String> = g.files.iter().map(|f| top(f)).collect::<BTreeSet<_>>().into_iter().collect();
    let m = |f: usize| names.iter().position(|n| *n == top(&g.files[f])).unwrap();
    let mut edges: BTreeMap<(usize, usize), (usize, String)> = BTreeMap::new();
    for (&(a, b), lines) in file_edges.iter().filter(|e| m(e.0.0) != m(e.0.1)) {
        edges.entry((m(a), m(b))).or_insert((0, example(&g, (a, b), lines).1)).0 += lines.len();
    }
    let found = circles(&names, &edges);
    assert!(
        found.is_empty(),
        "{} import circle(s) between top-level modules of src/:\n{}",
        found.len(),
        found.concat()
    );
}

/// The layers of ARCHITECTURE.md, top first (`main.rs` and `lib.rs` stand
/// above them all). The modules "around" them there (config, environment,
/// sandbox, mcp, checkpoint, worktree, cassette, terminal, conform and the
/// leaves) are used by several layers and have no rank of their own.
const LAYERS: [&[&str]; 6] = [
    &["cli"],
    &["transport", "acp", "claude", "codex"],
    &["session"],
    &["agent"],
    &["conversation", "tools", "approval", "model", "context", "hooks", "telemetry"],
    &["wire", "store"],
];

#[test]
fn layers_point_one_way() {
    let (g, file_edges) = graph();
    let rank = |f: &str| LAYERS.iter().position(|l| l.contains(&top(f).as_str()));
    let mut up = BTreeMap::<(String, String), (usize, String)>::new();
    for (&(a, b), lines) in &file_edges {
        if let (Some(ra), Some(rb)) = (rank(&g.files[a]), rank(&g.files[b]))
            && rb < ra
        {
            let e = up.entry((top(&g.files[a]), top(&g.files[b]))).or_insert((0, example(&g, (a, b), lines).1));
            e.0 += lines.len();
        }
    }
    let text: String = up.iter().map(|((a, b), (n, e))| format!("  {a} → {b} ({n} refs, e.g. {e})\n")).collect();
    assert!(up.is_empty(), "imports from a lower layer to a higher one:\n{text}");
    // `wire` names nothing else of pirn.
    let wire_out: Vec<String> = file_edges
        .iter()
        .filter(|((a, b), _)| top(&g.files[*a]) == "wire" && top(&g.files[*b]) != "wire")
        .map(|(&e, lines)| example(&g, e, lines).1)
        .collect();
    assert!(wire_out.is_empty(), "wire imports other modules:\n  {}", wire_out.join("\n  "));
}

#[test]
fn no_import_circles_between_files() {
    let (g, edges) = graph();
    let names: Vec<String> = g.files.iter().map(|f| format!("src/{f}")).collect();
    let found = circles(&names, &edges.iter().map(|(&e, l)| (e, example(&g, e, l))).collect());
    assert!(found.is_empty(), "import circle(s) between files:\n{}", found.concat());
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let names: Vec<String> = ["a", "b", "c", "d"].map(String::from).into();
    let edges = [(0, 1), (1, 2), (2, 0), (3, 0), (0, 2)].map(|e| (e, (1, format!("{e:?}")))).into();
    let want = "circle of 3: a, b, c\n  shortest: a → c → a\n  a → b  (1 refs, e.g. (0, 1))\n  \
                a → c  (1 refs, e.g. (0, 2))\n  b → c  (1 refs, e.g. (1, 2))\n  c → a  (1 refs, e.g. (2, 0))\n";
    assert_eq!(circles(&names, &edges), [want]);
    let src = "use crate::a::{b, c::{self, d as e}, f::*}; // use z;\nfn g() { super::h::I::new(\"crate::q\", '\"') }\n\
               #[cfg(test)]\nmod tests { use crate::t; }\nuse x;";
    let toks = drop_tests(tokenize(src));
    let (mut i, mut leaves) = (1, vec![]);
    use_tree(&toks, &mut i, vec![], &mut leaves);
    let got: Vec<_> =
        leaves.iter().map(|l| format!("{}={}", l.path.join("::"), l.bind.as_deref().unwrap_or("*"))).collect();
    assert_eq!(got, ["crate::a::b=b", "crate::a::c=c", "crate::a::c::d=e", "crate::a::f=*"]);
    let words: Vec<_> = toks.iter().filter(|t| word(&t.s)).map(|t| format!("{}:{}", t.s, t.line)).collect();
    assert_eq!(words[10..], ["fn:2", "g:2", "super:2", "h:2", "I:2", "new:2", "use:5", "x:5"]);
}

#[test]
#[ignore = "a report, not a check: run with --ignored --nocapture"]
fn report_imports_through_a_re_export() {
    let g = graph().0;
    let (mut by_file, mut unresolved) = (BTreeMap::<_, Vec<_>>::new(), vec![]);
    for r in &g.refs {
        let place = format!("src/{}:{} {}", g.files[r.from], r.line, r.text);
        if let Some(c) = r.via {
            let private = if g.scopes[c].public { "" } else { " (its module is private)" };
            by_file
                .entry(r.to)
                .or_default()
                .push((r.from, format!("{place} → src/{}{private}", g.files[g.scopes[c].file])));
        } else if r.unresolved {
            unresolved.push(format!("{place} (nothing of that name in src/{})", g.files[r.to]));
        }
    }
    let count = by_file.values().map(Vec::len).sum::<usize>();
    eprintln!("{} files in the module tree; {count} imports through a re-export:", g.files.len());
    for (to, lines) in &by_file {
        let dir = g.files[*to].replace("mod.rs", "").replace(".rs", "/");
        let inside = lines.iter().filter(|(from, _)| g.files[*from].starts_with(&dir)).count();
        eprintln!("src/{}: {} ({inside} from inside {dir})", g.files[*to], lines.len());
        lines.iter().for_each(|(_, l)| eprintln!("  {l}"));
    }
    eprintln!("{} of {} paths name nothing found:\n  {}", unresolved.len(), g.refs.len(), unresolved.join("\n  "));
    eprintln!("{} paths start with a crate module's name not in scope (another crate?):", g.missed.len());
    g.missed.iter().for_each(|m| eprintln!("  {m}"));
}
