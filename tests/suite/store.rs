//! The session store contract, one suite run on both back ends: the file
//! store (a temp dir) and Postgres (`PIRN_TEST_POSTGRES`, which
//! `scripts/test` starts; required when `CI` is set). Every test uses a
//! fresh tenant, so tests share one database without seeing each other.

use std::sync::Arc;

use pirn::store::{Body, NewEntry, Store, StoreError};
use serde_json::json;

/// The Postgres URL of the test cluster; `None` (with a loud note) outside
/// CI when there is none. In CI a missing database fails the test.
pub fn postgres_url() -> Option<String> {
    super::worker::counterpart("PIRN_TEST_POSTGRES")
}

/// A fresh tenant name.
pub fn tenant() -> String {
    format!("t{}", uuid::Uuid::new_v4().simple())
}

async fn open(store: &str, tenant: &str) -> Store {
    let vars = [("PIRN_STORE", store.to_owned()), ("PIRN_TENANT", tenant.to_owned())];
    let get = |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
    Store::from_env(&get).await.unwrap().unwrap()
}

/// `(name, store root or URL)` for each back end available.
fn backends(dir: &tempfile::TempDir) -> Vec<(&'static str, String)> {
    let mut out = vec![("file", dir.path().display().to_string())];
    out.extend(postgres_url().map(|u| ("postgres", u)));
    out
}

fn meta(model: &str) -> Body {
    Body::Meta {
        session_id: "x".into(),
        protocol_version: "0.3.0".into(),
        model: model.into(),
        workspace: "/w".into(),
        config: json!({"model": model}),
        forked_from: None,
    }
}

fn msg(n: u64, text: &str) -> NewEntry {
    NewEntry::new(n, 1000 + n, &Body::Message { message: json!({"role": "user", "content": text}) }).unwrap()
}

fn texts(entries: &[pirn::store::Stored]) -> Vec<String> {
    entries
        .iter()
        .map(|e| match &e.body {
            Body::Message { message } => message["content"].as_str().unwrap().to_owned(),
            other => format!("{other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn appends_load_in_order_and_a_retried_append_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    for (name, url) in backends(&dir) {
        let s = open(&url, &tenant()).await;
        let all: Arc<[NewEntry]> = vec![msg(0, "a"), msg(1, "b"), msg(2, "c")].into();
        assert_eq!(s.append("s1", None, "w", all[..2].into(), true).await.unwrap(), 2, "{name}");
        // The retry of an append that did land, plus one new entry.
        assert_eq!(s.append("s1", None, "w", all.clone(), true).await.unwrap(), 3, "{name}");
        assert_eq!(s.append("s1", None, "w", all.clone(), false).await.unwrap(), 3, "{name}: all stored already");
        let got = s.load("s1", 0).await.unwrap();
        assert_eq!(texts(&got), ["a", "b", "c"], "{name}");
        assert_eq!(got.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3], "{name}");
        assert_eq!(got[2].at_ms, 1002, "{name}");
        assert_eq!(texts(&s.load("s1", 2).await.unwrap()), ["c"], "{name}");
        // Another writer's n=0 is a different entry.
        s.append("s1", None, "v", vec![msg(0, "d")].into(), false).await.unwrap();
        assert_eq!(texts(&s.load("s1", 0).await.unwrap()), ["a", "b", "c", "d"], "{name}");
        assert!(matches!(s.load("nope", 0).await, Err(StoreError::NotFound(_))), "{name}");
        assert!(matches!(s.load("../etc", 0).await, Err(StoreError::InvalidId(_))), "{name}");
    }
}

#[tokio::test]
async fn concurrent_appends_to_one_session_keep_each_append_whole_and_seq_gapless() {
    let dir = tempfile::tempdir().unwrap();
    for (name, url) in backends(&dir) {
        let s = open(&url, &tenant()).await;
        let mut tasks = Vec::new();
        for w in 0..8 {
            let s = s.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..25u64 {
                    let pair = vec![msg(2 * i, &format!("{w}:{i}:0")), msg(2 * i + 1, &format!("{w}:{i}:1"))];
                    s.append("c", None, &format!("writer{w}"), pair.into(), i % 5 == 0).await.unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let got = s.load("c", 0).await.unwrap();
        assert_eq!(got.len(), 400, "{name}");
        assert!(got.iter().enumerate().all(|(i, e)| e.seq == i as u64 + 1), "{name}: seq gap-free from 1");
        let t = texts(&got);
        for pair in t.chunks(2) {
            let (a, b) = (pair[0].strip_suffix(":0").unwrap(), pair[1].strip_suffix(":1").unwrap());
            assert_eq!(a, b, "{name}: an append's entries stay together");
        }
        for w in 0..8 {
            let mine: Vec<u64> = got.iter().filter(|e| e.writer == format!("writer{w}")).map(|e| e.n).collect();
            assert_eq!(mine, (0..50).collect::<Vec<_>>(), "{name}: each writer's entries in order");
        }
    }
}

#[tokio::test]
async fn listing_deletion_and_tenant_isolation() {
    let dir = tempfile::tempdir().unwrap();
    for (name, url) in backends(&dir) {
        let (ta, tb) = (tenant(), tenant());
        let (a, b) = (open(&url, &ta).await, open(&url, &tb).await);
        let send = Body::Send { send_id: "1".into(), message: "fix the parser\nplease".into(), compact: false };
        let one = vec![NewEntry::new(0, 5, &meta("m1")).unwrap(), NewEntry::new(1, 6, &send).unwrap()];
        a.append("first", None, "w", one.into(), true).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        a.append("second", None, "w", vec![NewEntry::new(0, 7, &meta("m2")).unwrap()].into(), true).await.unwrap();
        // No meta entry: not a session yet.
        a.append("bare", None, "w", vec![msg(0, "x")].into(), true).await.unwrap();
        b.append("other", None, "w", vec![NewEntry::new(0, 8, &meta("m3")).unwrap()].into(), true).await.unwrap();

        let list = a.list().await.unwrap();
        let ids: Vec<&str> = list.iter().map(|i| i.session_id.as_str()).collect();
        assert_eq!(ids, ["second", "first"], "{name}: newest activity first, tenant a only");
        assert_eq!((list[1].title.as_str(), list[1].model.as_str(), list[1].created_ms), ("fix the parser", "m1", 5));
        assert_eq!(list[0].title, "", "{name}: no send yet");
        assert!(matches!(b.load("first", 0).await, Err(StoreError::NotFound(_))), "{name}: isolated");
        assert_eq!(b.list().await.unwrap().len(), 1, "{name}");

        assert!(a.delete("first").await.unwrap(), "{name}");
        assert!(!a.delete("first").await.unwrap(), "{name}: already gone");
        assert!(matches!(a.load("first", 0).await, Err(StoreError::NotFound(_))), "{name}");
        assert!(!b.delete("second").await.unwrap(), "{name}: not b's to delete");
        assert_eq!(a.list().await.unwrap().len(), 1, "{name}");
    }
}

#[tokio::test]
async fn watchers_hear_of_new_entries() {
    let dir = tempfile::tempdir().unwrap();
    for (name, url) in backends(&dir) {
        let t = tenant();
        let (writer, reader) = (open(&url, &t).await, open(&url, &t).await);
        let mut watch = if name == "file" { writer.watch().await } else { reader.watch().await };
        // LISTEN is asynchronous: append until the watcher hears of it.
        let heard = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            let mut n = 0;
            loop {
                writer.append("w1", None, "w", vec![msg(n, "x")].into(), false).await.unwrap();
                n += 1;
                if let Ok(Ok(got)) = tokio::time::timeout(std::time::Duration::from_millis(200), watch.recv()).await {
                    return got;
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{name}: no notification"));
        assert_eq!(&*heard.0, "w1", "{name}");
        assert!(heard.1 >= 1, "{name}");
    }
}

#[tokio::test]
async fn a_postgres_claim_fences_the_previous_writer() {
    let Some(url) = postgres_url() else { return };
    let s = open(&url, &tenant()).await;
    let first = s.claim("f").await.unwrap();
    s.append("f", Some(first), "a", vec![msg(0, "a")].into(), true).await.unwrap();
    let second = s.claim("f").await.unwrap();
    assert!(second > first);
    let refused = s.append("f", Some(first), "a", vec![msg(1, "late")].into(), true).await;
    assert!(matches!(refused, Err(StoreError::Superseded(_))), "{refused:?}");
    s.append("f", Some(second), "b", vec![msg(0, "b")].into(), true).await.unwrap();
    assert_eq!(texts(&s.load("f", 0).await.unwrap()), ["a", "b"]);
    assert!(s.list().await.unwrap().is_empty(), "no meta entry");
}

#[test]
fn the_file_store_keeps_a_bounded_number_of_logs_open_and_fences_a_taken_one() {
    use pirn::store::file::{FileStore, MAX_OPEN};
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(dir.path().to_owned(), "t");
    let meta = Body::Meta {
        session_id: "s".into(),
        protocol_version: "0.3.0".into(),
        model: "m".into(),
        workspace: "/w".into(),
        config: json!({}),
        forked_from: None,
    };
    let e = |n| NewEntry::new(n, 1, &meta).unwrap();
    // Descriptors of this process that name a log of this store (other
    // tests run alongside and open their own).
    let fds = || {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|p| p.starts_with(dir.path()))
            .count()
    };
    let before = fds();
    for i in 0..MAX_OPEN + 40 {
        store.claim(&format!("s{i}")).unwrap();
        store.append(&format!("s{i}"), "w", &[e(0)], false).unwrap();
    }
    assert!(fds() <= before + MAX_OPEN + 2, "{} descriptors for {} logs", fds() - before, MAX_OPEN + 40);
    // The first log was closed; its next append reopens it and goes on.
    assert_eq!(store.append("s0", "w", &[e(1)], true).unwrap(), 2);
    // Another process takes a closed log over: this one is fenced.
    let other = FileStore::new(dir.path().to_owned(), "t");
    other.append("s1", "x", &[e(0)], true).unwrap();
    other.release("s1");
    assert!(matches!(store.append("s1", "w", &[e(1)], false), Err(StoreError::Superseded(_))));
}
