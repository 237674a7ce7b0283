//! The leader of a terminal process's session: its exit code, and the kill
//! of the whole session.
//!
//! The exit code is read by a waiter thread with `waitid(WNOWAIT)` first:
//! the leader stays a zombie (its pid cannot be reused) while the session's
//! stragglers are killed and the `exited` flag is set under the same lock
//! every kill takes; only then is it reaped. So no kill can hit a reused pid.
//! The code is the program's own, or 128 + the signal that killed it.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

/// The kill side shared with the waiter thread (see the module doc).
pub struct Leader {
    pub pid: i32,
    pub exited: Mutex<bool>,
}

impl Leader {
    /// Kills the session unless the leader has been reaped (idempotent).
    pub fn kill(&self) {
        let exited = self.exited.lock().unwrap_or_else(|p| p.into_inner());
        if !*exited {
            kill_session(self.pid);
        }
    }
}

/// Starts the thread that reports the leader's exit (see the module doc).
pub fn start_waiter(leader: Arc<Leader>) -> watch::Receiver<Option<i32>> {
    let (tx, rx) = watch::channel(None);
    let spawned = std::thread::Builder::new().name(format!("pty-wait-{}", leader.pid)).spawn(move || {
        let code = wait_leader(&leader);
        let _ = tx.send(Some(code));
    });
    if let Err(e) = spawned {
        tracing::error!("cannot start a waiter thread: {e}");
    }
    rx
}

fn wait_leader(leader: &Leader) -> i32 {
    // SAFETY: waitid/waitpid write only into the stack values passed.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        loop {
            let r = libc::waitid(libc::P_PID, leader.pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT);
            if r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
        }
        {
            let mut exited = leader.exited.lock().unwrap_or_else(|p| p.into_inner());
            // The leader is a zombie: its session id is still its own.
            kill_session(leader.pid);
            *exited = true;
        }
        let mut status = 0;
        while libc::waitpid(leader.pid, &mut status, 0) == -1
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
        if libc::WIFSIGNALED(status) { 128 + libc::WTERMSIG(status) } else { libc::WEXITSTATUS(status) }
    }
}

/// SIGKILLs the group `sid` and every process whose session is `sid`.
fn kill_session(sid: i32) {
    // SAFETY: kill/killpg have no memory-safety preconditions.
    unsafe {
        libc::killpg(sid, libc::SIGKILL);
    }
    for pid in session_members(sid) {
        // SAFETY: as above.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// Processes whose session id is `sid`, from `/proc/*/stat` (field 6).
fn session_members(sid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut found = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // "pid (comm) state ppid pgrp session …"; comm may hold spaces or ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { continue };
        if rest.split_whitespace().nth(3).and_then(|s| s.parse::<i32>().ok()) == Some(sid) && pid != sid {
            found.push(pid);
        }
    }
    found
}
