//! The settings an init config may leave to the operator: each one's
//! value when `init.config` does not name it, from the [`Environment`]
//! (`PIRN_SANDBOX`, `PIRN_REQUEST_CHECK`, `PIRN_WRITE_CHECK`), the
//! session's profile or the protocol version, checked once when the
//! session opens.

use super::error::ConfigError;
use crate::environment::Environment;
use crate::wire::{InitConfig, ProtocolVersion};
use std::path::PathBuf;

/// The session's sandbox: `config.sandbox` (else `PIRN_SANDBOX`, else
/// `workspace-write`), `config.sandbox_network` (default true) and the
/// writable roots (canonicalised; each must exist).
pub(super) fn sandbox_of(
    config: &InitConfig,
    env: &Environment,
    workspace: &std::path::Path,
    allowed_paths: &[PathBuf],
) -> Result<crate::sandbox::Sandbox, ConfigError> {
    use crate::sandbox::{Sandbox, SandboxMode};
    let mode = match (config.sandbox, &env.sandbox) {
        (Some(m), _) => m,
        (None, Some(v)) => SandboxMode::parse(v).ok_or_else(|| ConfigError::SandboxMode(v.clone()))?,
        (None, None) => SandboxMode::default(),
    };
    let mut extra = allowed_paths.to_vec();
    for p in config.sandbox_writable_roots.iter().flatten() {
        let real =
            PathBuf::from(p).canonicalize().map_err(|source| ConfigError::WritableRoot { path: p.clone(), source })?;
        extra.push(real);
    }
    Ok(Sandbox::new(mode, config.sandbox_network.unwrap_or(true), workspace, &extra))
}

/// A check that reads through the model (`request_check`, `write_check`):
/// the init config's setting, else the operator's `var`, else the
/// profile's switch (`by_profile`) in a 0.3.0 session, and off in a 0.2.0
/// one (whose clients replay scripted model exchanges that never held the
/// extra call).
///
/// Errors: `var` set to something other than true/false, 1/0, on/off.
pub(super) fn reading_check(
    config: Option<bool>,
    env: Option<&str>,
    var: &'static str,
    by_profile: bool,
    version: ProtocolVersion,
) -> Result<bool, ConfigError> {
    if let Some(on) = config {
        return Ok(on);
    }
    let Some(value) = env else { return Ok(by_profile && version >= ProtocolVersion::V0_3) };
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "on" => Ok(true),
        "false" | "0" | "off" => Ok(false),
        _ => Err(ConfigError::Switch { var, value: value.to_owned() }),
    }
}
