//! One terminal process: a command on a pseudo-terminal (portable-pty) or on
//! pipes, in a session of its own, with its output as a stream of chunks.
//!
//! Owns: spawning ([`Process::spawn`]), input ([`Process::write`]), window
//! size ([`Process::resize`]), signals ([`Process::signal`]), the exit code
//! ([`Process::exited`]) and the kill ([`Process::kill`], also on drop).
//!
//! Every process is a **session leader** (`setsid`: portable-pty does it for
//! a PTY, a `pre_exec` hook for pipes), so "the whole process" is its
//! session: a kill sends SIGKILL to the leader's group and to every process
//! whose session id is the leader's (found in `/proc`), which also catches
//! the jobs an interactive shell puts in groups of their own.
//!
//! The exit code and the kill are [`leader`](super::leader)'s.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use portable_pty::{CommandBuilder, MasterPty, PtySize};
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, watch};

use super::leader::{Leader, start_waiter};

/// Largest output chunk handed on (bytes).
pub const CHUNK: usize = 64 * 1024;
/// Output chunks buffered between the process and its reader.
const OUTPUT_QUEUE: usize = 64;
/// Input writes buffered before [`Process::write`] refuses more.
const INPUT_QUEUE: usize = 256;

/// What to run and how.
#[derive(Debug, Clone)]
pub struct Spec {
    pub program: String,
    pub args: Vec<String>,
    /// Added to the allowlisted environment ([`crate::sandbox::child_env`]).
    pub env: Vec<(String, String)>,
    /// Names of the daemon's variables passed on beyond the allowlist
    /// (`pirn serve --env-passthrough`).
    pub passthrough: Vec<String>,
    pub cwd: PathBuf,
    pub mode: TerminalMode,
}

/// A PTY (one output stream, window size, job control) or plain pipes
/// (stdout and stderr apart, no window).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TerminalMode {
    Tty { rows: u16, cols: u16 },
    Stream,
}

/// A chunk of output, at most [`CHUNK`] bytes.
#[derive(Debug, Clone)]
pub enum ProcessOutput {
    Stdout(Bytes),
    Stderr(Bytes),
}

/// What a process does next, in order: its output, then its exit.
#[derive(Debug)]
pub enum ProcessEvent {
    Output(ProcessOutput),
    /// The last event: the program's code, or 128 + signal.
    Exit(i32),
}

/// A process's output then its exit code (see [`Events::next`]).
pub struct Events {
    output: Option<mpsc::Receiver<ProcessOutput>>,
    exit: watch::Receiver<Option<i32>>,
    drain_by: Option<tokio::time::Instant>,
    done: bool,
}

/// How long output may still come once the process has exited (a process
/// that escaped the session can hold the terminal open).
pub const DRAIN: std::time::Duration = std::time::Duration::from_secs(1);

impl Events {
    /// The next event; `None` after [`ProcessEvent::Exit`]. Output ends when every
    /// holder of the terminal or pipes has closed it, or [`DRAIN`] after the
    /// exit, whichever is first.
    pub async fn next(&mut self) -> Option<ProcessEvent> {
        if self.done {
            return None;
        }
        while let Some(output) = &mut self.output {
            let exited = self.exit.borrow().is_some();
            if exited && self.drain_by.is_none() {
                self.drain_by = Some(tokio::time::Instant::now() + DRAIN);
            }
            let drain_by = self.drain_by.unwrap_or_else(tokio::time::Instant::now);
            tokio::select! {
                chunk = output.recv() => match chunk {
                    Some(chunk) => return Some(ProcessEvent::Output(chunk)),
                    None => self.output = None,
                },
                changed = self.exit.changed(), if !exited => {
                    if changed.is_err() {
                        // The waiter is gone without a code: nothing more will come.
                        self.output = None;
                    }
                }
                _ = tokio::time::sleep_until(drain_by), if exited => self.output = None,
            }
        }
        self.done = true;
        let code = self.exit.wait_for(Option::is_some).await.ok().and_then(|c| *c).unwrap_or(-1);
        Some(ProcessEvent::Exit(code))
    }
}

/// Why a process could not start (the message names the program).
#[derive(Debug, thiserror::Error)]
#[error("cannot start {program:?}: {reason}")]
pub struct SpawnError {
    pub program: String,
    pub reason: String,
}

/// Why input was not taken.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("the process has closed its input")]
    Closed,
    #[error("the process is not reading its input ({INPUT_QUEUE} writes pending)")]
    Backlog,
}

/// A running (or finished) terminal process. Dropping it kills its session.
pub struct Process {
    pid: i32,
    input: mpsc::Sender<Bytes>,
    master: Option<Mutex<Box<dyn MasterPty + Send>>>,
    leader: Arc<Leader>,
    exit: watch::Receiver<Option<i32>>,
}

impl Process {
    /// Starts `spec`; [`Events`] yields its output, then its exit.
    ///
    /// Errors: the PTY cannot be opened, or the program cannot be executed
    /// (not found, not executable, bad `cwd`).
    pub fn spawn(spec: &Spec) -> Result<(Process, Events), SpawnError> {
        let fail = |reason: String| SpawnError { program: spec.program.clone(), reason };
        let (process, output) = match spec.mode {
            TerminalMode::Tty { rows, cols } => spawn_pty(spec, rows, cols).map_err(|e| fail(format!("{e:#}")))?,
            TerminalMode::Stream => spawn_pipes(spec).map_err(|e| fail(e.to_string()))?,
        };
        let events = Events { output: Some(output), exit: process.exit.clone(), drain_by: None, done: false };
        Ok((process, events))
    }

    /// The leader's process id.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Queues `bytes` for the process's input without waiting.
    pub fn write(&self, bytes: Bytes) -> Result<(), InputError> {
        self.input.try_send(bytes).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => InputError::Backlog,
            mpsc::error::TrySendError::Closed(_) => InputError::Closed,
        })
    }

    /// Sets the terminal's window size (the program gets SIGWINCH); a no-op
    /// on pipes.
    pub fn resize(&self, rows: u16, cols: u16) {
        if let Some(master) = &self.master {
            let master = master.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(e) = master.resize(PtySize { rows, cols, pixel_width: 0, pixel_height: 0 }) {
                tracing::debug!("terminal {}: resize to {rows}x{cols}: {e:#}", self.pid);
            }
        }
    }

    /// Sends `signal` where a terminal would: on a PTY to its foreground
    /// process group (what Ctrl-C reaches), on pipes to the process group.
    /// Unknown signal numbers are ignored.
    pub fn signal(&self, signal: i32) {
        if !(1..=64).contains(&signal) {
            return;
        }
        let exited = self.leader.exited.lock().unwrap_or_else(|p| p.into_inner());
        if *exited {
            return;
        }
        let group = self
            .master
            .as_ref()
            .and_then(|m| m.lock().unwrap_or_else(|p| p.into_inner()).process_group_leader())
            .unwrap_or(self.pid);
        // SAFETY: killpg has no memory-safety preconditions.
        unsafe {
            libc::killpg(group, signal);
        }
    }

    /// Kills the process's whole session (idempotent).
    pub fn kill(&self) {
        self.leader.kill();
    }

    /// A handle that kills this process from elsewhere (the daemon's stop).
    pub fn killer(&self) -> Killer {
        Killer(self.leader.clone())
    }

    /// The exit code once known: the program's, or 128 + signal.
    pub fn exit_code(&self) -> Option<i32> {
        *self.exit.borrow()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Kills one terminal process's session; see [`Process::killer`].
#[derive(Clone)]
pub struct Killer(Arc<Leader>);

impl Killer {
    pub fn kill(&self) {
        self.0.kill();
    }
}

fn spawn_pty(spec: &Spec, rows: u16, cols: u16) -> anyhow::Result<(Process, mpsc::Receiver<ProcessOutput>)> {
    let pair = portable_pty::native_pty_system().openpty(PtySize { rows, cols, pixel_width: 0, pixel_height: 0 })?;
    let mut cmd = CommandBuilder::new(&spec.program);
    cmd.args(&spec.args);
    cmd.env_clear();
    for (k, v) in crate::sandbox::child_env(&spec.passthrough) {
        cmd.env(k, v);
    }
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    cmd.cwd(&spec.cwd);
    let child = pair.slave.spawn_command(cmd)?;
    // Only the child holds the terminal's slave side: its end is our EOF.
    drop(pair.slave);
    let pid = child.process_id().map(|p| p as i32).ok_or_else(|| anyhow::anyhow!("no process id"))?;
    // The waiter thread reaps by pid; portable-pty's handle is never waited on.
    drop(child);
    let leader = Arc::new(Leader { pid, exited: Mutex::new(false) });
    let exit = start_waiter(leader.clone());
    let mut reader = pair.master.try_clone_reader()?;
    let mut writer = pair.master.take_writer()?;
    let (out_tx, out_rx) = mpsc::channel(OUTPUT_QUEUE);
    std::thread::Builder::new().name(format!("pty-read-{pid}")).spawn(move || {
        let mut buf = vec![0u8; CHUNK];
        loop {
            match reader.read(&mut buf) {
                // EIO once no process holds the slave side any more.
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if out_tx.blocking_send(ProcessOutput::Stdout(Bytes::copy_from_slice(&buf[..n]))).is_err() {
                        break;
                    }
                }
            }
        }
    })?;
    let (in_tx, mut in_rx) = mpsc::channel::<Bytes>(INPUT_QUEUE);
    std::thread::Builder::new().name(format!("pty-write-{pid}")).spawn(move || {
        while let Some(bytes) = in_rx.blocking_recv() {
            if writer.write_all(&bytes).and_then(|()| writer.flush()).is_err() {
                break;
            }
        }
    })?;
    let process = Process { pid, input: in_tx, master: Some(Mutex::new(pair.master)), leader, exit };
    Ok((process, out_rx))
}

fn spawn_pipes(spec: &Spec) -> std::io::Result<(Process, mpsc::Receiver<ProcessOutput>)> {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let mut cmd = std::process::Command::new(&spec.program);
    cmd.args(&spec.args).current_dir(&spec.cwd).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.env_clear().envs(crate::sandbox::child_env(&spec.passthrough));
    cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
    // SAFETY: setsid and prctl are async-signal-safe system calls on no
    // shared memory; the closure runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            // The process ends with the thread that spawned it (the
            // daemon's runtime thread): a SIGKILLed daemon leaves no shell.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let pid = child.id() as i32;
    let leader = Arc::new(Leader { pid, exited: Mutex::new(false) });
    let exit = start_waiter(leader.clone());
    let missing = || std::io::Error::other("pipe not opened");
    let stdin = tokio::net::unix::pipe::Sender::from_owned_fd(child.stdin.take().ok_or_else(missing)?.into())?;
    let stdout = tokio::net::unix::pipe::Receiver::from_owned_fd(child.stdout.take().ok_or_else(missing)?.into())?;
    let stderr = tokio::net::unix::pipe::Receiver::from_owned_fd(child.stderr.take().ok_or_else(missing)?.into())?;
    let (out_tx, out_rx) = mpsc::channel(OUTPUT_QUEUE);
    tokio::spawn(pump(stdout, out_tx.clone(), ProcessOutput::Stdout));
    tokio::spawn(pump(stderr, out_tx, ProcessOutput::Stderr));
    let (in_tx, mut in_rx) = mpsc::channel::<Bytes>(INPUT_QUEUE);
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        let mut stdin = stdin;
        while let Some(bytes) = in_rx.recv().await {
            if stdin.write_all(&bytes).await.is_err() {
                break;
            }
        }
    });
    Ok((Process { pid, input: in_tx, master: None, leader, exit }, out_rx))
}

async fn pump(
    mut pipe: tokio::net::unix::pipe::Receiver,
    tx: mpsc::Sender<ProcessOutput>,
    wrap: fn(Bytes) -> ProcessOutput,
) {
    let mut buf = vec![0u8; CHUNK];
    while let Ok(n @ 1..) = pipe.read(&mut buf).await {
        if tx.send(wrap(Bytes::copy_from_slice(&buf[..n]))).await.is_err() {
            break;
        }
    }
}
