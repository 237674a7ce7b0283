//! `edit_file` and line endings in the default profile, through the real
//! binary with bytes compared: `old_string` as sent is matched before its
//! CRLF form (and its count alone decides whether it is ambiguous), and
//! `new_string` gets CRLF only from a match made with the file's CRLF
//! endings or, for a one-line `old_string`, from a file whose every line
//! ends so; whenever a line ending is converted, the result says so.

use serde_json::{Value, json};

use super::contract::{assert_bytes, assert_no_hidden_calls, tool_ends, tool_texts};
use super::finish::send_with;
use super::mock::{MockServer, Reply};

fn edit(path: &str, old: &str, new: &str) -> Reply {
    Reply::tool("edit_file", json!({"file_path": path, "old_string": old, "new_string": new}))
}

/// Runs one send in the default profile that makes `edits` in turn on
/// `files`; asserts every edit succeeded and the send ended ok; returns
/// each edit's result text, in order.
async fn edits_told(files: &[(&str, &str)], edits: Vec<Reply>) -> (Vec<String>, tempfile::TempDir, MockServer) {
    let n = edits.len();
    let mut script = edits;
    script.push(Reply::text(&["Done."]));
    let (events, r, mock, w) = send_with(script, files, "Make the edits.", json!({})).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_no_hidden_calls(&r, &mock, n + 1);
    let ends: Vec<Value> = tool_ends(&events).into_iter().cloned().collect();
    assert_eq!(ends.len(), n, "{ends:?}");
    let told: Vec<String> = (1..=n).map(|i| tool_texts(&mock.requests()[i].body).join("\n")).collect();
    for (end, text) in ends.iter().zip(&told) {
        assert_eq!(end["is_error"], false, "{text}");
    }
    (told, w.workspace, mock)
}

#[tokio::test]
async fn edit_line_endings_the_text_as_sent_is_edited_before_its_crlf_form_in_a_mixed_file() {
    let once = "a\r\nb\r\nx\na\nb\n";
    let crlf_twice = "a\r\nb\r\na\r\nb\r\nx\na\nb\n";
    let files = [("once.txt", once), ("twice.txt", crlf_twice)];
    let (told, ws, _mock) =
        edits_told(&files, vec![edit("once.txt", "a\nb", "A\nB"), edit("twice.txt", "a\nb", "A\nB")]).await;
    // The LF text sent occurs once in each file (its last two lines): it is
    // what changes, as sent; the CRLF lines that read the same stay.
    assert_bytes(ws.path(), "once.txt", "a\r\nb\r\nx\nA\nB\n");
    assert_bytes(ws.path(), "twice.txt", "a\r\nb\r\na\r\nb\r\nx\nA\nB\n");
    for text in &told {
        assert!(text.contains("replaced 1 occurrence") && !text.contains("CRLF"), "{text}");
    }
}

#[tokio::test]
async fn edit_line_endings_new_string_gets_crlf_only_where_the_match_or_the_whole_file_has_it() {
    let stray = "line1\nline2\r\nline3\nline4\n";
    let literal = "s = \"a\r\nb\"\n\ndef f():\n    return 1\n";
    let dos = "one\r\ntwo\r\n";
    let files = [("stray.txt", stray), ("lit.py", literal), ("dos.txt", dos)];
    let script = vec![
        edit("stray.txt", "line4", "line4\nline5"),
        edit("lit.py", "    return 1", "    x = 1\n    return x"),
        edit("dos.txt", "two", "two\nthree"),
    ];
    let (told, ws, _mock) = edits_told(&files, script).await;
    // One CRLF in an LF file (a line, a string literal): new_string lands
    // as sent, and no CRLF is claimed.
    assert_bytes(ws.path(), "stray.txt", "line1\nline2\r\nline3\nline4\nline5\n");
    assert_bytes(ws.path(), "lit.py", "s = \"a\r\nb\"\n\ndef f():\n    x = 1\n    return x\n");
    assert!(!told[0].contains("CRLF") && !told[1].contains("CRLF"), "{told:?}");
    // A file whose every line ends with CRLF: new_string's break is the
    // file's, and the result says it was converted.
    assert_bytes(ws.path(), "dos.txt", "one\r\ntwo\r\nthree\r\n");
    assert!(told[2].contains("CRLF"), "{}", told[2]);
}
