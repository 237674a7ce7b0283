//! Opening a session: the protocol version, the validated configuration,
//! the MCP servers it names, its log (new or resumed), and the runner task.
//!
//! Owns: [`Session::open`] and [`Session::open_with_files`]; why an open
//! fails is [`super::open_error`]'s.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::api::Session;
use super::open_error::OpenError;
use super::shared::Shared;
use super::{persist, runner};
use crate::agent::Outbox;
use crate::approval::broker::PermissionBroker;
use crate::config::{ConfigError, Limits, SessionConfig};
use crate::conversation::Conversation;
use crate::environment::Environment;
use crate::mcp::client::McpTools;
use crate::wire::{self, InitConfig, WorktreeCleanup};
use crate::worktree::Worktree;

impl Session {
    /// Opens a session the way `init` asks: negotiates the protocol version
    /// ([`wire::negotiate`]; none named means 0.2.0), validates `config`
    /// against `env`, opens its log in `env.store` (a new one, or the stored
    /// session `config.resume_session_id` names, see [`persist`]), and
    /// starts the runner on the current tokio runtime. The one way every
    /// transport opens a session.
    pub async fn open(
        protocol_version: Option<&str>,
        config: &InitConfig,
        env: &Environment,
        limits: Limits,
        outbox: Outbox,
    ) -> Result<Session, OpenError> {
        Session::open_with_files(protocol_version, config, env, limits, outbox, None).await
    }

    /// [`Session::open`] for a transport whose client offers its own file
    /// system (`files`, see `tools::client_files`): file tools read and
    /// write text through it.
    pub async fn open_with_files(
        protocol_version: Option<&str>,
        config: &InitConfig,
        env: &Environment,
        limits: Limits,
        outbox: Outbox,
        files: Option<Arc<dyn crate::tools::client_files::ClientFiles>>,
    ) -> Result<Session, OpenError> {
        let client = ClientSide { files, ..ClientSide::default() };
        Session::open_with_client(protocol_version, config, env, limits, outbox, client).await
    }

    /// [`Session::open`] for a transport whose client does some of the
    /// session's work in its own process (see [`ClientSide`]).
    pub async fn open_with_client(
        protocol_version: Option<&str>,
        config: &InitConfig,
        env: &Environment,
        limits: Limits,
        outbox: Outbox,
        client: ClientSide,
    ) -> Result<Session, OpenError> {
        let version = wire::negotiate(protocol_version)?;
        let (init, worktree) = with_worktree(config, env, version).await?;
        let made = worktree.as_ref().map(|(wt, _)| wt.clone());
        let opened = Session::open_in(&init, worktree, env, limits, outbox, client, version).await;
        // A worktree made for a session that then failed to open is removed
        // (with its branch): nothing of the session's is in it.
        if let (Err(_), Some(wt)) = (&opened, made) {
            let _ = tokio::task::spawn_blocking(move || wt.remove_if_unchanged()).await;
        }
        opened
    }

    async fn open_in(
        init: &InitConfig,
        worktree: Option<(Worktree, WorktreeCleanup)>,
        env: &Environment,
        limits: Limits,
        outbox: Outbox,
        client: ClientSide,
        version: wire::ProtocolVersion,
    ) -> Result<Session, OpenError> {
        let mut config = SessionConfig::new(init, env, limits, version)?;
        config.client_files = client.files.clone();
        if let Some((table, runner)) = client.hooks.filter(|(t, _)| !t.is_empty()) {
            let hooks = config.hooks.take().map(|h| (*h).clone()).unwrap_or_default();
            let hooks = hooks.with_callbacks(&table, runner).map_err(ConfigError::Hooks)?;
            config.hooks = Some(Arc::new(hooks));
        }
        config.worktree = worktree;
        let servers = init.mcp_servers.as_deref().unwrap_or_default();
        let hosted = client.mcp.as_ref().filter(|h| !h.names.is_empty());
        if !servers.is_empty() || hosted.is_some() {
            let plan = config.policy.mode == crate::wire::ApprovalMode::Plan;
            let children = (&*config.sandbox, &config.env_passthrough[..]);
            let (patterns, workspace) = (&config.mcp_patterns, &config.workspace);
            let started = McpTools::start(servers, hosted, patterns, workspace, plan, children).await;
            config.mcp = Some(Arc::new(started.map_err(ConfigError::from)?));
        }
        let messages = Arc::new(AtomicU64::new(0));
        let opened = persist::open_log(&mut config, init, env, messages.clone()).await?;
        if let Some((wt, _)) = &mut config.worktree {
            wt.session_id.clone_from(&config.session_id);
            wt.save_record();
        }
        let shared = Arc::new(Shared {
            config: Arc::new(config),
            outbox,
            queue: Mutex::default(),
            wake: Notify::new(),
            messages,
            permissions: PermissionBroker::default(),
            journal: opened.journal,
            interrupted: opened.interrupted,
            overrides: Mutex::default(),
            meter: Mutex::default(),
            cost: Mutex::default(),
            shadow: Arc::default(),
            steering: Mutex::default(),
            plan: opened.conv.plan.clone(),
        });
        Ok(Session::start(shared, opened.conv))
    }

    /// Starts the session's runner task on the current tokio runtime.
    fn start(shared: Arc<Shared>, conv: Conversation) -> Session {
        let stopped = CancellationToken::new();
        let guard = stopped.clone().drop_guard();
        let runner = runner::run_queue(shared.clone(), conv);
        tokio::spawn(async move {
            let _guard = guard;
            runner.await;
        });
        Session { shared, stopped }
    }
}

/// What a transport's client does in its own process for the session.
#[derive(Debug, Default)]
pub struct ClientSide {
    /// Its file system (ACP's `fs/*`): file tools read and write text
    /// through it (see `tools::client_files`).
    pub files: Option<Arc<dyn crate::tools::client_files::ClientFiles>>,
    /// Hook callbacks it registered, and who calls them (the Claude
    /// surface: `hook_callback` control requests), run beside
    /// `config.hooks` (see [`crate::hooks::callback`]).
    pub hooks: Option<(crate::hooks::callback::CallbackTable, Arc<dyn crate::hooks::callback::ClientHooks>)>,
    /// MCP servers it hosts (the Claude SDKs' in-process servers:
    /// `mcp_message` control requests), beside `config.mcp_servers`.
    pub mcp: Option<crate::mcp::bridge::ClientServers>,
}

/// `init` as the session runs it: when it asks for a worktree (see
/// [`crate::worktree`]), one is made and `cwd` points into it (and the
/// copy that is logged asks for none, so a resume does not make another).
async fn with_worktree<'a>(
    init: &'a InitConfig,
    env: &Environment,
    version: wire::ProtocolVersion,
) -> Result<(std::borrow::Cow<'a, InitConfig>, Option<(Worktree, WorktreeCleanup)>), OpenError> {
    let Some(name) = init.worktree.as_ref().and_then(|w| w.wanted()) else {
        return Ok((std::borrow::Cow::Borrowed(init), None));
    };
    if version < wire::ProtocolVersion::V0_3 {
        return Err(ConfigError::NeedsV0_3("worktree").into());
    }
    let cwd = match &init.cwd {
        Some(d) => std::path::PathBuf::from(d),
        None => std::env::current_dir().map_err(ConfigError::WorkingDirectory)?,
    };
    let cwd = cwd.canonicalize().map_err(|_| ConfigError::NotADirectory(cwd.clone()))?;
    let (home, name) = (env.home.clone(), name.map(str::to_owned));
    let made = tokio::task::spawn_blocking(move || crate::worktree::create(&home, &cwd, name.as_deref(), ""))
        .await
        .map_err(|e| ConfigError::Worktree(e.to_string()))?
        .map_err(|e| ConfigError::Worktree(e.to_string()))?;
    let (wt, workspace) = made;
    let mut init = init.clone();
    init.cwd = Some(workspace.display().to_string());
    init.worktree = None;
    let cleanup = init.worktree_cleanup.take().unwrap_or_default();
    Ok((std::borrow::Cow::Owned(init), Some((wt, cleanup))))
}
