//! The text form of a file log: splitting it into entries, finding a torn
//! tail, and a listing's title.

use std::path::Path;

use super::entry::Stored;
use super::error::StoreError;

/// A listing's title: the first line of `message`, at most 80 characters.
pub fn title_of(message: &str) -> String {
    let line = message.trim().lines().next().unwrap_or("");
    let mut t: String = line.chars().take(80).collect();
    if line.chars().nth(80).is_some() {
        t.push('…');
    }
    t
}

/// Parses a log: its entries and the length of the text they came from.
/// A last line without a newline or that is not an entry is torn (left
/// out of the length); any other bad line is [`StoreError::Corrupt`].
pub(super) fn parse(text: &[u8], path: &Path) -> Result<(Vec<Stored>, usize), StoreError> {
    let mut entries = Vec::new();
    let mut pos = 0;
    let mut line_no = 0;
    while pos < text.len() {
        line_no += 1;
        let Some(nl) = memchr::memchr(b'\n', &text[pos..]) else { break };
        let line = &text[pos..pos + nl];
        match serde_json::from_slice::<Stored>(line) {
            Ok(e) => entries.push(e),
            // The last complete line can be torn too (a crash between the
            // bytes and a later line is impossible, but a partial line
            // followed by a newline of the next append is not).
            Err(_) if pos + nl + 1 == text.len() => break,
            Err(e) => {
                return Err(StoreError::Corrupt { path: path.to_owned(), line: line_no, message: e.to_string() });
            }
        }
        pos += nl + 1;
    }
    Ok((entries, pos))
}
