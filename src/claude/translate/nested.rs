//! A subagent's events inside a turn: pirn marks them with the parent's
//! `task` call id (`parent_call_id`); Claude Code's stream carries them as
//! messages whose `parent_tool_use_id` is the `Agent` tool_use's id.
//!
//! Owns: [`ClaudeTurn::nested_event`] — each running subagent has a turn of its
//! own (no partial messages; its text written only with
//! `forwardSubagentText`, as Claude Code does) — and ending it when the
//! parent's call ends, its permission denials joining the parent's.

use super::{ClaudeTurn, Out};
use crate::wire::Event;

impl ClaudeTurn {
    /// The messages a subagent's `event` becomes; `parent_call`: pirn's id
    /// of the `task` call that started it.
    pub fn nested_event(&mut self, parent_call: &str, event: &Event) -> Vec<Out> {
        let forward = self.forward_subagent_text;
        let at = match self.children.iter().position(|(id, _)| id == parent_call) {
            Some(i) => i,
            None => {
                let mut child = ClaudeTurn::new(&self.session_id, &self.model, false).for_send(&self.send_id);
                child.parent = Some(self.claude_id_of(parent_call).unwrap_or_else(|| parent_call.to_owned()));
                child.forward_subagent_text = forward;
                self.children.push((parent_call.to_owned(), child));
                self.children.len() - 1
            }
        };
        let child = &mut self.children[at].1;
        if !forward && matches!(event, Event::ContentDelta { .. }) {
            return Vec::new();
        }
        let out = child.event(event);
        if matches!(event, Event::ToolStart { .. }) {
            self.last_started = self.children[at].1.last_started.clone();
        }
        out
    }

    /// The subagent of `task` call `parent_call` ended (its call did):
    /// its last text (when forwarded), and its denials become the turn's.
    pub(super) fn end_child(&mut self, parent_call: &str, out: &mut Vec<Out>) {
        let Some(at) = self.children.iter().position(|(id, _)| id == parent_call) else { return };
        let (_, mut child) = self.children.remove(at);
        child.flush(out, Some("end_turn"));
        self.denials.append(&mut child.denials);
    }
}
