//! The answer checks, one claim at a time.
use super::*;

fn all_tools() -> Vec<String> {
    ["read_file", "write_file", "edit_file", "glob", "grep", "bash"].map(String::from).to_vec()
}

#[test]
fn a_claimed_change_without_a_write_is_sent_back_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Progress::default();
    let req = "Create a file named hello.txt containing Hello";
    let first = p.review(req, "hello.txt has been created.", &all_tools(), dir.path());
    assert!(first.unwrap().starts_with("That is not true yet"));
    assert_eq!(p.review(req, "Done.", &all_tools(), dir.path()), None, "once per send");

    let mut p = Progress::default();
    p.record("write_file", "created hello.txt: 5 bytes written");
    assert_eq!(p.review(req, "Created.", &all_tools(), dir.path()), None);
}

#[test]
fn questions_and_failed_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Progress::default();
    assert_eq!(p.review("Why does create_file fail?", "Because.", &all_tools(), dir.path()), None);
    assert!(p.review("Can you fix the typo?", "Fixed.", &all_tools(), dir.path()).is_some());
    let mut p = Progress::default();
    p.record("edit_file", "Error: old_string not found");
    assert!(p.review("Fix the typo", "Fixed.", &all_tools(), dir.path()).is_some());
    let read_only = vec!["read_file".to_owned()];
    assert_eq!(Progress::default().review("Fix the typo", "Fixed.", &read_only, dir.path()), None);
}

#[test]
fn a_run_request_needs_a_bash_call() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Progress::default();
    let req = "Run `python3 compute.py` and tell me the number it prints.";
    assert!(
        p.review(req, "It prints 1664.", &all_tools(), dir.path())
            .unwrap()
            .contains("the command \"python3 compute.py\"")
    );
    let noun = "What is EXIT_CANCELLED (the exit code of `pirn run` when cancelled)? Read src/run.rs.";
    assert_eq!(Progress::default().review(noun, "It is 130.", &all_tools(), dir.path()), None);
    assert!(Progress::default().review("Please run the tests.", "They pass.", &all_tools(), dir.path()).is_some());
    let mut p = Progress::default();
    p.record("bash", "Error: exit code 1\nTraceback …");
    assert_eq!(p.review(req, "It fails.", &all_tools(), dir.path()), None);
}

#[test]
fn announced_work_is_sent_back_once() {
    assert!(announces_work("The bug is in stats.py. I will fix it and run the tests again."));
    assert!(announces_work("Let me update the file."));
    assert!(!announces_work("I fixed the bug; the tests pass. Will it scale? Yes."));
    let ws = std::env::temp_dir();
    let mut p = Progress::default();
    p.record("edit_file", "edited a.py: replaced 1 occurrence");
    let fix = "Fix the crash in a.py.";
    assert!(p.review(fix, "I will fix it next.", &["edit_file".into()], &ws).is_some());
    assert!(p.review(fix, "I will fix it next.", &["edit_file".into()], &ws).is_none(), "once");
}

#[test]
fn an_answer_resting_on_an_empty_search_is_sent_back_once() {
    let ws = std::env::temp_dir();
    let tools = ["glob".to_owned()];
    let q = "How many lines contain TODO?";
    let mut p = Progress::default();
    p.record("glob", "no files match \"src/**/*.rs\" under .. . contains: src/");
    assert!(p.review(q, "The answer is 0.", &tools, &ws).is_some_and(|m| m.contains("found nothing")));
    assert!(p.review(q, "The answer is 0.", &tools, &ws).is_none_or(|m| !m.contains("found nothing")), "once");
    let mut p = Progress::default();
    p.record("glob", "no files match \"*.rs\" under .");
    p.record("grep", "src/a.py:1:# TODO\n[1 matching line in 1 file]");
    assert!(p.review(q, "1", &tools, &ws).is_none(), "a search that found something is evidence");
}

#[test]
fn invented_paths_are_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src/net")).unwrap();
    std::fs::write(dir.path().join("src/net/protocol.py"), "").unwrap();
    let req = "In which file is parse_header defined?";
    let mut p = Progress::default();
    let msg = p.review(req, "It is defined in `src/parser.rs`.", &all_tools(), dir.path()).unwrap();
    assert!(msg.contains("src/parser.rs, which does not exist"), "{msg}");
    let mut p = Progress::default();
    for fine in
        ["In src/net/protocol.py.", "In protocol.py (functools.reduce, e.g. 3.14).", "See ./src/net/protocol.py"]
    {
        assert_eq!(p.review(req, fine, &all_tools(), dir.path()), None, "{fine}");
    }
    assert_eq!(p.review("Is there a notes.md?", "notes.md does not exist.", &all_tools(), dir.path()), None);
}

#[test]
fn a_count_rests_on_a_count_not_on_numbers_in_the_code() {
    let q = "How many test functions does test_m.py contain? Answer with the number.";
    let mut p = Progress::default();
    p.record("read_file", "     1\tdef test_a():\n     2\t    assert 2 + 1 == 3\n");
    p.record("grep", "test_m.py:6\n[6 matching lines in 1 file]");
    let told = p.review_number(q, "```json\n3\n```").expect("3 is in the code, not a count");
    assert!(told.contains("[6 matching lines in 1 file]"), "{told}");
    let mut p = Progress::default();
    p.record("bash", "stack.py: class Stack defines 5 methods: a, b, c, d, e");
    assert_eq!(p.review_number("How many methods does Stack define?", "5"), None, "a command's output counts");
    let mut p = Progress::default();
    p.record("read_file", "     1\tLIMIT = 24\n");
    assert_eq!(p.review_number("What is LIMIT in a.py? Answer with the number.", "24"), None, "not a count");
}
