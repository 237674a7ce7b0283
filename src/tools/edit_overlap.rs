//! `edit_file`'s widening of a match over lines that `new_string` repeats.
//!
//! A small model fixes `def total(stock)` by sending that one line as
//! `old_string` and, as `new_string`, the fixed line followed by the body
//! and the call that come after it in the file. Replaced as given, the body
//! and the call end up in the file twice and the script breaks in a new way
//! (seen on the eval's tune half: a missing colon "fixed" into an
//! IndentationError). The model meant to replace those lines too.
//!
//! Owns: [`widen`]. When the last lines of `new_string` are the lines that
//! follow the match in the file (or its first lines are the ones before
//! it), compared with indentation, blank lines and quote style ignored, the
//! span replaced grows over them. The repeated lines must carry some text
//! ([`MIN_OVERLAP_CHARS`]): a lone `}` or `pass` is no evidence.

/// Characters the repeated lines need, together, to count as an overlap.
pub const MIN_OVERLAP_CHARS: usize = 12;
/// Lines looked at on each side of the match.
const MAX_LINES: usize = 40;

/// A match grown over the lines `new_string` repeats.
#[derive(Debug, PartialEq, Eq)]
pub struct Widened {
    /// Byte range of the file to replace.
    pub from: usize,
    pub to: usize,
    /// Lines taken in after and before the match.
    pub after: usize,
    pub before: usize,
}

/// A line as compared: trimmed, with `'` read as `"`.
fn norm(line: &str) -> String {
    line.trim().replace('\'', "\"")
}

/// The non-blank lines of `text`, compared form.
fn lines_of(text: &str) -> Vec<String> {
    text.lines().map(norm).filter(|l| !l.is_empty()).collect()
}

/// Widens the match `content[from..to]` of `old` (see the module docs);
/// `None` when `new` repeats none of the neighbouring lines. The match
/// must cover whole lines at the side it grows on.
pub fn widen(content: &str, from: usize, to: usize, old: &str, new: &str) -> Option<Widened> {
    let new_lines = lines_of(new);
    let old_lines = lines_of(old);
    let mut w = Widened { from, to, after: 0, before: 0 };
    // After: the next non-blank lines of the file, with where each ends.
    let rest = &content[to..];
    if rest.is_empty() || rest.starts_with('\n') || rest.starts_with("\r\n") {
        let mut following: Vec<(String, usize)> = Vec::new();
        let mut at = to;
        for line in rest.split_inclusive('\n') {
            let body = line.trim_end_matches(['\n', '\r']);
            if at > to && !body.trim().is_empty() {
                following.push((norm(body), at + body.len()));
            }
            at += line.len();
            if following.len() == MAX_LINES {
                break;
            }
        }
        // The first "line" of `rest` is the end of the matched line itself.
        let k = overlap(
            &new_lines,
            &old_lines,
            |k| following.get(..k).map(|f| f.iter().map(|(l, _)| l.clone()).collect()),
            true,
        );
        if let Some(k) = k {
            w.to = following[k - 1].1;
            w.after = k;
        }
    }
    // Before: the previous non-blank lines, nearest first, with where each starts.
    if from == 0 || content[..from].ends_with('\n') {
        let mut starts: Vec<(String, usize)> = Vec::new();
        let mut at = 0;
        for line in content[..from].split_inclusive('\n') {
            if !line.trim().is_empty() {
                starts.push((norm(line), at));
            }
            at += line.len();
        }
        let preceding: Vec<(String, usize)> = starts.into_iter().rev().take(MAX_LINES).collect();
        let k = overlap(
            &new_lines,
            &old_lines,
            |k| preceding.get(..k).map(|p| p.iter().rev().map(|(l, _)| l.clone()).collect()),
            false,
        );
        if let Some(k) = k {
            w.from = preceding[k - 1].1;
            w.before = k;
        }
    }
    (w.after + w.before > 0).then_some(w)
}

/// The most lines `k` with which `new` ends (`tail`) or starts with the
/// file's `k` neighbouring lines, when they are not `old`'s own lines there
/// and carry [`MIN_OVERLAP_CHARS`].
fn overlap(
    new: &[String],
    old: &[String],
    neighbours: impl Fn(usize) -> Option<Vec<String>>,
    tail: bool,
) -> Option<usize> {
    let most = new.len().saturating_sub(1).min(MAX_LINES);
    (1..=most).rev().find(|&k| {
        let Some(file) = neighbours(k) else { return false };
        let part = if tail { &new[new.len() - k..] } else { &new[..k] };
        let olds = if tail { old.get(old.len().saturating_sub(k)..) } else { old.get(..k.min(old.len())) };
        part == file.as_slice()
            && olds.is_none_or(|o| o != part)
            && part.iter().map(String::len).sum::<usize>() >= MIN_OVERLAP_CHARS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_string_that_runs_on_takes_the_lines_it_repeats() {
        let file = "STOCK = {\"apples\": 12}\n\n\ndef total(stock)\n    return sum(stock.values())\n\n\nprint(f\"Total: {total(STOCK)}\")\n";
        let old = "def total(stock)";
        let from = file.find(old).unwrap();
        let new = "def total(stock):\n    return sum(stock.values())\n\nprint(f'Total: {total(STOCK)}')";
        let w = widen(file, from, from + old.len(), old, new).unwrap();
        assert_eq!((w.after, w.before), (2, 0));
        assert_eq!(&file[w.to..], "\n", "through the print line");
        // Lines repeated before the match too.
        let new = "STOCK = {'apples': 12}\n\n\ndef total(stock):";
        let w = widen(file, from, from + old.len(), old, new).unwrap();
        assert_eq!((w.from, w.before, w.after), (0, 1, 0));
    }

    #[test]
    fn no_overlap_no_widening() {
        let file = "a = 1\nb = 2\n}\n";
        assert_eq!(widen(file, 0, 5, "a = 1", "a = 3"), None);
        assert_eq!(widen(file, 6, 11, "b = 2", "b = 3\n}"), None, "a lone brace is no evidence");
        let mid = "x = compute(1)\nreturn x + y\n";
        assert_eq!(widen(mid, 0, 11, "x = compute", "x = compute(2)\nreturn x + y"), None, "mid-line match");
    }
}
