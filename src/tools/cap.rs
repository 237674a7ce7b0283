//! The cap on what a tool result may put into the model's context
//! ([`cap_output`], at most [`MAX_RESULT_BYTES`] by default, head and tail
//! kept), the shorter preview a `tool_end` event carries ([`preview`]),
//! and cutting text at a character boundary.

/// Most bytes of one tool result sent to the model (head and tail kept).
pub const MAX_RESULT_BYTES: usize = 48 * 1024;

/// Longest `tool_end.result_preview`, in characters.
pub const PREVIEW_CHARS: usize = 500;

/// Cuts `text` to at most `max` bytes keeping its head and tail, with a
/// marker saying how many lines and bytes were left out.
pub fn cap_output(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let half = max / 2;
    let head_end = floor_char_boundary(&text, half);
    let tail_start = ceil_char_boundary(&text, text.len() - half);
    let omitted = &text[head_end..tail_start];
    let lines = omitted.bytes().filter(|b| *b == b'\n').count();
    format!("{}\n[... {lines} lines ({} bytes) omitted ...]\n{}", &text[..head_end], omitted.len(), &text[tail_start..])
}

/// At most [`PREVIEW_CHARS`] characters of a result, for `tool_end`.
pub fn preview(text: &str) -> String {
    match text.char_indices().nth(PREVIEW_CHARS - 14) {
        None => text.to_owned(),
        Some((i, _)) => format!("{} (truncated)", &text[..i]),
    }
}

pub(crate) fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

pub(crate) fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_keeps_head_and_tail() {
        let text: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        let capped = cap_output(text, 1000);
        assert!(capped.starts_with("line 0\n"));
        assert!(capped.ends_with("line 9999\n"));
        assert!(capped.contains("lines ("));
        assert!(preview(&"é".repeat(2000)).chars().count() <= PREVIEW_CHARS);
    }
}
