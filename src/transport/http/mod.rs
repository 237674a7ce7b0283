//! `pirn serve`: the same sessions over HTTP, SSE and WebSocket (axum).
//!
//! Owns: binding and trust (loopback by default; a bearer token required
//! off loopback), building the daemon's state ([`state`]: the table of live
//! sessions), closing idle sessions, and the graceful stop: on
//! `POST /shutdown`, SIGTERM or SIGINT every session is shut down (cancelled
//! results reach the streams), every hub closed (streams end), and axum's
//! graceful shutdown waits for the answers in flight.
//!
//! Three groups, one directory each:
//! - the native API, one file per concern: `routes` (the route table,
//!   [`ROUTES`], and the layers), [`state`] (the daemon's state, [`App`]),
//!   [`trust`] (what the daemon trusts, what an HTTP session may ask for),
//!   [`guard`] (Host, Origin, content type, CORS), [`api`] (error bodies,
//!   body cap), [`auth`] (token), [`openapi`] (the generated document),
//!   [`sessions`], [`sends`], [`events`] (SSE), [`history`], [`ws`];
//! - [`facades`]: other daemons' formats over the same sessions (agent-webkit,
//!   MCP, stringd's inbox, muti's shell and ACECode's console);
//! - [`routing`]: with `--advertise-url`, any host of a group serves any
//!   session.
//!
//! Every behaviour of a send lives in `session`/`agent`; each session's
//! output goes through its [`Hub`](crate::transport::hub::Hub). Every body
//! is a type of [`crate::wire::http`].

pub mod api;
pub mod auth;
pub mod events;
pub mod facades;
pub mod guard;
pub mod history;
pub mod openapi;
mod routes;
pub mod routing;
pub mod sends;
pub mod sessions;
pub mod state;
pub mod trust;
pub mod ws;

pub use facades::{console, inbox, mcp, shell, webkit};
pub use routing::{forward, group};

use std::collections::HashMap;
use std::future::IntoFuture;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::environment::Environment;
use crate::terminal::{TerminalOptions, Terminals};
use crate::transport::signal::shutdown_signal;
use facades::inboxes::Inboxes;
use routing::group::{advertised_host, keep_leases};
use routing::membership::Group;

pub use api::{DRAIN_LIMIT, MAX_BODY};
pub use events::KEEPALIVE;
pub use routes::ROUTES;
pub use state::{App, HttpSession};
pub use trust::is_loopback;

/// Sends that may wait behind the running one in a session, by default (`--max-queue`).
pub const MAX_QUEUE: usize = 5;
/// Longest wait, once stopping, for connections still open after every
/// stream has ended (a client that never finishes its request).
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// `pirn serve` options.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub bind: IpAddr,
    /// 0 picks a free port.
    pub port: u16,
    pub token: Option<String>,
    /// How long a send may wait in a session's queue.
    pub queue_timeout: Duration,
    /// Most live sessions (`--max-sessions`).
    pub max_sessions: usize,
    /// Idle time after which a live session is closed (`--session-idle-secs`).
    pub session_idle: Duration,
    /// Terminals (`--terminals`); `None`: their routes answer 404.
    pub terminals: Option<TerminalOptions>,
    /// How peers reach this host (`--advertise-url`): joins the group of
    /// hosts on the same Postgres store ([`group`]).
    pub advertise_url: Option<String>,
    /// How long a group host's claim on a session lasts unrenewed (`--lease-secs`).
    pub lease: Duration,
    /// Sends that may wait behind the running one in a session (`--max-queue`).
    pub max_queue: usize,
    /// Who may reach the daemon and what sessions may ask for
    /// (`--allow-host`, `--allow-origin`, `--allow-mcp-command`,
    /// `--sandbox`, `--no-network`, `--env-passthrough`).
    pub trust: trust::Trust,
}

/// Closes the live sessions idle for `--session-idle-secs`, every
/// tenth of that time, until the daemon stops.
async fn reap_idle(app: Arc<App>) {
    let every = (app.session_idle / 10).clamp(Duration::from_millis(50), Duration::from_secs(60));
    loop {
        tokio::select! {
            _ = app.shutdown.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let now = app.now_ms();
        let idle: Vec<String> = {
            let table = app.sessions.lock().unwrap_or_else(|p| p.into_inner());
            table.iter().filter(|(_, s)| s.idle(now, app.session_idle)).map(|(id, _)| id.clone()).collect()
        };
        for id in idle {
            tracing::info!(session_id = %id, "closing an idle session (its log is kept)");
            sessions::close_session(&app, &id).await;
        }
    }
}

/// Runs the daemon until `POST /shutdown`, SIGTERM or SIGINT; returns the
/// exit code (2 when it refuses to start).
#[allow(clippy::print_stderr)]
pub async fn serve(opts: ServeOptions) -> i32 {
    if !opts.bind.is_loopback() && opts.token.as_deref().is_none_or(str::is_empty) {
        eprintln!(
            "pirn serve: refusing to bind {} without a token: off loopback every request must carry one (--token or PIRN_TOKEN)",
            opts.bind
        );
        return 2;
    }
    let listener = match tokio::net::TcpListener::bind(SocketAddr::new(opts.bind, opts.port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("pirn serve: cannot bind {}:{}: {e}", opts.bind, opts.port);
            return 2;
        }
    };
    let local = listener.local_addr().ok();
    let addr = local.map(|a| a.to_string()).unwrap_or_default();
    let env = crate::transport::stdio::with_store(Environment::from_process()).await;
    // An advertised port 0 is the port bound (for hosts started on `--port 0`).
    let advertise = opts.advertise_url.as_ref().map(|u| match (u.strip_suffix(":0"), local) {
        (Some(base), Some(a)) => format!("{base}:{}", a.port()),
        _ => u.clone(),
    });
    if let Some(url) = advertise.as_deref().filter(|u| !u.starts_with("http://") || u.len() <= "http://".len()) {
        eprintln!("pirn serve: --advertise-url {url:?}: expected http://HOST:PORT (group traffic is plain HTTP)");
        return 2;
    }
    let group = match (&advertise, env.store.as_ref().and_then(|s| s.postgres())) {
        (None, _) => None,
        (Some(url), Some(pg)) => Some(Arc::new(Group::new(pg.clone(), url.clone(), opts.lease))),
        (Some(_), None) => {
            eprintln!("pirn serve: --advertise-url needs a shared Postgres store (PIRN_STORE=postgres://…)");
            return 2;
        }
    };
    // The advertised name is this daemon's own: peers forward with it as `Host`.
    let mut trust = opts.trust;
    if let Some(name) = advertise.as_deref().and_then(advertised_host) {
        trust.hosts.push(name);
    }
    let app = Arc::new(App {
        sessions: Mutex::new(HashMap::new()),
        token: opts.token.filter(|t| !t.is_empty()),
        shutdown: CancellationToken::new(),
        queue_timeout: opts.queue_timeout,
        max_sessions: opts.max_sessions,
        session_idle: opts.session_idle,
        env,
        terminals: opts.terminals.map(Terminals::new),
        inbox: Inboxes::default(),
        local_addr: addr.clone(),
        guid: uuid::Uuid::new_v4().to_string(),
        port: local.map_or(opts.port, |a| a.port()),
        started: std::time::Instant::now(),
        bind: opts.bind,
        trust,
        group: group.clone(),
        max_queue: opts.max_queue,
    });
    // The one line serve prints: where it listens (scripts read it).
    let mut out = std::io::stdout();
    let _ = writeln!(out, "pirn serve listening on http://{addr}");
    let _ = out.flush();
    let stopped = CancellationToken::new();
    let stop = {
        let (app, stopped) = (app.clone(), stopped.clone());
        let mut signals = shutdown_signal();
        async move {
            tokio::select! {
                _ = app.shutdown.cancelled() => {}
                _ = signals.recv() => {}
            }
            // Streams that follow a session log end with it.
            app.shutdown.cancel();
            if let Some(t) = &app.terminals {
                t.kill_all();
            }
            // Every session closes at once: the journals' bounded flushes overlap.
            futures_util::future::join_all(app.all().iter().map(|s| s.close())).await;
            stopped.cancel();
        }
    };
    let service = routes::router(app.clone()).into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(reap_idle(app.clone()));
    if let Some(g) = &group {
        tokio::spawn(keep_leases(app.clone(), g.clone()));
    }
    // Frames are small and written as they come: Nagle's algorithm would
    // hold each one back until the previous is acknowledged (a 40 ms stall
    // against a client that delays its ACKs).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY: {e}");
        }
    });
    let server = axum::serve(listener, service).with_graceful_shutdown(stop).into_future();
    let server = async {
        tokio::pin!(server);
        tokio::select! {
            r = &mut server => r,
            // Every stream has ended; a connection that still does not close is cut.
            _ = async { stopped.cancelled().await; tokio::time::sleep(DRAIN_TIMEOUT).await } => Ok(()),
        }
    };
    let served = server.await;
    if let Some(g) = &group {
        g.store.leave().await;
    }
    match served {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("pirn serve: {e}");
            1
        }
    }
}
