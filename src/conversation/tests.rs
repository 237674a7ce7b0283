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
    let p = c.prune_tool_results(5000, protect);
    assert_eq!(p.messages, 2, "two oldest results, the last two answers kept");
    assert_eq!(before - c.bytes(), p.bytes_freed);
    assert!(c.text_of(3).starts_with(PRUNED_MARK) && c.text_of(3).contains("read_file output of 2000 lines"));
    assert_eq!(c.prune_tool_results(usize::MAX, protect).messages, 0, "pruned once only");
    c.compact(protect, "read two files");
    assert_eq!(c.role_of(1), "user");
    assert!(c.text_of(1).contains("read two files") && c.text_of(1).contains("fix the bug"));
    assert_eq!(c.role_of(2), "assistant");
    assert_eq!(c.len(), 2 + 4);
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
