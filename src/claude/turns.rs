//! Starting a turn on Claude Code's surface, and steering a running one.
//!
//! A `user` message starts a turn (pirn's send, whose id is the message's
//! uuid) once the session is open; with `--replay-user-messages` it is
//! echoed first.
//!
//! A `user` message whose `priority` is `now` or `next` (the Agent SDK's
//! `SDKUserMessage.priority`) that comes while a turn runs joins that turn:
//! pirn's `steer` adds it to the running send at its next model call, and
//! the turn's one `result` answers both. A message without `priority`, or
//! with `later`, is queued as a turn of its own, as Claude Code does with
//! a follow-up written during a turn.
//!
//! Owns the steers offered: each keeps a translation ([`super::ClaudeTurn`])
//! until the running send's result lists it as taken, or until it turns
//! out to be a send of its own (the running send ended before taking it),
//! whose events and result are then shown like any turn's.

use super::translate::ClaudeTurn;
use super::wire::{self, Out};
use super::{Surface, control};
use crate::wire::SendOptions;

impl Surface {
    /// Starts a turn with `text`; before the session is open, the prompt
    /// waits for it (and asks for it to be opened).
    pub(super) async fn prompt(&mut self, text: String) -> Result<(), i32> {
        let Some(session) = self.session.clone() else {
            self.want_open = true;
            self.waiting.push(text);
            return Ok(());
        };
        self.sends += 1;
        // The user message's uuid: what `rewind_files` names.
        let id = uuid::Uuid::new_v4().to_string();
        let options = SendOptions { output_schema: self.setup.json_schema.clone(), ..SendOptions::default() };
        let text_echo = if self.replay { text.clone() } else { String::new() };
        match session.send_with(id.clone(), text, &options) {
            Ok(()) => {
                self.emit(&Out::System(Box::new(control::system_init(session.config(), &self.setup))));
                self.echo(&id, text_echo);
                let turn = self.new_turn(&id);
                self.turns.insert(id, turn);
            }
            Err(e) => self.refuse_turn(e.to_string()),
        }
        Ok(())
    }

    /// With `--replay-user-messages`, prompt `text` echoed as a `user`
    /// message with its uuid `id`.
    pub(super) fn echo(&self, id: &str, text: String) {
        let Some(session) = self.session.as_ref().filter(|_| self.replay) else { return };
        let message = wire::UserBody { role: "user", content: vec![wire::Block::Text { text }] };
        let session_id = session.config().session_id.clone();
        self.emit(&Out::User(wire::UserMsg { message, parent_tool_use_id: None, session_id, uuid: id.to_owned() }));
    }

    /// The translation of send `id`'s events.
    pub(super) fn new_turn(&self, id: &str) -> ClaudeTurn {
        let session_id = self.session.as_ref().map(|s| s.config().session_id.clone()).unwrap_or_default();
        let mut turn = ClaudeTurn::new(&session_id, &self.setup.model, self.partial).for_send(id);
        turn.forward_subagent_text = self.setup.forward_subagent_text;
        turn
    }

    /// Ends a turn that could not start with an error result.
    pub(super) fn refuse_turn(&mut self, why: String) {
        let session_id = self.session.as_ref().map(|s| s.config().session_id.clone()).unwrap_or_default();
        let r = control::refused_result(&session_id, why);
        self.emit(&Out::Result(Box::new(r.clone())));
        self.last = Some(r);
        self.last_code = crate::transport::exit::EXIT_USAGE;
    }

    /// Offers `text` to the running turn (see the module doc).
    pub(super) fn steer(&mut self, text: String) {
        let Some(session) = self.session.clone() else { return };
        let id = uuid::Uuid::new_v4().to_string();
        match session.steer(id.clone(), text.clone(), None) {
            Ok(taken_by) => {
                if taken_by.is_none() {
                    self.emit(&Out::System(Box::new(control::system_init(session.config(), &self.setup))));
                }
                self.echo(&id, text);
                let turn = self.new_turn(&id);
                match taken_by {
                    Some(_) => self.steers.insert(id, turn),
                    None => self.turns.insert(id, turn),
                };
            }
            Err(e) => self.refuse_turn(e.to_string()),
        }
    }

    /// A steer whose events or result arrive as a send's of its own
    /// becomes a turn.
    pub(super) fn adopt(&mut self, id: &str) {
        if let Some(turn) = self.steers.remove(id) {
            self.turns.insert(id.to_owned(), turn);
        }
    }
}
