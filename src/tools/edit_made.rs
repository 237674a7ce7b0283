//! Edits that look made already: a small model repeats its last call.
//!
//! Owns: the two facts that tell such an edit from one still to make, and
//! the errors `edit_file` answers them with (nothing is written; the model
//! is told why and how to change the text anyway). Neither is "no change":
//! that is said only when the edit would write the bytes the file holds.
//!
//! - [`inside_new_string`]: `old_string` is part of `new_string`, and every
//!   place it matches already reads `new_string` ("Welcom" -> "Welcome"
//!   again would write "Welcomee").
//! - [`gone_since`]: the file held `old_string` when this send first went
//!   to change it, and the send's own earlier call took it away.
//!
//! A missing `old_string` whose `new_string` the file holds counts as made
//! only for a `new_string` of at least `MIN_ALREADY_CHARS`.

/// Characters `new_string` needs (trimmed) before an edit whose
/// `old_string` is missing and whose `new_string` is present counts as made.
pub(super) const MIN_ALREADY_CHARS: usize = 8;

/// Where the first match of `old` is, when `old` is part of `new` and at
/// every match in `starts` (byte offsets of `old` in `content`) the file
/// already reads `new`; `None` otherwise.
pub fn inside_new_string(content: &str, starts: &[usize], old: &str, new: &str) -> Option<usize> {
    let offset = new.find(old)?;
    let covered = |at: usize| at >= offset && content.get(at - offset..).is_some_and(|t| t.starts_with(new));
    (!starts.is_empty() && starts.iter().all(|&at| covered(at))).then(|| starts[0])
}

/// The error for an edit [`inside_new_string`] found made (`line`: 1-based).
pub fn made_again(shown: &str, line: usize) -> String {
    format!(
        "{shown}: nothing was written; old_string is part of new_string, and where it matches (line {line}) the \
         file already reads new_string, so this edit looks made already. Go on with the rest of the task (to \
         change that text again, put the whole of it in old_string)."
    )
}

/// The error for an edit whose old_string the file held before this send
/// changed it and holds no more (`deletion`: new_string is empty).
pub fn gone_since(shown: &str, deletion: bool) -> String {
    if deletion {
        format!(
            "{shown}: old_string not found, and nothing was written; it was in the file before your earlier \
             change in this request, which removed it, so this deletion looks made already. Go on with the rest \
             of the task."
        )
    } else {
        format!(
            "{shown}: old_string not found, and nothing was written; it was in the file before your earlier \
             change in this request, which changed that part. Call read_file to see the file as it is now."
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_edit_whose_every_match_reads_new_string_is_made() {
        let fixed = "a = \"Welcome\"\nb = \"Welcome\"\n";
        let starts: Vec<usize> = fixed.match_indices("Welcom").map(|(i, _)| i).collect();
        assert_eq!(inside_new_string(fixed, &starts, "Welcom", "Welcome"), Some(5));
        // One place still to fix: the edit is not made.
        let half = "a = \"Welcome\"\nb = \"Welcom\"\n";
        let starts: Vec<usize> = half.match_indices("Welcom").map(|(i, _)| i).collect();
        assert_eq!(inside_new_string(half, &starts, "Welcom", "Welcome"), None);
        // old_string not part of new_string, or no match: not this rule.
        assert_eq!(inside_new_string(fixed, &[5], "Welcome", "Hello"), None);
        assert_eq!(inside_new_string(fixed, &[], "Welcom", "Welcome"), None);
        // new_string starting before old_string: checked from there, on char boundaries.
        assert_eq!(inside_new_string("éy", &[2], "y", "éy"), Some(2));
        assert_eq!(inside_new_string("éy", &[2], "y", "ay"), None, "byte 1 is inside é");
    }
}
