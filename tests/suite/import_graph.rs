//! The import graph of `src/` for the [`super::imports`] tests: a
//! tokenizer for Rust source (std only, by hand), the `use` tree reader, the
//! module tree walked from `lib.rs` and `main.rs` with each path resolved to
//! the file that defines or re-exports what it names ([`Graph`]), and
//! Tarjan's strongly connected components ([`circles`]) that the tests read
//! as import circles.
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

pub(super) struct Tok {
    pub(super) s: String,
    pub(super) line: usize,
}

pub(super) fn word(s: &str) -> bool {
    s.starts_with(|c: char| c.is_alphabetic() || c == '_')
}

/// Identifier and punctuation tokens (`::` is one) of Rust source, without
/// whitespace, comments, string and char literals.
pub(super) fn tokenize(text: &str) -> Vec<Tok> {
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
pub(super) fn drop_tests(toks: Vec<Tok>) -> Vec<Tok> {
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
pub(super) struct Leaf {
    pub(super) path: Vec<String>,
    pub(super) bind: Option<String>,
    pub(super) line: usize,
}

/// Parses the use tree at `t[*i]` (after `use`), appending its leaves.
pub(super) fn use_tree(t: &[Tok], i: &mut usize, mut path: Vec<String>, out: &mut Vec<Leaf>) {
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
pub(super) type Mod = (u8, Vec<String>);

/// A module: a file's own, or an inline `mod x { … }` in that file. `items`
/// are the names it defines (and names it imports from outside the crate).
#[derive(Default)]
pub(super) struct Scope {
    pub(super) file: usize,
    pub(super) module: Mod,
    pub(super) depth: usize,
    pub(super) public: bool,
    pub(super) items: BTreeSet<String>,
    pub(super) binds: BTreeMap<String, (bool, Mod)>,
    pub(super) globs: BTreeSet<(bool, Mod)>,
}

/// A path into the crate: the file it lands in, and the scope defining the
/// item when that file only re-exports it from a child (`via`).
pub(super) struct Ref {
    pub(super) from: usize,
    pub(super) line: usize,
    pub(super) text: String,
    pub(super) to: usize,
    pub(super) via: Option<usize>,
    pub(super) unresolved: bool,
}

#[derive(Default)]
pub(super) struct Graph {
    pub(super) files: Vec<String>,
    pub(super) scopes: Vec<Scope>,
    pub(super) modules: BTreeMap<Mod, usize>,
    pub(super) refs: Vec<Ref>,
    pub(super) missed: Vec<String>,
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
pub(super) fn sccs(n: usize, edges: &BTreeSet<(usize, usize)>) -> Vec<Vec<usize>> {
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
pub(super) fn circles(names: &[String], edges: &BTreeMap<(usize, usize), (usize, String)>) -> Vec<String> {
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
pub(super) fn graph() -> (Graph, BTreeMap<(usize, usize), Vec<usize>>) {
    let g = Graph::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(g.files.len() > 100 && g.refs.len() > 1000, "read {} files, {} paths", g.files.len(), g.refs.len());
    let mut edges: BTreeMap<_, Vec<_>> = BTreeMap::new();
    g.refs.iter().filter(|r| r.to != r.from).for_each(|r| edges.entry((r.from, r.to)).or_default().push(r.line));
    (g, edges)
}

/// `src/agent/x.rs` → `agent`, `src/approval.rs` → `approval`.
pub(super) fn top(rel: &str) -> String {
    rel.split(['/', '.']).next().unwrap().to_owned()
}

pub(super) fn example(g: &Graph, (a, b): (usize, usize), lines: &[usize]) -> (usize, String) {
    (lines.len(), format!("src/{}:{} → src/{}", g.files[a], lines[0], g.files[b]))
}
