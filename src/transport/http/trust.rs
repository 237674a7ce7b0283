//! Who may reach `pirn serve` over HTTP and what its sessions may ask for.
//!
//! Owns: the daemon's [`Trust`] (`--allow-host`, `--allow-origin`,
//! `--allow-mcp-command`, `--allow-hook-command`, `--sandbox`,
//! `--no-network`, `--env-passthrough`): whether a `Host` names this daemon
//! (`host_name`), whether an Origin is listed, and [`Trust::admit`],
//! which checks a session config that arrived over HTTP; and
//! [`is_loopback`] for the routes only a loopback peer may use. The
//! middleware that holds the trust on every request is [`super::guard`]'s.

use std::net::{IpAddr, SocketAddr};

use crate::sandbox::SandboxMode;
use crate::wire::InitConfig;

/// Who may reach the daemon over HTTP and what its sessions may ask for.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// Host names accepted besides the loopback ones (`--allow-host`),
    /// lower-case, without port.
    pub hosts: Vec<String>,
    /// Origins accepted (`--allow-origin`); `*` accepts any.
    pub origins: Vec<String>,
    /// Commands a session's `mcp_servers` may start (`--allow-mcp-command`,
    /// exact match).
    pub mcp_commands: Vec<String>,
    /// Hook command lines a session's `hooks` may run
    /// (`--allow-hook-command`, exact match).
    pub hook_commands: Vec<String>,
    /// The sessions' default sandbox (`--sandbox`), which a session may
    /// narrow but not widen.
    pub sandbox: SandboxMode,
    /// False (`--no-network`): no session's children may use TCP.
    pub sandbox_network: bool,
    /// Names a session may list in `env_passthrough` (`--env-passthrough`).
    pub env_passthrough: Vec<String>,
}

impl Trust {
    /// True when `host` (a `Host` header value) names this daemon.
    pub(super) fn host_ok(&self, host: &str, bind: IpAddr) -> bool {
        let name = host_name(host);
        let bound = match bind {
            IpAddr::V6(v6) => format!("[{v6}]"),
            v4 => v4.to_string(),
        };
        matches!(name.as_str(), "localhost" | "127.0.0.1" | "[::1]")
            || (!bind.is_loopback() && name == bound)
            // Bound to every address: any address of this machine, named
            // as an IP (a rebound DNS name is still refused).
            || (bind.is_unspecified() && name.trim_matches(['[', ']']).parse::<IpAddr>().is_ok())
            || self.hosts.contains(&name)
    }

    pub(super) fn any_origin(&self) -> bool {
        self.origins.iter().any(|o| o == "*")
    }

    pub(super) fn origin_ok(&self, origin: &str) -> bool {
        self.any_origin() || self.origins.iter().any(|o| o.eq_ignore_ascii_case(origin.trim_end_matches('/')))
    }

    /// Checks and completes a session config that arrived over HTTP: an
    /// MCP server `command` must be listed in [`Trust::mcp_commands`], a
    /// hook's command in [`Trust::hook_commands`];
    /// the sandbox defaults to the daemon's and may only be narrowed
    /// (`off` < `workspace-write` < `read-only`; network only when the
    /// daemon allows it; no extra writable roots); `env_passthrough` names
    /// only what the daemon passes. Errors: the message of a 400.
    pub fn admit(&self, config: &mut InitConfig) -> Result<(), String> {
        if let Some(hooks) = &config.hooks {
            for command in crate::hooks::Hooks::commands(hooks) {
                if !self.hook_commands.iter().any(|c| c == command) {
                    return Err(format!(
                        "hooks: running the command {command:?} over HTTP needs pirn serve --allow-hook-command {command:?}"
                    ));
                }
            }
        }
        for server in config.mcp_servers.iter().flatten() {
            if let Some(command) = &server.command
                && !self.mcp_commands.iter().any(|c| c == command)
            {
                return Err(format!(
                    "mcp_servers[{:?}]: starting the command {command:?} over HTTP needs pirn serve \
                     --allow-mcp-command {command:?}",
                    server.name
                ));
            }
        }
        match config.sandbox {
            None => config.sandbox = Some(self.sandbox),
            Some(asked) if asked < self.sandbox => {
                return Err(format!(
                    "sandbox {:?} is looser than this daemon's {:?}; over HTTP a session may only narrow it",
                    asked.name(),
                    self.sandbox.name()
                ));
            }
            Some(_) => {}
        }
        match config.sandbox_network {
            Some(true) if !self.sandbox_network => {
                return Err("sandbox_network: this daemon runs with --no-network".to_owned());
            }
            None => config.sandbox_network = Some(self.sandbox_network),
            _ => {}
        }
        if config.sandbox_writable_roots.as_ref().is_some_and(|r| !r.is_empty()) {
            return Err("sandbox_writable_roots cannot be set over HTTP (it widens the sandbox)".to_owned());
        }
        for name in config.env_passthrough.iter().flatten() {
            if !self.env_passthrough.contains(name) {
                return Err(format!("env_passthrough {name:?} needs pirn serve --env-passthrough {name}"));
            }
        }
        Ok(())
    }
}

/// The name part of a `Host` value, lower-case: `[::1]:80` → `[::1]`,
/// `LocalHost.:3923` → `localhost`.
pub(crate) fn host_name(host: &str) -> String {
    let host = host.trim();
    let name = if host.starts_with('[') {
        host.find(']').map_or(host, |end| &host[..=end])
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => host,
        }
    };
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// True for 127.0.0.0/8 and ::1, IPv4-mapped ones included.
pub fn is_loopback(peer: SocketAddr) -> bool {
    peer.ip().to_canonical().is_loopback()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names() {
        assert_eq!(host_name("127.0.0.1:3923"), "127.0.0.1");
        assert_eq!(host_name("[::1]:80"), "[::1]");
        assert_eq!(host_name("LocalHost."), "localhost");
        let t = Trust { hosts: vec!["pirn.internal".into()], ..Trust::default() };
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(t.host_ok("localhost:1", lo) && t.host_ok("pirn.internal:9", lo));
        assert!(!t.host_ok("attacker.example:3923", lo) && !t.host_ok("127.0.0.1.nip.io", lo));
        assert!(t.host_ok("10.0.0.5:1", "10.0.0.5".parse().unwrap()));
    }

    #[test]
    fn sandbox_may_only_narrow_over_http() {
        let t = Trust { sandbox: SandboxMode::WorkspaceWrite, sandbox_network: true, ..Trust::default() };
        let mut c = InitConfig { sandbox: Some(SandboxMode::Off), ..InitConfig::default() };
        assert!(t.admit(&mut c).is_err());
        let mut c = InitConfig { sandbox: Some(SandboxMode::ReadOnly), ..InitConfig::default() };
        assert!(t.admit(&mut c).is_ok());
        let mut c = InitConfig::default();
        t.admit(&mut c).unwrap();
        assert_eq!(c.sandbox, Some(SandboxMode::WorkspaceWrite));
    }
}
