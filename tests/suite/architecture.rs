//! ARCHITECTURE.md keeps one paragraph per top-level module of `src/`: this
//! check fails when a module is added without one, or a paragraph outlives
//! its module.

use std::collections::BTreeSet;
use std::path::Path;

/// The top-level modules of `src/`: each directory, and each `.rs` file but
/// the crate root `lib.rs`, as `src/NAME/` and `src/NAME.rs`.
fn modules(src: &Path) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().unwrap().is_dir() {
            found.insert(format!("src/{name}/"));
        } else if name.ends_with(".rs") && name != "lib.rs" {
            found.insert(format!("src/{name}"));
        }
    }
    found
}

/// The modules ARCHITECTURE.md gives a paragraph: its "### `src/…`" headings.
fn described(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("### `")?.strip_suffix('`'))
        .filter(|m| m.starts_with("src/"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn architecture_md_describes_every_top_level_module_of_src() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let (have, told) = (modules(&root.join("src")), described(&text));
    assert!(have.len() > 10 && told.len() > 10, "read {have:?} and {told:?}");
    let missing: Vec<_> = have.difference(&told).collect();
    let stale: Vec<_> = told.difference(&have).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "ARCHITECTURE.md is out of step with src/: add a \"### `src/…`\" paragraph for {missing:?} \
         (what it owns, what it must never do); remove the one for {stale:?}"
    );
}

#[test]
fn a_module_without_a_paragraph_is_found() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("agent")).unwrap();
    std::fs::write(dir.path().join("lib.rs"), "").unwrap();
    std::fs::write(dir.path().join("wire.rs"), "").unwrap();
    let have = modules(dir.path());
    let told = described("### `src/agent/`\n\ntext\n\n### Not a module\n");
    assert_eq!(have.difference(&told).collect::<Vec<_>>(), ["src/wire.rs"]);
}
