//! Build script: two link options that keep an idle release worker small.
//!
//! Owns: the release link of the `pirn` binary. Each option is used only
//! when a probe shows that this toolchain links a program with it and the
//! program runs; otherwise the build goes on without it, unchanged.
//! - `--symbol-ordering-file=link/pirn.order` (lld, rustc's default linker
//!   on x86_64 Linux): the functions a worker runs from its start to its
//!   first result, placed together. The kernel maps code 64 KiB around each
//!   page touched, so ~400 functions spread over 20 MB of text kept ~5 MB
//!   resident in an idle worker; together they fill well under 1 MB. The
//!   file is written by `scripts/link-order`; names it holds that this
//!   build lacks (another rustc or lockfile) are ignored.
//! - `-z pack-relative-relocs`: the ~27,000 relative relocations as DT_RELR
//!   (glibc 2.36+) instead of 24-byte `.rela.dyn` entries the loader reads
//!   at every start (~0.6 MB less resident).
//!
//! Debug builds (the tests) are linked as rustc does by default.
//! `PIRN_LINK_MAP=FILE` writes lld's link map (what `scripts/link-order`
//! reads); `PIRN_PLAIN_LINK=1` turns both options off.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=link/pirn.order");
    for var in ["PIRN_LINK_MAP", "PIRN_PLAIN_LINK", "CARGO_ENCODED_RUSTFLAGS", "RUSTC_LINKER"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    if let Ok(map) = std::env::var("PIRN_LINK_MAP") {
        println!("cargo:rustc-link-arg-bin=pirn=-Wl,-Map={map}");
    }
    let linux = env("CARGO_CFG_TARGET_OS") == "linux" && env("CARGO_CFG_TARGET_ENV") == "gnu";
    if env("PROFILE") != "release" || !linux || env("TARGET") != env("HOST") || !env("PIRN_PLAIN_LINK").is_empty() {
        return;
    }
    let order = Path::new(&env("CARGO_MANIFEST_DIR")).join("link/pirn.order");
    let out = PathBuf::from(env("OUT_DIR"));
    let mut options = vec![];
    if order.is_file() {
        options.push(vec![
            format!("-Wl,--symbol-ordering-file={}", order.display()),
            "-Wl,--no-warn-symbol-ordering".into(),
        ]);
    }
    options.push(vec!["-Wl,-z,pack-relative-relocs".into()]);
    for (i, args) in options.into_iter().enumerate() {
        if links_and_runs(&out, i, &args) {
            for a in args {
                println!("cargo:rustc-link-arg-bin=pirn={a}");
            }
        } else {
            println!("cargo:warning=pirn: the linker refused {args:?}; the release binary is linked without it");
        }
    }
}

/// True when an empty program linked with `args` (and the build's own
/// rustflags and linker) builds and exits 0.
fn links_and_runs(out: &Path, n: usize, args: &[String]) -> bool {
    let exe = out.join(format!("link-probe-{n}"));
    let mut rustc = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()));
    rustc.args(["--edition", "2024", "--crate-name", "probe", "-o"]).arg(&exe);
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    rustc.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    if let Ok(linker) = std::env::var("RUSTC_LINKER") {
        rustc.arg(format!("-Clinker={linker}"));
    }
    for a in args {
        rustc.arg(format!("-Clink-arg={a}"));
    }
    let src = out.join("link-probe.rs");
    let built =
        std::fs::write(&src, "fn main() {}\n").is_ok() && rustc.arg(&src).output().is_ok_and(|o| o.status.success());
    built && Command::new(&exe).status().is_ok_and(|s| s.success())
}
