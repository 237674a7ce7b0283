//! A tool process must not outlive pirn, even when pirn is SIGKILLed (as
//! Orboros does to workers it drops).
//!
//! Design: the spawned child does not exec the tool at once. It first becomes
//! a tiny **supervisor**: the leader of the tool's new process group, with a
//! parent-death signal (`PR_SET_PDEATHSIG` → SIGTERM, blocked and taken with
//! `sigwaitinfo`). It forks the real tool (which goes on to `exec`), closes
//! every descriptor it inherited, and waits:
//! - the tool exits → the supervisor exits the same way (same code, or the
//!   same signal re-raised), so pirn sees the tool's real status;
//! - pirn dies → the kernel sends the supervisor SIGTERM → it SIGKILLs the
//!   whole group (nested subshells and background jobs included) and itself.
//!
//! pirn's own kills (timeout, cancel, end of the call) still SIGKILL the
//! group, supervisor included. Only a process that leaves the group
//! (`setsid`) escapes, as with any group kill.
//!
//! The parent-death signal fires when the *thread* that forked exits; pirn
//! spawns tools from its runtime thread, which lives as long as the process.
//! Everything here runs between `fork` and `exec`, so it uses only raw
//! system calls (no allocation, no locks).

use std::io;

use tokio::process::Command;

/// Makes `cmd` start under a supervisor (see the module doc). Call after
/// `process_group(0)`: the supervisor is the group's leader.
pub fn supervise(cmd: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and calls only
    // async-signal-safe system calls (see `become_supervisor`).
    unsafe {
        cmd.pre_exec(move || become_supervisor(parent));
    }
}

/// In the forked child: returns `Ok` in the tool process (which then
/// execs); never returns in the supervisor.
fn become_supervisor(parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: plain system calls on stack-allocated sigset_t values; nothing
    // here allocates or takes a lock.
    unsafe {
        let mut watched: libc::sigset_t = std::mem::zeroed();
        let mut previous: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut watched);
        libc::sigaddset(&mut watched, libc::SIGCHLD);
        libc::sigaddset(&mut watched, libc::SIGTERM);
        if libc::sigprocmask(libc::SIG_BLOCK, &watched, &mut previous) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        // pirn may have died before the death signal was armed.
        if libc::getppid() != parent {
            libc::_exit(137);
        }
        let tool = libc::fork();
        if tool < 0 {
            return Err(io::Error::last_os_error());
        }
        if tool == 0 {
            // The tool: no death signal of its own (the supervisor watches),
            // the signal mask it would have had, then exec.
            libc::prctl(libc::PR_SET_PDEATHSIG, 0 as libc::c_ulong, 0, 0, 0);
            libc::sigprocmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
            return Ok(());
        }
        // The supervisor holds nothing of pirn's: no pipes (so the tool's
        // output reaches EOF when the tool's tree closes it), no sockets.
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
            for fd in 0..4096 {
                libc::close(fd);
            }
        }
        loop {
            let sig = libc::sigwaitinfo(&watched, std::ptr::null_mut());
            if sig == libc::SIGTERM {
                // pirn is gone (or someone asked): the whole group goes.
                libc::kill(0, libc::SIGKILL);
                libc::_exit(137);
            }
            let mut status = 0;
            if sig == libc::SIGCHLD && libc::waitpid(tool, &mut status, libc::WNOHANG) == tool {
                if libc::WIFEXITED(status) {
                    libc::_exit(libc::WEXITSTATUS(status));
                }
                if libc::WIFSIGNALED(status) {
                    let signal = libc::WTERMSIG(status);
                    let mut only: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut only);
                    libc::sigaddset(&mut only, signal);
                    libc::signal(signal, libc::SIG_DFL);
                    libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
                    libc::kill(libc::getpid(), signal);
                    libc::_exit(128 + signal);
                }
            }
        }
    }
}
