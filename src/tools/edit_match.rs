//! `edit_file`'s tolerant tiers: what to do when `old_string` is not in the
//! file as written.
//!
//! Owns: the whitespace-blind splice ([`squeezed`]), the match that lets
//! `old_string` leave out a few lines of the file ([`gapped`]) and the
//! "closest region" quoted when nothing matches ([`closest_region`]).
//!
//! A small model copies the right text with the wrong layout: the keys of a
//! multi-line JSON object squeezed onto one line, a call re-wrapped, tabs for
//! spaces. Compared without any whitespace, such an `old_string` still names
//! exactly one place; and comparing `old_string` with `new_string` the same
//! way shows the part the model meant to change (`30` → `60`). Only that part
//! is replaced, so the file keeps its own layout. As with every tier, the
//! match must be unique.

/// Characters of `old_string` (whitespace not counted) needed before a
/// whitespace-blind match is trusted.
pub const MIN_SQUEEZED_CHARS: usize = 6;
/// Files larger than this (bytes) are not searched whitespace-blind.
const MAX_SQUEEZED_BYTES: usize = 1024 * 1024;

/// One whitespace-blind edit: replace `content[from..to]` with `replacement`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Splice {
    pub from: usize,
    pub to: usize,
    pub replacement: String,
    /// 1-based lines of the file that `old_string` matched.
    pub lines: (usize, usize),
}

/// The characters of `s` that carry content, with their byte offsets:
/// neither whitespace nor quote marks (a model writes `{host: 'a'}` for
/// the file's `{"host": "a"}`).
fn visible(s: &str) -> Vec<(usize, char)> {
    s.char_indices().filter(|(_, c)| !c.is_whitespace() && !matches!(c, '"' | '\'' | '`')).collect()
}

/// Finds `old` in `content` ignoring all whitespace, line breaks and quote
/// marks; when it
/// occurs exactly once, returns the splice that turns it into `new` while
/// keeping the file's layout around the changed part. `None`: no match,
/// several matches, or too little text to trust.
pub fn squeezed(content: &str, old: &str, new: &str) -> Option<Splice> {
    if content.len() > MAX_SQUEEZED_BYTES {
        return None;
    }
    let hay = visible(content);
    let needle: Vec<char> = visible(old).into_iter().map(|(_, c)| c).collect();
    if needle.len() < MIN_SQUEEZED_CHARS || needle.len() > hay.len() {
        return None;
    }
    let mut found = None;
    for start in 0..=hay.len() - needle.len() {
        if hay[start].1 == needle[0] && hay[start..start + needle.len()].iter().zip(&needle).all(|((_, a), b)| a == b) {
            if found.is_some() {
                return None;
            }
            found = Some(start);
        }
    }
    let at = found?;
    if needle.iter().eq(visible(new).iter().map(|(_, c)| c)) {
        return None; // only layout or quotes differ: nothing this tier can do
    }
    let new_vis = visible(new);
    let new_chars: Vec<char> = new_vis.iter().map(|(_, c)| *c).collect();
    let prefix = needle.iter().zip(&new_chars).take_while(|(a, b)| a == b).count();
    let room = needle.len().min(new_chars.len()) - prefix;
    let suffix = needle.iter().rev().zip(new_chars.iter().rev()).take(room).take_while(|(a, b)| a == b).count();
    // Whole words and numbers change, not their last digits: `30` → `60`,
    // not `3` → `6`.
    let word = |c: &char| c.is_alphanumeric() || *c == '_' || *c == '.';
    let (mut prefix, mut suffix) = (prefix, suffix);
    while prefix > 0
        && word(&needle[prefix - 1])
        && (needle.get(prefix).is_some_and(word) || new_chars.get(prefix).is_some_and(word))
    {
        prefix -= 1;
    }
    let (nl, nn) = (needle.len(), new_chars.len());
    while suffix > 0
        && word(&needle[nl - suffix])
        && ((nl - suffix > prefix && word(&needle[nl - suffix - 1]))
            || (nn - suffix > prefix && word(&new_chars[nn - suffix - 1])))
    {
        suffix -= 1;
    }
    let end_of = |i: usize| hay[i].0 + hay[i].1.len_utf8();
    // The changed characters of the file: needle[prefix .. len - suffix].
    let (from, to) = if prefix + suffix < needle.len() {
        (hay[at + prefix].0, end_of(at + needle.len() - suffix - 1))
    } else if prefix > 0 {
        let after = end_of(at + prefix - 1);
        (after, after)
    } else {
        (hay[at].0, hay[at].0)
    };
    let replacement = if prefix + suffix < new_chars.len() {
        let start = new_vis[prefix].0;
        let last = new_vis[new_chars.len() - suffix - 1];
        new[start..last.0 + last.1.len_utf8()].to_owned()
    } else {
        String::new()
    };
    // A deletion takes the spaces before it along when nothing follows on
    // its line (no trailing blank is left behind).
    let mut from = from;
    let bytes = content.as_bytes();
    if replacement.is_empty() && (to == bytes.len() || matches!(bytes[to], b'\n' | b'\r')) {
        while from > 0 && matches!(bytes[from - 1], b' ' | b'\t') {
            from -= 1;
        }
    }
    let line_of = |b: usize| content.as_bytes()[..b].iter().filter(|c| **c == b'\n').count() + 1;
    let lines = (line_of(hay[at].0), line_of(hay[at + needle.len() - 1].0));
    Some(Splice { from, to, replacement, lines })
}

/// Non-blank file lines `old_string` may leave out between two of its lines.
const MAX_GAP: usize = 3;
/// Non-blank file lines `old_string` may leave out in all.
const MAX_SKIPPED: usize = 6;
/// Lines of `old_string` or `new_string` beyond which [`gapped`] does not try.
const MAX_GAPPED_LINES: usize = 200;

/// An edit whose `old_string` matched with file lines left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gapped {
    /// The whole file after the edit.
    pub updated: String,
    /// 1-based first and last file line of the matched region.
    pub lines: (usize, usize),
    /// 1-based file lines inside the region that `old_string` left out
    /// (kept as they are).
    pub skipped: Vec<usize>,
}

/// A small model quotes a function without its docstring or a comment:
/// `old_string`'s non-blank lines, each compared trimmed, appear in the file
/// in order with at most [`MAX_GAP`] other lines between two of them. When
/// exactly one region matches so, the lines `new_string` changes (a line
/// diff of `old_string` against `new_string`) are changed there; the lines
/// it left out stay, and inserted lines get the region's indentation.
/// `None`: no match, several, or nothing to change.
pub fn gapped(content: &str, old: &str, new: &str) -> Option<Gapped> {
    let old_lines: Vec<&str> = old.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let new_lines: Vec<&str> = new.trim_matches(['\n', '\r']).lines().map(|l| l.trim_end_matches('\r')).collect();
    if old_lines.len() < 2 || old_lines.len() > MAX_GAPPED_LINES || new_lines.len() > MAX_GAPPED_LINES {
        return None;
    }
    if content.len() > MAX_SQUEEZED_BYTES {
        return None;
    }
    let file: Vec<&str> = content.split_inclusive('\n').collect();
    let mut found: Option<Vec<usize>> = None;
    for start in (0..file.len()).filter(|&i| file[i].trim() == old_lines[0]) {
        let Some(map) = embed(&file, start, &old_lines) else { continue };
        if found.is_some() {
            return None;
        }
        found = Some(map);
    }
    let map = found?;
    let (kept, inserted) = line_diff(&old_lines, &new_lines);
    if kept.iter().all(|k| *k) && inserted.iter().all(Vec::is_empty) {
        return None;
    }
    let eol = if file[map[0]].ends_with("\r\n") { "\r\n" } else { "\n" };
    let file_indent: String = file[map[0]].chars().take_while(|c| *c == ' ' || *c == '\t').collect();
    let old_first = old.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let old_indent: String = old_first.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
    let emit = |out: &mut String, lines: &[usize]| {
        for &n in lines {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push_str(eol);
            }
            let line = new_lines[n];
            if !line.trim().is_empty() {
                let body = line.strip_prefix(old_indent.as_str()).unwrap_or(line.trim_start());
                out.push_str(&file_indent);
                out.push_str(body);
            }
            out.push_str(eol);
        }
    };
    let (first, last) = (map[0], map[map.len() - 1]);
    let mut updated: String = file[..first].concat();
    emit(&mut updated, &inserted[0]);
    let mut skipped = Vec::new();
    for (k, line) in file.iter().enumerate().take(last + 1).skip(first) {
        match map.iter().position(|m| *m == k) {
            Some(j) => {
                if kept[j] {
                    updated.push_str(line);
                }
                emit(&mut updated, &inserted[j + 1]);
            }
            None => {
                if !line.trim().is_empty() {
                    skipped.push(k + 1);
                }
                updated.push_str(line);
            }
        }
    }
    updated.push_str(&file[last + 1..].concat());
    Some(Gapped { updated, lines: (first + 1, last + 1), skipped })
}

/// The file lines (0-based) that `old`'s lines match from `start` on, or
/// `None` when a gap is too long or the file ends.
fn embed(file: &[&str], start: usize, old: &[&str]) -> Option<Vec<usize>> {
    let mut map = vec![start];
    let mut skipped = 0;
    for want in &old[1..] {
        let mut k = map[map.len() - 1] + 1;
        let mut gap = 0;
        while file.get(k)?.trim() != *want {
            if !file[k].trim().is_empty() {
                gap += 1;
                if gap > MAX_GAP {
                    return None;
                }
            }
            k += 1;
        }
        skipped += gap;
        map.push(k);
    }
    (skipped <= MAX_SKIPPED).then_some(map)
}

/// A line diff (longest common subsequence, lines compared trimmed):
/// whether each `old` line is kept, and the `new` lines inserted before
/// `old[0]` (`[0]`) and after each `old[j]` (`[j + 1]`).
fn line_diff(old: &[&str], new: &[&str]) -> (Vec<bool>, Vec<Vec<usize>>) {
    let (n, m) = (old.len(), new.len());
    let mut lcs = vec![vec![0u16; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if old[i] == new[j].trim() { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut kept = vec![false; n];
    let mut inserted = vec![Vec::new(); n + 1];
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && old[i] == new[j].trim() {
            kept[i] = true;
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            i += 1; // old[i] deleted
        } else {
            inserted[i].push(j);
            j += 1;
        }
    }
    (kept, inserted)
}

/// When nothing matches: the region of the file most like `old`, quoted
/// with line numbers (as many lines as `old` has, at most 12), so the next
/// try can copy it. Empty when no line is even half alike.
pub fn closest_region(content: &str, old: &str) -> String {
    let wanted: Vec<&str> = old.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let Some(first) = wanted.first() else { return String::new() };
    let lines: Vec<&str> = content.lines().take(50_000).collect();
    let mut best: Option<(f64, usize)> = None;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.len() > first.len() * 3 + 16 || first.len() > t.len() * 3 + 16 {
            continue;
        }
        let score = strsim::normalized_levenshtein(t, first);
        if best.is_none_or(|(s, _)| score > s) {
            best = Some((score, i));
        }
    }
    let Some((score, start)) = best.filter(|(s, _)| *s >= 0.5) else { return String::new() };
    let count = wanted.len().clamp(1, 12);
    let quoted: String = lines
        .iter()
        .enumerate()
        .skip(start)
        .take(count)
        .map(|(i, l)| format!("{:>6}\t{}\n", i + 1, l.trim_end_matches('\r')))
        .collect();
    format!(
        "The closest region is line {}{} ({:.0}% alike on its first line):\n{quoted}",
        start + 1,
        if count > 1 { format!("-{}", (start + count).min(lines.len())) } else { String::new() },
        score * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(content: &str, s: &Splice) -> String {
        format!("{}{}{}", &content[..s.from], s.replacement, &content[s.to..])
    }

    #[test]
    fn a_squeezed_json_edit_changes_only_the_value() {
        let content =
            "{\n  \"server\": {\n    \"host\": \"localhost\",\n    \"timeout\": 30,\n    \"retries\": 2\n  }\n}\n";
        let s = squeezed(content, r#""timeout": 30, "retries": 2"#, r#""timeout": 60, "retries": 2"#).unwrap();
        assert_eq!(s.lines, (4, 5));
        assert_eq!(
            apply(content, &s),
            "{\n  \"server\": {\n    \"host\": \"localhost\",\n    \"timeout\": 60,\n    \"retries\": 2\n  }\n}\n"
        );
    }

    #[test]
    fn rewrapped_code_inserts_and_deletes_in_place() {
        let content = "def f(a,\n      b):\n    return a + b\n";
        let s = squeezed(content, "def f(a, b):\n    return a + b", "def f(a, b):\n    return a * b").unwrap();
        assert_eq!(apply(content, &s), "def f(a,\n      b):\n    return a * b\n");
        let s = squeezed(content, "def f(a, b): return a + b", "def f(a, b): return a").unwrap();
        assert_eq!(apply(content, &s), "def f(a,\n      b):\n    return a\n");
        assert!(squeezed("x = 1\nx = 1\n", "x =1", "x = 2").is_none(), "too short");
        assert!(squeezed("value = 1\nvalue = 1\n", "value=1", "value = 2").is_none(), "ambiguous");
        let json = "{\n  \"server\": {\n    \"host\": \"localhost\",\n    \"timeout\": 30\n  }\n}\n";
        let s = squeezed(json, "server: {host: 'localhost', timeout: 30}", "server: {host: 'localhost', timeout: 60}");
        assert_eq!(apply(json, &s.unwrap()), json.replace("30", "60"), "quotes ignored, the file's kept");
    }

    #[test]
    fn an_old_string_that_leaves_out_a_line_still_edits_the_right_lines() {
        let content =
            "import os\n\ndef get_total(prices):\n    \"\"\"Sum, rounded.\"\"\"\n    return round(sum(prices), 2)\n";
        let g = gapped(
            content,
            "def get_total(prices):\n    return round(sum(prices), 2)",
            "def compute_total(prices):\n    return round(sum(prices), 2)",
        )
        .unwrap();
        assert_eq!(g.lines, (3, 5));
        assert_eq!(g.skipped, vec![4]);
        assert_eq!(g.updated, content.replace("get_total", "compute_total"));
        // Inserted lines take the region's indentation; a deleted line goes.
        let content = "class A:\n    def f(self, x):\n        # doubles\n        y = x\n        return y * 2\n";
        let g = gapped(
            content,
            "def f(self, x):\n    y = x\n    return y * 2",
            "def f(self, x):\n    if x is None:\n        return 0\n    return x * 2",
        )
        .unwrap();
        assert_eq!(
            g.updated,
            "class A:\n    def f(self, x):\n        # doubles\n        if x is None:\n            return 0\n        return x * 2\n"
        );
        assert!(gapped("a = 1\nx\nb = 2\na = 1\ny\nb = 2\n", "a = 1\nb = 2", "a = 1\nb = 3").is_none(), "two regions");
        assert!(gapped("a = 1\n1\n2\n3\n4\nb = 2\n", "a = 1\nb = 2", "a = 1\nb = 3").is_none(), "gap too long");
    }

    #[test]
    fn the_closest_region_is_quoted_with_line_numbers() {
        let content = "a = 1\ndef total(items):\n    return sum(items)\nb = 2\n";
        let q = closest_region(content, "def totals(item):\n    return sum(item)");
        assert!(q.starts_with("The closest region is line 2-3"), "{q}");
        assert!(q.contains("     2\tdef total(items):\n     3\t    return sum(items)\n"), "{q}");
    }
}
