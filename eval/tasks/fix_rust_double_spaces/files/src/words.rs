/// Number of words in `text`.
pub fn count_words(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    text.split(' ').count()
}

/// The longest word, the first one on a tie.
pub fn longest_word(text: &str) -> Option<&str> {
    let mut best: Option<&str> = None;
    for w in text.split_whitespace() {
        if best.map_or(true, |b| w.len() > b.len()) {
            best = Some(w);
        }
    }
    best
}
