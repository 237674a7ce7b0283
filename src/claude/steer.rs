//! Steering a running turn on Claude Code's surface.
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

use super::Surface;
use super::wire::Out;

impl Surface {
    /// Offers `text` to the running turn (see the module doc).
    pub(super) fn steer(&mut self, text: String) {
        let Some(session) = self.session.clone() else { return };
        let id = uuid::Uuid::new_v4().to_string();
        match session.steer(id.clone(), text.clone(), None) {
            Ok(taken_by) => {
                if taken_by.is_none() {
                    self.emit(&Out::System(Box::new(super::control::system_init(session.config(), &self.setup))));
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
