//! `pirn acp`: the worker over the Agent Client Protocol. The flags only;
//! the protocol is [`pirn::acp`]'s.

/// `pirn acp`'s flags.
#[derive(clap::Args, Debug)]
pub struct AcpArgs {
    /// Model name sent to the server [env: PIRN_MODEL].
    #[arg(long)]
    model: Option<String>,
    /// What the agent may do without asking the client: full-auto,
    /// auto-edit, suggest (default: it asks before edits and commands) or
    /// plan.
    #[arg(long, value_parser = parse_approval_mode)]
    approval_mode: Option<pirn::wire::ApprovalMode>,
    /// Model calls per prompt (default 20).
    #[arg(long)]
    max_iterations: Option<u32>,
    /// The sandbox of bash and stdio MCP servers: workspace-write, read-only
    /// or off [env: PIRN_SANDBOX; default: workspace-write].
    #[arg(long, value_parser = super::serve::parse_sandbox)]
    sandbox: Option<pirn::sandbox::SandboxMode>,
    /// Children may not use TCP (connect, bind).
    #[arg(long)]
    no_network: bool,
    /// The help given to the model beyond exact tools: `exact`, `small`, or
    /// a profile of the user's model settings [env: PIRN_PROFILE; default:
    /// the model-settings table's rule for the model, else exact].
    #[arg(long, value_name = "NAME")]
    profile: Option<String>,
}

impl AcpArgs {
    /// The options [`pirn::acp::serve`] takes.
    pub fn options(self) -> pirn::acp::AcpOptions {
        pirn::acp::AcpOptions {
            model: self.model,
            approval_mode: self.approval_mode,
            max_iterations: self.max_iterations,
            sandbox: self.sandbox,
            no_network: self.no_network,
            profile: self.profile,
        }
    }
}

fn parse_approval_mode(s: &str) -> Result<pirn::wire::ApprovalMode, String> {
    serde_json::from_value(serde_json::Value::String(s.to_owned()))
        .map_err(|_| format!("{s:?}: one of full-auto, auto-edit, suggest, plan"))
}
