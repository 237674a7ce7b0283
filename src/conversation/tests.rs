//! Unit tests of the conversation.

use super::*;

#[test]
fn repair_answers_dangling_tool_calls() {
    let count = Arc::new(AtomicU64::new(0));
    let mut c = Conversation::new("sys", count.clone());
    c.push_user("hi");
    let calls = [
        ToolCall { id: "a".into(), name: "bash".into(), arguments: "{}".into() },
        ToolCall { id: "b".into(), name: "bash".into(), arguments: "{}".into() },
    ];
    c.push_assistant("", &calls);
    c.push_tool_result("a", "done".into());
    assert_eq!(c.repair("cancelled"), 1);
    assert_eq!(c.repair("cancelled"), 0);
    assert_eq!(count.load(Ordering::Relaxed), 4);
}

#[test]
fn pruning_stubs_the_oldest_results_and_compaction_keeps_calls_whole() {
    let mut c = Conversation::new("sys", Arc::new(AtomicU64::new(0)));
    c.push_user("fix the bug");
    for i in 0..4 {
        let call = ToolCall { id: format!("c{i}"), name: "read_file".into(), arguments: "{}".into() };
        c.push_assistant("", std::slice::from_ref(&call));
        c.push_tool_result(&call.id, "x\n".repeat(2000));
    }
    let before = c.bytes();
    let protect = c.recent_start(2);
    assert_eq!(c.role_of(protect), "assistant");
    let p = c.prune_outputs(5000, protect);
    assert_eq!(p.messages, 2, "two oldest results, the last two answers kept");
    assert_eq!(before - c.bytes(), p.bytes_freed);
    assert!(c.text_of(3).starts_with(PRUNED_MARK) && c.text_of(3).contains("read_file output of 2000 lines"));
    assert_eq!(c.prune_outputs(usize::MAX, protect).messages, 0, "pruned once only");
    c.compact(protect, "read two files");
    assert_eq!(c.role_of(1), "user");
    assert!(c.text_of(1).contains("read two files") && c.text_of(1).contains("fix the bug"));
    assert_eq!(c.role_of(2), "assistant");
    assert_eq!(c.len(), 2 + 4);
    assert_eq!(c.bytes(), (0..c.len()).map(|i| c.bytes_of(i)).sum::<usize>());
}

#[test]
fn pruning_stubs_old_notes_but_never_the_request_or_the_last_note() {
    let mut c = Conversation::new("sys", Arc::new(AtomicU64::new(0)));
    let request = format!("fix the bug {}", "r".repeat(3000));
    c.push_user(&request);
    for i in 0..3 {
        let call = ToolCall { id: format!("w{i}"), name: "write_file".into(), arguments: "{}".into() };
        c.push_assistant("", std::slice::from_ref(&call));
        c.push_tool_result(&call.id, "ok".into());
        c.push_note(&format!("check {i} failed:\n{}", "E\n".repeat(1500)));
    }
    let protect = c.recent_start(2);
    let p = c.prune_outputs(usize::MAX, protect);
    assert_eq!(p.messages, 1, "the first check's note only: the later ones follow the last two answers");
    assert!(c.text_of(4).starts_with("[pirn] [pruned: an earlier note of 1501 lines"), "{}", c.text_of(4));
    assert_eq!(c.last_request(), Some(1), "a pruned note is still not a request");
    assert_eq!(c.text_of(1), request, "the user's message stays whole");
    // The last resort (everything may go) still keeps the note being answered.
    let p = c.prune_outputs(usize::MAX, c.len());
    assert_eq!(p.messages, 1, "the second check's note");
    assert!(c.text_of(c.len() - 1).starts_with("[pirn] check 2 failed"));
    assert_eq!(c.bytes(), (0..c.len()).map(|i| c.bytes_of(i)).sum::<usize>());
}

#[test]
fn notes_are_not_requests() {
    let mut c = Conversation::new("sys", Arc::new(AtomicU64::new(0)));
    assert!(c.is_fresh());
    c.push_user("fix the bug");
    let call = ToolCall { id: "c0".into(), name: "read_file".into(), arguments: "{}".into() };
    c.push_assistant("", std::slice::from_ref(&call));
    c.push_tool_result(&call.id, "x".into());
    c.push_assistant("fixed", &[]);
    c.push_note("That is not true yet");
    assert!(c.text_of(5).starts_with(NOTE_MARK));
    assert_eq!(c.last_request(), Some(1));
    c.push_assistant("done", &[]);
    c.compact(6, "looked at it");
    assert!(c.text_of(1).contains("[The request being worked on]\nfix the bug"), "{}", c.text_of(1));
}

#[test]
fn only_an_answer_in_words_is_withdrawn() {
    let count = Arc::new(AtomicU64::new(0));
    let mut c = Conversation::new("sys", count.clone());
    c.push_user("make f return 2");
    let call = ToolCall { id: "a".into(), name: "read_file".into(), arguments: "{}".into() };
    c.push_assistant("", std::slice::from_ref(&call));
    assert!(!c.withdraw_answer(), "a tool call stays");
    c.push_tool_result("a", "def f(): return 1".into());
    assert!(!c.withdraw_answer(), "a tool result stays");
    let before = c.bytes();
    c.push_assistant("I changed f.", &[]);
    assert!(c.withdraw_answer());
    assert_eq!((c.len(), c.bytes(), count.load(Ordering::Relaxed)), (4, before, 3));
    assert!(!c.withdraw_answer(), "one answer, once");
}
