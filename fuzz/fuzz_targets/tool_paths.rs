//! Tool arguments and path resolution: the arguments of every tool parse or
//! fail cleanly, and no resolved path is ever outside the workspace (a
//! temporary directory holding a symlink that points out of it).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use pirn::tools::{self, ToolContext};

fn ctx() -> &'static ToolContext {
    static CTX: OnceLock<ToolContext> = OnceLock::new();
    CTX.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("pirn-fuzz-{}", std::process::id()));
        let _ = std::fs::create_dir_all(dir.join("sub/deeper"));
        let _ = std::os::unix::fs::symlink("/etc", dir.join("sub/out"));
        let _ = std::os::unix::fs::symlink("../..", dir.join("sub/deeper/up"));
        ToolContext::new(dir.canonicalize().expect("workspace"), Vec::new(), tokio_util::sync::CancellationToken::new())
    })
}

fuzz_target!(|data: &[u8]| {
    let _ = serde_json::from_slice::<tools::read_file::Args>(data);
    let _ = serde_json::from_slice::<tools::write_file::Args>(data);
    let _ = serde_json::from_slice::<tools::edit_file::Args>(data);
    let _ = serde_json::from_slice::<tools::glob::Args>(data);
    let _ = serde_json::from_slice::<tools::grep::Args>(data);
    let _ = serde_json::from_slice::<tools::bash::Args>(data);
    let Ok(raw) = std::str::from_utf8(data) else { return };
    let ctx = ctx();
    if let Ok(target) = ctx.resolve(raw) {
        let p: PathBuf = target.path().to_path_buf();
        assert!(p.starts_with(&ctx.workspace), "{raw:?} resolved to {} outside {}", p.display(), ctx.workspace.display());
    }
});
