//! Tests of the file store's locking and torn-tail recovery.

use super::*;

#[test]
fn a_listing_probe_does_not_look_like_a_holder_to_another_probe() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    std::fs::write(&path, b"").unwrap();
    let (a, b) = (File::open(&path).unwrap(), File::open(&path).unwrap());
    // Another lister, mid-probe: a shared lock on its own description.
    a.try_lock_shared().unwrap();
    assert!(!held_elsewhere(&b), "a probe is not a holder");
    a.unlock().unwrap();
    // A process that runs the session: an exclusive lock.
    assert!(try_lock(&a).unwrap());
    assert!(held_elsewhere(&b), "the holder is seen");
}

#[test]
fn a_torn_tail_is_dropped_and_truncated_and_a_bad_middle_line_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(dir.path().to_owned(), "t");
    let meta = Body::Meta {
        session_id: "s".into(),
        protocol_version: "0.3.0".into(),
        model: "m".into(),
        workspace: "/w".into(),
        config: serde_json::json!({}),
        forked_from: None,
    };
    let e = |n| NewEntry::new(n, 1, &meta).unwrap();
    assert_eq!(store.append("s", "w", &[e(0), e(1)], true).unwrap(), 2);
    store.release("s");
    let path = store.path("s");
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"{\"seq\":3,\"wri").unwrap();
    drop(f);
    assert_eq!(store.load("s", 0).unwrap().len(), 2);
    assert_eq!(store.append("s", "w", &[e(2)], false).unwrap(), 3);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.lines().all(|l| serde_json::from_str::<Stored>(l).is_ok()));
    store.release("s");
    std::fs::write(&path, format!("garbage\n{text}")).unwrap();
    assert!(matches!(store.load("s", 0), Err(StoreError::Corrupt { line: 1, .. })));
}
