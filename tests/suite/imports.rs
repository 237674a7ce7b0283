//! Measures how pirn imports itself, from the text of `src/` (std only, parsed
//! by hand). Every path a file names into the crate — `use` trees rooted at
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

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

struct Tok {
    s: String,
    line: usize,
}

fn word(s: &str) -> bool {
    s.starts_with(|c: char| c.is_alphabetic() || c == '_')
}

/// Identifier and punctuation tokens (`::` is one) of Rust source, without
/// whitespace, comments, string and char literals.
fn tokenize(text: &str) -> Vec<Tok> {
    let c: Vec<char> = text.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or(' ');
    let is_word = |ch: char| ch.is_alphanumeric() || ch == '_';
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    while i < c.len() {
        let raw = usize::from(c[i] == 'r') + 2 * usize::from((c[i], at(i + 1)) == ('b', 'r'));
        let hashes = (i + raw..c.len()).take_while(|&k| c[k] == '#').count();
        let closes = |k: usize| c[k] == '"' && (1..=hashes).all(|h| at(k + h) == '#');
        let (end, tok) = match (c[i], at(i + 1)) {
            ('/', '/') => ((i..c.len()).find(|&k| c[k] == '\n').unwrap_or(c.len()), None),
            ('/', '*') => {
                ((i + 2..c.len()).find(|&k| c[k] == '*' && at(k + 1) == '/').map_or(c.len(), |k| k + 2), None)
            }
            _ if at(i + raw + hashes) == '"' => {
                let mut k = i + raw + hashes + 1;
                while k < c.len() && !closes(k) {
                    k += if raw == 0 && c[k] == '\\' { 2 } else { 1 };
                }
                (k + 1 + hashes, None)
            }
            ('\'', '\\') => ((i + 3..c.len()).find(|&k| c[k] == '\'').map_or(c.len(), |k| k + 1), None),
            ('\'', _) if at(i + 2) == '\'' => (i + 3, None),
            (':', ':') => (i + 2, Some("::".to_owned())),
            (ch, _) if is_word(ch) => {
                let end = (i..c.len()).find(|&k| !is_word(c[k])).unwrap_or(c.len());
                (end, Some(c[i..end].iter().collect()))
            }
            (ch, _) => (i + 1, Some(ch.to_string()).filter(|_| !ch.is_whitespace())),
        };
        out.extend(tok.map(|s| Tok { s, line }));
        line += c[i..end.min(c.len())].iter().filter(|&&ch| ch == '\n').count();
        i = end;
    }
    out
}

/// `toks` without the items under `#[cfg(test)]` (up to their `;` or the
/// `}` matching their first `{`).
fn drop_tests(toks: Vec<Tok>) -> Vec<Tok> {
    let (mut out, mut skip, mut depth) = (Vec::new(), None, 0);
    for (k, t) in toks.iter().enumerate() {
        let cfg = toks[k..].iter().take(7).map(|t| t.s.as_str()).eq(["#", "[", "cfg", "(", "test", ")", "]"]);
        skip = skip.or(cfg.then_some(depth));
        depth = depth + usize::from(t.s == "{") - usize::from(t.s == "}");
        if skip.is_none() {
            out.push(Tok { s: t.s.clone(), line: t.line });
        } else if skip == Some(depth) && (t.s == "}" || t.s == ";") {
            skip = None;
        }
    }
    out
}

/// One leaf of a use tree (or an inline path): its full path, the name it
/// binds (`None` for a glob) and its line.
struct Leaf {
    path: Vec<String>,
    bind: Option<String>,
    line: usize,
}

/// Parses the use tree at `t[*i]` (after `use`), appending its leaves.
fn use_tree(t: &[Tok], i: &mut usize, mut path: Vec<String>, out: &mut Vec<Leaf>) {
    let is = |i: usize, s: &str| t.get(i).is_some_and(|t| t.s == s);
    while let Some(tok) = t.get(*i) {
        *i += 1;
        match tok.s.as_str() {
            "::" => {}
            "{" => {
                while t.get(*i).is_some_and(|t| t.s != "}") {
                    use_tree(t, i, path.clone(), out);
                    *i += usize::from(is(*i, ","));
                }
                return *i += 1;
            }
            "*" => return out.push(Leaf { path, bind: None, line: tok.line }),
            s if word(s) => {
                if s != "self" || path.is_empty() {
                    path.push(s.to_owned());
                }
                if !is(*i, "::") {
                    let alias = is(*i, "as").then(|| t.get(*i + 1).map(|a| a.s.clone())).flatten();
                    *i += if alias.is_some() { 2 } else { 0 };
                    let bind = alias.or_else(|| path.last().cloned());
                    return out.push(Leaf { path, bind, line: tok.line });
                }
            }
            _ => return,
        }
    }
}

/// A crate (0 the library, 1 the binary) and a module path in it.
type Mod = (u8, Vec<String>);

/// A module: a file's own, or an inline `mod x { … }` in that file. `items`
/// are the names it defines (and names it imports from outside the crate).
#[derive(Default)]
struct Scope {
    file: usize,
    module: Mod,
    depth: usize,
    public: bool,
    items: BTreeSet<String>,
    binds: BTreeMap<String, (bool, Mod)>,
    globs: BTreeSet<(bool, Mod)>,
}

/// A path into the crate: the file it lands in, and the scope defining the
/// item when that file only re-exports it from a child (`via`).
struct Ref {
    from: usize,
    line: usize,
    text: String,
    to: usize,
    via: Option<usize>,
    unresolved: bool,
}

#[derive(Default)]
struct Graph {
    files: Vec<String>,
    scopes: Vec<Scope>,
    modules: BTreeMap<Mod, usize>,
    refs: Vec<Ref>,
    missed: Vec<String>,
}

impl Graph {
    /// Walks the module tree from `lib.rs` and `main.rs`, then resolves every
    /// path each file names.
    fn load(src: &Path) -> Graph {
        let mut g = Graph::default();
        let (mut uses, mut paths) = (vec![], vec![]);
        let mut queue =
            VecDeque::from([("lib.rs".to_owned(), (0, vec![]), true), ("main.rs".into(), (1, vec![]), true)]);
        while let Some((rel, module, public)) = queue.pop_front() {
            let toks = drop_tests(tokenize(&std::fs::read_to_string(src.join(&rel)).unwrap()));
            let (f, root) = (g.files.len(), ["mod.rs", "lib.rs", "main.rs"].iter().any(|r| rel.ends_with(r)));
            let dir =
                if root { rel[..rel.rfind('/').map_or(0, |p| p + 1)].to_owned() } else { rel.replace(".rs", "/") };
            g.files.push(rel);
            let mut stack = vec![(usize::MAX, g.add(f, module, 0, public))];
            let (mut depth, mut in_use) = (0, 0);
            for k in 0..toks.len() {
                let tok = |d: isize| toks.get(k.wrapping_add_signed(d)).map_or("", |t| t.s.as_str());
                let (s, cur, is_pub) = (tok(0), stack.last().unwrap().1, tok(-1) == "pub" || tok(-1) == ")");
                depth = depth + usize::from(s == "{") - usize::from(s == "}");
                if s == "}" && stack.last().unwrap().0 == depth {
                    stack.pop();
                }
                if depth == g.scopes[cur].depth && word(tok(1)) && tok(-1) != "'" {
                    let item =
                        ["fn", "struct", "enum", "trait", "type", "const", "static", "union", "mod"].contains(&s);
                    if item && !["fn", "unsafe", "async", "extern"].contains(&tok(1)) {
                        g.scopes[cur].items.insert(tok(1).to_owned());
                    }
                    let mut child = g.scopes[cur].module.clone();
                    child.1.push(tok(1).to_owned());
                    if s == "mod" && tok(2) == ";" {
                        let file = format!("{dir}{}.rs", tok(1));
                        let file = if src.join(&file).exists() { file } else { format!("{dir}{}/mod.rs", tok(1)) };
                        queue.push_back((file, child, is_pub));
                    } else if s == "mod" && tok(2) == "{" {
                        stack.push((depth, g.add(f, child, depth + 1, is_pub)));
                    }
                }
                if s == "use" && (word(tok(1)) || tok(1) == "::" || tok(1) == "{") {
                    let (mut j, mut leaves) = (k + 1, vec![]);
                    use_tree(&toks, &mut j, vec![], &mut leaves);
                    uses.extend(leaves.into_iter().map(|l| (f, cur, is_pub, l)));
                    in_use = j;
                } else if k >= in_use && word(s) && tok(1) == "::" && word(tok(2)) && !["::", "$"].contains(&tok(-1)) {
                    let mut path = vec![s.to_owned()];
                    while tok(2 * path.len() as isize - 1) == "::" && word(tok(2 * path.len() as isize)) {
                        path.push(tok(2 * path.len() as isize).to_owned());
                    }
                    if !(tok(-1) == "in" && tok(-2) == "(") {
                        paths.push((f, cur, Leaf { path, bind: None, line: toks[k].line }));
                    }
                }
            }
        }
        let mut found = vec![];
        for pass in 0..2 {
            for (f, sc, is_pub, leaf) in &uses {
                let abs = g.resolve(*sc, &leaf.path);
                let scope = &mut g.scopes[*sc];
                match (&leaf.bind, abs.clone()) {
                    (Some(b), None) if pass == 1 => drop(scope.items.insert(b.clone())),
                    (Some(b), Some(abs)) => drop(scope.binds.insert(b.clone(), (*is_pub, abs))),
                    (None, Some(abs)) => drop(scope.globs.insert((*is_pub, abs))),
                    _ => {}
                }
                found.extend(abs.filter(|_| pass == 1).map(|abs| (*f, leaf, abs)));
            }
        }
        let mods: BTreeSet<_> = g.modules.keys().filter_map(|m| m.1.last()).collect();
        for (f, sc, leaf) in &paths {
            match g.resolve(*sc, &leaf.path) {
                Some(abs) => found.push((*f, leaf, abs)),
                None if mods.contains(&leaf.path[0]) => {
                    g.missed.push(format!("src/{}:{} {}", g.files[*f], leaf.line, leaf.path.join("::")))
                }
                None => {}
            }
        }
        for (from, leaf, abs) in found {
            let (sc, n) = g.locate(&abs);
            let s = &g.scopes[sc];
            let home = abs.1.get(n).map(|name| (name, g.home(sc, name, 4)));
            let first_pub = |name: &String| s.binds.get(name).map_or_else(|| s.globs.iter().any(|g| g.0), |b| b.0);
            let below = |c: usize| g.scopes[c].module.1.starts_with(&s.module.1) && g.scopes[c].file != s.file;
            let via = home.and_then(|(name, c)| c.filter(|&c| below(c) && !s.items.contains(name) && first_pub(name)));
            let (text, unresolved) = (leaf.path.join("::"), home.is_some_and(|h| h.1.is_none()));
            g.refs.push(Ref { from, line: leaf.line, text, to: s.file, via, unresolved });
        }
        g
    }

    /// A new scope.
    fn add(&mut self, file: usize, module: Mod, depth: usize, public: bool) -> usize {
        self.modules.insert(module.clone(), self.scopes.len());
        self.scopes.push(Scope { file, module, depth, public, ..Default::default() });
        self.scopes.len() - 1
    }

    /// The absolute module path that `path` names from scope `sc`, if into
    /// the crate.
    fn resolve(&self, sc: usize, path: &[String]) -> Option<Mod> {
        let (k, here) = &self.scopes[sc].module;
        let supers = path.iter().take_while(|s| *s == "super").count();
        let (krate, mut abs, rest) = match path.first()?.as_str() {
            "crate" => (*k, vec![], 1),
            "pirn" if *k == 1 => (0, vec![], 1),
            "self" => (*k, here.clone(), 1),
            "super" => (*k, here[..here.len().checked_sub(supers)?].to_vec(), supers),
            name => {
                let child = (*k, [here.clone(), vec![name.to_owned()]].concat());
                let bound = || self.scopes[sc].binds.get(name).and_then(|b| self.canon(&b.1, 3));
                let (k, m) = if self.modules.contains_key(&child) { child } else { bound()? };
                (k, m, 1)
            }
        };
        abs.extend(path[rest..].iter().cloned());
        Some((krate, abs))
    }

    /// The module `abs` names, following re-exports of modules.
    fn canon(&self, abs: &Mod, hops: usize) -> Option<Mod> {
        if self.modules.contains_key(abs) {
            return Some(abs.clone());
        }
        let (sc, n) = self.locate(abs);
        let bind = self.scopes[sc].binds.get(abs.1.get(n)?)?;
        (n + 1 == abs.1.len() && hops > 0).then(|| self.canon(&bind.1, hops - 1)).flatten()
    }

    /// The scope of the longest module prefix of `abs`, and that prefix's length.
    fn locate(&self, abs: &Mod) -> (usize, usize) {
        (0..=abs.1.len()).rev().find_map(|n| Some((*self.modules.get(&(abs.0, abs.1[..n].to_vec()))?, n))).unwrap()
    }

    /// The scope defining `name` as seen from scope `sc`, following imports
    /// and globs up to `hops` deep.
    fn home(&self, sc: usize, name: &str, hops: usize) -> Option<usize> {
        let s = &self.scopes[sc];
        if s.items.contains(name) || hops == 0 {
            return s.items.contains(name).then_some(sc);
        }
        if let Some((_, abs)) = s.binds.get(name) {
            let (t, n) = self.locate(abs);
            return abs.1.get(n).map_or(Some(t), |x| self.home(t, x, hops - 1));
        }
        s.globs.iter().find_map(|(_, g)| self.home(*self.modules.get(g)?, name, hops - 1))
    }
}

/// Tarjan's strongly connected components of a graph on `0..n`.
fn sccs(n: usize, edges: &BTreeSet<(usize, usize)>) -> Vec<Vec<usize>> {
    type State = (Vec<usize>, Vec<usize>, Vec<usize>, Vec<Vec<usize>>); // index, low link, stack, found
    fn visit(v: usize, edges: &BTreeSet<(usize, usize)>, st: &mut State) {
        let next = st.0.iter().filter(|&&i| i != usize::MAX).count();
        (st.0[v], st.1[v]) = (next, next);
        st.2.push(v);
        for &(_, w) in edges.range((v, 0)..(v + 1, 0)) {
            if st.0[w] == usize::MAX {
                visit(w, edges, st);
                st.1[v] = st.1[v].min(st.1[w]);
            } else if st.2.contains(&w) {
                st.1[v] = st.1[v].min(st.0[w]);
            }
        }
        if st.1[v] == st.0[v] {
            let mut c = st.2.split_off(st.2.iter().position(|&w| w == v).unwrap());
            c.sort();
            st.3.push(c);
        }
    }
    let mut st = (vec![usize::MAX; n], vec![0; n], vec![], vec![]);
    (0..n).for_each(|v| {
        if st.0[v] == usize::MAX {
            visit(v, edges, &mut st)
        }
    });
    st.3
}

/// Each component of more than one node: its members, a shortest circle
/// through the first, and every edge inside it with its count and example.
fn circles(names: &[String], edges: &BTreeMap<(usize, usize), (usize, String)>) -> Vec<String> {
    let mut out = vec![];
    for c in sccs(names.len(), &edges.keys().copied().collect()).into_iter().filter(|c| c.len() > 1) {
        let inside: Vec<_> = edges.iter().filter(|e| c.contains(&e.0.0) && c.contains(&e.0.1)).collect();
        let (mut prev, mut queue) = (BTreeMap::new(), VecDeque::from([c[0]]));
        while let Some(v) = queue.pop_front().filter(|_| !prev.contains_key(&c[0])) {
            for ((_, w), _) in inside.iter().filter(|e| e.0.0 == v) {
                if !prev.contains_key(w) {
                    prev.insert(*w, v);
                    queue.push_back(*w);
                }
            }
        }
        let mut path = vec![c[0]];
        while path.len() == 1 || path.last() != Some(&c[0]) {
            path.push(prev[path.last().unwrap()]);
        }
        let show = |vs: &mut dyn Iterator<Item = &usize>, sep: &str| {
            vs.map(|&v| names[v].as_str()).collect::<Vec<_>>().join(sep)
        };
        let mut text = format!("circle of {}: {}\n", c.len(), show(&mut c.iter(), ", "));
        text += &format!("  shortest: {}\n", show(&mut path.iter().rev(), " → "));
        for ((a, b), (n, eg)) in inside {
            text += &format!("  {} → {}  ({n} refs, e.g. {eg})\n", names[*a], names[*b]);
        }
        out.push(text);
    }
    out
}

/// The graph of `src/`, and its file edges (from, to) with the lines making them.
fn graph() -> (Graph, BTreeMap<(usize, usize), Vec<usize>>) {
    let g = Graph::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(g.files.len() > 100 && g.refs.len() > 1000, "read {} files, {} paths", g.files.len(), g.refs.len());
    let mut edges: BTreeMap<_, Vec<_>> = BTreeMap::new();
    g.refs.iter().filter(|r| r.to != r.from).for_each(|r| edges.entry((r.from, r.to)).or_default().push(r.line));
    (g, edges)
}

/// `src/agent/x.rs` → `agent`, `src/approval.rs` → `approval`.
fn top(rel: &str) -> String {
    rel.split(['/', '.']).next().unwrap().to_owned()
}

fn example(g: &Graph, (a, b): (usize, usize), lines: &[usize]) -> (usize, String) {
    (lines.len(), format!("src/{}:{} → src/{}", g.files[a], lines[0], g.files[b]))
}

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
