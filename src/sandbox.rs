//! What a child process (bash, a stdio MCP server, a terminal) may do and see.
//!
//! Owns: the sandbox policy of a session ([`Sandbox`]: mode, network,
//! writable roots), putting it in force in a child before `exec` through
//! Linux Landlock (the `landlock` crate builds the ruleset in pirn; the
//! child only calls `landlock_restrict_self`, so nothing between `fork` and
//! `exec` allocates), and the environment a child starts from
//! ([`child_env`]: an allowlist, never pirn's own settings or secrets).
//!
//! Modes (config `sandbox`, `pirn run|serve --sandbox`, `PIRN_SANDBOX`):
//! - `workspace-write` (default): read anywhere; write only beneath the
//!   workspace, the allowed paths, the system temp dir and
//!   `sandbox_writable_roots`; character devices such as `/dev/null` work.
//! - `read-only`: read anywhere, write nowhere but the devices.
//! - `off`: no sandbox.
//!
//! `sandbox_network: false` also denies TCP `connect` and `bind` (Landlock
//! ABI 4 or later). A kernel without Landlock (or without the network
//! rights when they are asked for) makes the child fail to start with an
//! error naming the missing feature: pirn never runs a command unconfined
//! when a sandbox was asked for.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    path_beneath_rules,
};

pub use crate::wire::SandboxMode;

/// A session's sandbox for the children it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    pub mode: SandboxMode,
    /// False: TCP connect and bind are denied.
    pub network: bool,
    /// Canonical directories a child may write beneath in `workspace-write`
    /// mode (the workspace and allowed paths first, then the temp dir and
    /// `sandbox_writable_roots`).
    pub writable_roots: Vec<PathBuf>,
}

impl Sandbox {
    /// No sandbox (tests, `PIRN_SANDBOX=off`).
    pub fn off() -> Sandbox {
        Sandbox { mode: SandboxMode::Off, network: true, writable_roots: Vec::new() }
    }

    /// `mode` for a session in `workspace`, whose children may also write
    /// beneath `extra` and the system temp dir.
    pub fn new(mode: SandboxMode, network: bool, workspace: &std::path::Path, extra: &[PathBuf]) -> Sandbox {
        let mut writable_roots = vec![workspace.to_path_buf()];
        let tmp = std::env::temp_dir();
        writable_roots.push(tmp.canonicalize().unwrap_or(tmp));
        writable_roots.extend(extra.iter().cloned());
        Sandbox { mode, network, writable_roots }
    }

    /// What `init_ok` and `status_ok` report (0.3.0): `"workspace-write"`,
    /// `"workspace-write, no network"`, … or `"off"`; an unusable sandbox
    /// says why (`"unavailable: …"`).
    pub fn describe(&self) -> String {
        if self.mode == SandboxMode::Off {
            return "off".to_owned();
        }
        match kernel_abi() {
            Err(e) => format!("unavailable: {e}"),
            Ok(_) if self.network => self.mode.name().to_owned(),
            Ok(_) => format!("{}, no network", self.mode.name()),
        }
    }

    /// Readies `cmd` to start as a child of a session: the allowlisted
    /// environment ([`child_env`] with `passthrough`) and this sandbox, put
    /// in force before `exec`. Call before `supervisor::supervise`, so the
    /// supervisor and the whole tree are confined. Errors: the sandbox
    /// cannot be built (what the kernel lacks is named); nothing may run.
    pub fn confine(&self, cmd: &mut tokio::process::Command, passthrough: &[String]) -> io::Result<()> {
        cmd.env_clear().envs(child_env(passthrough));
        if let Some(ruleset) = self.prepare()? {
            ruleset.install(cmd);
        }
        Ok(())
    }

    /// Builds the Landlock ruleset for a child about to start; `None` when
    /// the mode is `off`. Errors name what the kernel lacks.
    fn prepare(&self) -> io::Result<Option<Prepared>> {
        if self.mode == SandboxMode::Off {
            return Ok(None);
        }
        let abi = kernel_abi()?;
        if !self.network && abi < 4 {
            return Err(io::Error::other(format!(
                "sandbox_network: false needs Landlock ABI 4 (TCP rules); this kernel has ABI {abi}"
            )));
        }
        let target = ABI::V5;
        let fail = |e: landlock::RulesetError| io::Error::other(format!("cannot build the Landlock sandbox: {e}"));
        let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::BestEffort);
        ruleset = ruleset.handle_access(AccessFs::from_all(target)).map_err(fail)?;
        if !self.network {
            ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp).map_err(fail)?;
        }
        let mut created = ruleset.create().map_err(fail)?;
        created = created.add_rules(path_beneath_rules(["/"], AccessFs::from_read(target))).map_err(fail)?;
        let devices = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"];
        let present: Vec<&str> = devices.into_iter().filter(|d| std::path::Path::new(d).exists()).collect();
        created = created.add_rules(path_beneath_rules(present, AccessFs::from_file(target))).map_err(fail)?;
        if std::path::Path::new("/dev/pts").is_dir() {
            created = created.add_rules(path_beneath_rules(["/dev/pts"], AccessFs::from_file(target))).map_err(fail)?;
        }
        if self.mode == SandboxMode::WorkspaceWrite {
            let roots: Vec<&PathBuf> = self.writable_roots.iter().filter(|p| p.exists()).collect();
            created = created.add_rules(path_beneath_rules(roots, AccessFs::from_all(target))).map_err(fail)?;
        }
        let fd: Option<OwnedFd> = created.into();
        let fd = fd.ok_or_else(|| io::Error::other("Landlock is not available in this kernel"))?;
        Ok(Some(Prepared(fd)))
    }
}

/// A Landlock ruleset ready to be put in force in a child.
#[derive(Debug)]
pub struct Prepared(OwnedFd);

impl Prepared {
    /// Makes the child restrict itself before `exec` (call before
    /// `supervisor::supervise`, so the supervisor is confined too). The
    /// ruleset descriptor lives in the closure until the command is dropped.
    fn install(self, cmd: &mut tokio::process::Command) {
        // SAFETY: the closure runs between fork and exec and makes only
        // two raw system calls on a descriptor the child inherited.
        unsafe {
            cmd.pre_exec(move || self.restrict_self());
        }
    }

    /// `PR_SET_NO_NEW_PRIVS` then `landlock_restrict_self`: async-signal-safe.
    fn restrict_self(&self) -> io::Result<()> {
        // SAFETY: plain system calls with integer arguments.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, self.0.as_raw_fd(), 0u32) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// The running kernel's Landlock ABI version. Errors: Landlock not built
/// in, or not enabled at boot (`lsm=` lacks it).
pub fn kernel_abi() -> io::Result<i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    // SAFETY: with a null attribute pointer and the VERSION flag the call
    // only returns a number.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v >= 1 {
        return Ok(v as i32);
    }
    let e = io::Error::last_os_error();
    Err(io::Error::other(match e.raw_os_error() {
        Some(libc::ENOSYS) => {
            "Landlock is not built into this kernel (the sandbox needs it; set sandbox to off to run unconfined)"
                .to_owned()
        }
        Some(libc::EOPNOTSUPP) => {
            "Landlock is not enabled in this kernel (add it to the lsm= boot parameter, or set sandbox to off)"
                .to_owned()
        }
        _ => format!("Landlock is not available: {e}"),
    }))
}

/// Variables every child keeps (with every `LC_*`).
pub const BASE_ENV: [&str; 9] = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR", "TZ"];

/// The environment a child starts from: the [`BASE_ENV`] names, `LC_*`,
/// and the names in `passthrough`, with their values in pirn's environment.
/// Nothing else: no keys, no `PIRN_*` settings, no database URLs.
///
/// One variable is set rather than passed: `PYTHONDONTWRITEBYTECODE=1`.
/// Python trusts cached bytecode whose source has the same size and the
/// same mtime second, so a script rewritten within a second of its last
/// run (as an agent does) would run the stale version.
pub fn child_env(passthrough: &[String]) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(name, _)| {
            name.to_str()
                .is_some_and(|n| BASE_ENV.contains(&n) || n.starts_with("LC_") || passthrough.iter().any(|p| p == n))
        })
        .collect();
    if !env.iter().any(|(k, _)| k == "PYTHONDONTWRITEBYTECODE") {
        env.push(("PYTHONDONTWRITEBYTECODE".into(), "1".into()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_order_from_loose_to_strict() {
        assert!(SandboxMode::Off < SandboxMode::WorkspaceWrite && SandboxMode::WorkspaceWrite < SandboxMode::ReadOnly);
        for m in [SandboxMode::Off, SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
            assert_eq!(SandboxMode::parse(m.name()), Some(m));
        }
    }

    #[test]
    fn child_env_is_an_allowlist() {
        let env = child_env(&["PIRN_TEST_PASSED".to_owned()]);
        assert!(env.iter().all(|(k, _)| {
            let k = k.to_string_lossy();
            BASE_ENV.contains(&k.as_ref())
                || k.starts_with("LC_")
                || k == "PIRN_TEST_PASSED"
                || k == "PYTHONDONTWRITEBYTECODE"
        }));
    }
}
