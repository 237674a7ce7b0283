//! Which tool calls of one model answer run.
//!
//! Owns: the rules that keep a runaway answer (a small model writing the
//! same call a hundred times) from running away: identical calls (same name
//! and canonical arguments) run once, at most `max_tool_calls_per_turn`
//! distinct calls run, and the model is told in a note what was not run and
//! why. Only the calls that run are kept in the conversation, so dropped
//! copies cost no context.

use super::loop_guard::call_signature;
use crate::model::ToolCall;

/// Calls listed by name in a note, at most.
const NOTE_LIST: usize = 5;

/// What runs of one answer's tool calls.
#[derive(Debug, Default, PartialEq)]
pub struct Turn {
    /// The calls that run, in the order the model gave them.
    pub run: Vec<ToolCall>,
    /// The most times any one call appeared in the answer (1 when none repeats).
    pub most_copies: u32,
    /// For the model, appended to the last result: what was not run and why.
    pub note: Option<String>,
}

/// Splits `calls` into those that run (first of each identical group, up to
/// `cap` of them) and a note about the rest.
pub fn plan(calls: &[ToolCall], cap: usize) -> Turn {
    let mut seen: Vec<(String, u32)> = Vec::new();
    let mut run = Vec::new();
    let mut over_cap = Vec::new();
    let mut duplicates = 0usize;
    for call in calls {
        let sig = call_signature(call);
        if let Some((_, n)) = seen.iter_mut().find(|(s, _)| *s == sig) {
            *n = n.saturating_add(1);
            duplicates += 1;
            continue;
        }
        seen.push((sig.clone(), 1));
        if run.len() < cap {
            run.push(call.clone());
        } else {
            over_cap.push(sig);
        }
    }
    let most_copies = seen.iter().map(|(_, n)| *n).max().unwrap_or(1);
    let mut notes = Vec::new();
    if duplicates > 0 {
        notes.push(format!(
            "your answer repeated identical tool calls {duplicates} times; each distinct call ran once. \
             Do not ask again for a result you already have"
        ));
    }
    if !over_cap.is_empty() {
        let listed: Vec<&str> = over_cap.iter().take(NOTE_LIST).map(String::as_str).collect();
        let more = over_cap.len().saturating_sub(NOTE_LIST);
        let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
        notes.push(format!(
            "only the first {cap} tool calls of one answer run; {} were not run: {}{tail}. \
             Ask for them in your next answer if you still need them",
            over_cap.len(),
            listed.join(", ")
        ));
    }
    let note = (!notes.is_empty()).then(|| format!("[pirn: {}.]", notes.join("; ")));
    Turn { run, most_copies, note }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: usize, name: &str, args: &str) -> ToolCall {
        ToolCall { id: format!("c{id}"), name: name.into(), arguments: args.into() }
    }

    #[test]
    fn identical_calls_run_once_and_the_cap_holds() {
        let calls: Vec<ToolCall> = (0..200).map(|i| call(i, "read_file", r#"{"file_path":"a"}"#)).collect();
        let t = plan(&calls, 16);
        assert_eq!(t.run.len(), 1);
        assert_eq!(t.run[0].id, "c0");
        assert_eq!(t.most_copies, 200);
        assert!(t.note.unwrap().contains("199 times"));
        let many: Vec<ToolCall> = (0..20).map(|i| call(i, "glob", &format!(r#"{{"pattern":"{i}"}}"#))).collect();
        let t = plan(&many, 16);
        assert_eq!(t.run.len(), 16);
        assert_eq!(t.most_copies, 1);
        let note = t.note.unwrap();
        assert!(note.contains("4 were not run") && note.contains(r#"glob({"pattern":"16"})"#), "{note}");
        assert_eq!(plan(&many[..2], 16), Turn { run: many[..2].to_vec(), most_copies: 1, note: None });
    }
}
