//! File checkpoints and rewind through the binary: a send that creates,
//! edits, deletes, renames and chmods files (through the file tools and
//! `bash`), a second send on top, and a `rewind` that puts every byte and
//! mode back; the refusal, changing nothing, when a file changed since;
//! `pirn sessions rewind`; `POST /v1/sessions/{id}/rewind`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

use super::http::{SseReader, client, daemon, new_session, post};
use super::mock::{MockServer, Reply};
use super::worker::{Worker, pirn_command};

const BINARY: &[u8] = &[0, 159, 146, 150, 255, 10, 0, 1];

/// Every file of `dir` (not hidden): path → (bytes, mode).
fn files(dir: &Path) -> std::collections::BTreeMap<String, (Vec<u8>, u32)> {
    let mut out = std::collections::BTreeMap::new();
    for e in walk(dir) {
        let m = std::fs::metadata(&e).unwrap();
        let rel = e.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
        out.insert(rel, (std::fs::read(&e).unwrap(), m.permissions().mode() & 0o7777));
    }
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if e.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

fn seed(ws: &Path) {
    std::fs::write(ws.join("keep.txt"), "line one\nline two\n").unwrap();
    std::fs::write(ws.join("bin.dat"), BINARY).unwrap();
    std::fs::write(ws.join("gone.txt"), "delete me\n").unwrap();
    std::fs::write(ws.join("run.sh"), "echo hi\n").unwrap();
    std::fs::set_permissions(ws.join("run.sh"), std::fs::Permissions::from_mode(0o640)).unwrap();
    std::fs::create_dir(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub/old_name.txt"), "moved\n").unwrap();
}

/// The first send's calls: a capable model's, one tool per answer.
fn first_send() -> Vec<Reply> {
    vec![
        Reply::tool("write_file", json!({"file_path": "new.txt", "content": "fresh\n"})),
        Reply::tool("read_file", json!({"file_path": "keep.txt"})),
        Reply::tool("edit_file", json!({"file_path": "keep.txt", "old_string": "line two", "new_string": "line 2"})),
        Reply::tool(
            "bash",
            json!({"command": "rm gone.txt && chmod 755 run.sh && printf 'X' > bin.dat && mv sub/old_name.txt sub/new_name.txt"}),
        ),
        Reply::text(&["Done."]),
    ]
}

#[tokio::test]
async fn a_rewind_puts_back_every_byte_and_mode_two_sends_changed() {
    let mut replies = first_send();
    replies
        .push(Reply::tool("edit_file", json!({"file_path": "keep.txt", "old_string": "line one", "new_string": "1"})));
    replies.push(Reply::text(&["Again."]));
    replies.push(Reply::tool("write_file", json!({"file_path": "new.txt", "content": "third\n"})));
    replies.push(Reply::text(&["Third."]));
    let mock = MockServer::start(replies).await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    seed(w.workspace.path());
    let (mut w, _) = w.init("0.3.0", json!({})).await;
    let ws = w.workspace.path().to_owned();
    let before = files(&ws);

    w.write(json!({"type": "send", "id": "1", "message": "Change the files."})).await;
    let (_, r) = w.result_for("1").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["checkpoint"]["files"], 7, "new, keep, gone, run.sh, bin.dat and both names: {r}");
    assert!(r["checkpoint"].get("unkept").is_none(), "{r}");
    w.write(json!({"type": "send", "id": "2", "message": "More."})).await;
    assert_eq!(w.result_for("2").await.1["status"], "ok");
    let changed = files(&ws);
    assert_ne!(changed, before);
    assert_eq!(changed["run.sh"].1, 0o755);

    w.write(json!({"type": "rewind", "id": "r1", "send_id": "1"})).await;
    let (_, r) = w.result_for("r1").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(files(&ws), before, "every byte and mode as before send 1");
    let rewound: Vec<(String, String)> = r["rewound"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap().to_owned(), f["action"].as_str().unwrap().to_owned()))
        .collect();
    assert!(rewound.contains(&("new.txt".into(), "deleted".into())), "{rewound:?}");
    assert!(rewound.contains(&("sub/new_name.txt".into(), "deleted".into())), "{rewound:?}");
    assert!(rewound.contains(&("gone.txt".into(), "restored".into())), "{rewound:?}");
    assert_eq!(rewound.len(), 7, "{rewound:?}");
    // Spent: the same rewind again finds nothing to do.
    w.write(json!({"type": "rewind", "id": "r2", "send_id": "1"})).await;
    let (_, r) = w.result_for("r2").await;
    assert_eq!(r["error"]["code"], "rewind_refused", "{r}");

    // A file changed since the send left it: refused, nothing written.
    w.write(json!({"type": "send", "id": "3", "message": "Third."})).await;
    assert_eq!(w.result_for("3").await.1["status"], "ok");
    std::fs::write(ws.join("new.txt"), "someone else\n").unwrap();
    let now = files(&ws);
    w.write(json!({"type": "rewind", "id": "r3", "send_id": "3"})).await;
    let (_, r) = w.result_for("r3").await;
    assert_eq!(r["error"]["code"], "rewind_refused", "{r}");
    assert_eq!(r["error"]["details"]["changed_since"], json!(["new.txt"]), "{r}");
    assert_eq!(files(&ws), now, "nothing changed");
}

#[tokio::test]
async fn the_sessions_command_and_the_http_route_rewind() {
    let mut replies = first_send();
    replies.extend(first_send());
    let mock = MockServer::start(replies).await;
    // `pirn run`, then `pirn sessions rewind` from a shell.
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    seed(&ws);
    let before = files(&ws);
    let out = pirn_command(&mock.base_url(), &[])
        .args(["run", "--cwd", ws.to_str().unwrap(), "--format", "jsonl", "Change the files."])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let result = lines.iter().find(|l| l["type"] == "result").unwrap();
    assert_eq!(result["status"], "ok", "{result}");
    let (sid, send) = (result["session_id"].as_str().unwrap(), result["id"].as_str().unwrap());
    assert_ne!(files(&ws), before);
    let out = pirn_command(&mock.base_url(), &[]).args(["sessions", "rewind", sid, send]).output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("deleted new.txt"), "{out:?}");
    assert_eq!(files(&ws), before);

    // Over HTTP: 202, then the result event names the files.
    let d = daemon(&mock.base_url(), &[]).await;
    seed(d.workspace());
    let before = files(d.workspace());
    let c = client();
    let id = new_session(&c, &d.base, json!({"tools": ["read_file", "write_file", "edit_file", "bash"]})).await;
    let url = |p: &str| format!("{}/v1/sessions/{id}{p}", d.base);
    let mut events = SseReader::new(c.get(url("/events")).send().await.unwrap());
    post(&c, &url("/sends"), json!({"message": "Change the files.", "send_id": "h1"})).await;
    events.until_result("h1").await;
    assert_ne!(files(d.workspace()), before);
    let (s, b) = post(&c, &url("/rewind"), json!({"send_id": "h1"})).await;
    assert_eq!(s, 202, "{b}");
    let frames = events.until_result(b["send_id"].as_str().unwrap()).await;
    let result = &frames.last().unwrap().data;
    assert_eq!(result["status"], "ok", "{result}");
    assert_eq!(result["rewound"].as_array().unwrap().len(), 7, "{result}");
    assert_eq!(files(d.workspace()), before);
}

#[tokio::test]
async fn a_file_past_the_bound_is_named_in_the_result_and_a_rewind_across_it_refuses() {
    let mock = MockServer::start(vec![
        Reply::tool("bash", json!({"command": "echo more >> big.bin && echo new > small.txt"})),
        Reply::text(&["Appended."]),
    ])
    .await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    // Over the 8 MiB a file a checkpoint keeps.
    std::fs::write(w.workspace.path().join("big.bin"), vec![b'x'; 9 << 20]).unwrap();
    let (mut w, _) = w.init("0.3.0", json!({})).await;
    w.write(json!({"type": "send", "id": "1", "message": "Append."})).await;
    let (_, r) = w.result_for("1").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["checkpoint"]["unkept"], json!(["big.bin"]), "the send is told: {r}");
    assert_eq!(r["checkpoint"]["files"], 1, "small.txt (created) is kept: {r}");
    let before = std::fs::read(w.workspace.path().join("small.txt")).unwrap();
    w.write(json!({"type": "rewind", "id": "r", "send_id": "1"})).await;
    let (_, r) = w.result_for("r").await;
    assert_eq!(r["error"]["code"], "rewind_refused", "{r}");
    assert_eq!(r["error"]["details"]["unkept"], json!(["big.bin"]), "{r}");
    assert_eq!(std::fs::read(w.workspace.path().join("small.txt")).unwrap(), before, "nothing changed");
    // Checkpoints off: nothing kept, nothing to rewind.
    let mock = MockServer::start(vec![
        Reply::tool("write_file", json!({"file_path": "c.txt", "content": "c\n"})),
        Reply::text(&["Done."]),
    ])
    .await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({"checkpoints": false})).await;
    w.write(json!({"type": "send", "id": "1", "message": "Write c."})).await;
    let (_, r) = w.result_for("1").await;
    assert!(r.get("checkpoint").is_none(), "{r}");
    w.write(json!({"type": "rewind", "id": "r", "send_id": "1"})).await;
    assert_eq!(w.result_for("r").await.1["error"]["code"], "rewind_refused");
}

#[tokio::test]
async fn a_rewind_never_writes_through_a_symlink_out_of_the_workspace() {
    let mock = MockServer::start(vec![
        Reply::tool("write_file", json!({"file_path": "a.txt", "content": "a\n"})),
        Reply::tool("write_file", json!({"file_path": "sub/x.txt", "content": "x\n"})),
        Reply::text(&["Done."]),
    ])
    .await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    let ws = w.workspace.path().to_owned();
    w.write(json!({"type": "send", "id": "1", "message": "Write them."})).await;
    assert_eq!(w.result_for("1").await.1["status"], "ok");
    // `sub` swapped for a link to a directory outside holding the same bytes.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.txt"), "x\n").unwrap();
    std::fs::remove_dir_all(ws.join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.join("sub")).unwrap();
    w.write(json!({"type": "rewind", "id": "r", "send_id": "1"})).await;
    let (_, r) = w.result_for("r").await;
    assert_eq!(r["error"]["code"], "rewind_refused", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("nothing was restored"), "{r}");
    assert_eq!(std::fs::read_to_string(outside.path().join("x.txt")).unwrap(), "x\n", "outside: untouched");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "a\n", "inside: nothing restored either");
}
