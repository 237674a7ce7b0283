//! The state of one send while its loop runs: what it was given (config,
//! conversation, budgets, emitter) and what it has learned (facts, mode,
//! loop history, recoveries).
//!
//! Owns: [`SendState`], built once per send by [`SendState::new`], and the small
//! rules that act on it as a whole: [`SendState::again`] (a gate sends the
//! model back), [`SendState::checked_anyway`] (a send stopped at a limit ends
//! `ok` when the operator's check passes) and [`SendState::shown`] (a path as
//! the model sees it); and [`RequestReading`], the model's reading of the
//! request it keeps once made (made by `request_reading`).

use super::call_context::SendLoop;
use super::emit::Emitter;
use super::facts::Facts;
use super::facts::PastCall;
use super::gates::order::Gate;
use super::loop_guard::{Cycles, LoopGuard};
use super::mode::Mode;
use super::outcome::Outcome;
use super::send_spec::SendSpec;
use super::stats::SendStats;
use super::verify::Verifier;
use crate::approval::ApprovalMode;
use crate::approval::broker::PermissionBroker;
use crate::config::SessionConfig;
use crate::conversation::Conversation;
use crate::tools::ToolContext;

/// Everything one send's loop works with.
pub struct SendState<'a> {
    pub config: &'a SessionConfig,
    pub permissions: &'a PermissionBroker,
    pub emit: &'a Emitter,
    pub conv: &'a mut Conversation,
    pub stats: &'a mut SendStats,
    pub spec: &'a mut SendSpec,
    /// The request as the user sent it (quoted back in a wrap-up note only).
    pub request: &'a str,
    /// What the tools get (workspace, sandbox, cancellation, result cap).
    pub tools: ToolContext,
    pub facts: Facts,
    pub mode: Mode,
    /// The operator's check (`verify_command`), when there is one.
    pub verifier: Option<Verifier>,
    /// The fact gates (`config.answer_checks`) are on: never in plan mode.
    pub checks: bool,
    /// The operator's check passed and no tool call ran since.
    pub verified: bool,
    pub guard: LoopGuard,
    pub cycles: Cycles,
    /// (signature, result) of the previous answer's calls that a repeat
    /// may be answered with.
    pub previous: Vec<PastCall>,
    /// Gates that already sent the model back once in this send.
    pub fired: Vec<Gate>,
    /// The model's reading of the request (the `Asked` gate's), once per send.
    pub reading: RequestReading,
    /// One retry after the server said the request does not fit.
    pub context_retry: bool,
    /// Answers the server could not parse or that ran away, asked for again.
    pub unreadable: u32,
    /// The last answer's text while a token budget is set (the answer a
    /// budget stop reports).
    pub last_text: String,
    /// The send loop itself, which a `task` call's child send runs (see
    /// [`SendLoop`]).
    pub send_loop: SendLoop,
}

/// However the loop ends (an outcome, an error, or its future dropped on
/// cancel), the send's statistics get the files it changed.
impl Drop for SendState<'_> {
    fn drop(&mut self) {
        self.stats.files_changed = self.facts.changed.keys().map(|p| self.tools.display(p)).collect();
        let touched = &self.facts.touched_since;
        self.stats.changed =
            self.facts.changed.iter().map(|(p, h)| (p.clone(), (!touched.contains(p)).then_some(*h))).collect();
    }
}

impl<'a> SendState<'a> {
    /// The context of a send of `request`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        config: &'a SessionConfig,
        permissions: &'a PermissionBroker,
        emit: &'a Emitter,
        conv: &'a mut Conversation,
        stats: &'a mut SendStats,
        spec: &'a mut SendSpec,
        request: &'a str,
        send_loop: SendLoop,
    ) -> SendState<'a> {
        let mut tools = ToolContext::new(config.workspace.clone(), config.allowed_paths.clone(), spec.cancel.clone());
        tools.read_files = Some(conv.read_files.clone());
        tools.sandbox = config.sandbox.clone();
        tools.env_passthrough = config.env_passthrough.clone();
        tools.client_files = config.client_files.clone();
        tools.shells = config.shells.clone();
        tools.checkpoint = spec.checkpoint.clone().map(|c| c as std::sync::Arc<dyn crate::tools::FileWatch>);
        tools.help = crate::tools::WriteHelp {
            tolerant_edits: config.profile.tolerant_edits,
            hold_large_writes: config.profile.hold_large_writes,
            parse_notes: config.profile.parse_check,
            reference_notes: config.profile.reference_notes,
        };
        if config.edit_format == crate::wire::EditFormat::Whole {
            tools.chat_file.clone_from(&config.file_block_target);
        }
        let plan = config.policy.mode == ApprovalMode::Plan;
        let verifier = if plan { None } else { Verifier::for_send(config, spec.verify_command.as_deref()) };
        SendState {
            config,
            permissions,
            emit,
            conv,
            stats,
            spec,
            request,
            tools,
            facts: Facts::default(),
            mode: Mode::Work,
            verifier,
            checks: config.answer_checks && !plan,
            verified: false,
            guard: LoopGuard::default(),
            cycles: Cycles::default(),
            previous: Vec::new(),
            fired: Vec::new(),
            reading: RequestReading::NotYet,
            context_retry: false,
            unreadable: 0,
            last_text: String::new(),
            send_loop,
        }
    }

    /// A gate sends the model back: `note` goes into the conversation and
    /// the next request is made in `mode`; earlier results are no longer
    /// answers to repeats. When the next request must call a tool
    /// ([`Mode::Act`]), the answer in words it follows is taken out of the
    /// history first ([`Conversation::withdraw_answer`]): the note says
    /// what it lacked, and the model does not repeat it.
    pub fn again(&mut self, note: &str, mode: Mode) {
        if mode == Mode::Act {
            self.conv.withdraw_answer();
        }
        self.conv.push_note(note);
        self.mode = mode;
        self.previous.clear();
    }

    /// True the first time `gate` asks (it sends the model back at most
    /// once per send).
    pub fn fire_once(&mut self, gate: Gate) -> bool {
        if self.fired.contains(&gate) {
            return false;
        }
        self.fired.push(gate);
        true
    }

    /// A send that must stop before the model said it is done (`why`: what
    /// stopped it) and that changed files ends `ok` when the operator's check
    /// passes now; `None` when there is no check, nothing was written, or it
    /// fails.
    pub async fn checked_anyway(&mut self, why: &str) -> Option<Outcome> {
        let v = self.verifier.as_ref().filter(|_| self.facts.wrote())?;
        let (verification, answer) = v.at_the_limit(&self.account(), why, &self.tools).await?;
        self.stats.verification = Some(verification);
        Some(Outcome::Ok { response: answer })
    }

    /// `path` as the model sees it (relative to the workspace).
    pub fn shown(&self, path: &std::path::Path) -> String {
        self.tools.display(path)
    }

    /// pirn's account of what the send changed (see [`Facts::account`]).
    pub fn account(&self) -> String {
        self.facts.account(|p| self.tools.display(p))
    }
}

/// The model's reading of a send's request, made at most once per send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RequestReading {
    /// Not asked yet.
    #[default]
    NotYet,
    /// The reading call failed or did not answer the JSON asked for.
    Failed,
    /// The model said whether the request asks for files to change.
    ChangesFiles(bool),
}
