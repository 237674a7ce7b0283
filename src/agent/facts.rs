//! What one send did, as facts: the typed outcome of each tool call, and
//! the record the answer gates read.
//!
//! Owns: [`CallOutcome`] (what one call did: the tool's own typed
//! [`Effect`] — changed a file, left it as it was, was held back, found its
//! edit made already, ran a command and how it exited — or was withheld,
//! denied, failed, looked without changing anything, or delegated) and
//! [`Facts`] (the files this send changed with the hash of what each last
//! write put there, the writes held back and not confirmed since, the
//! commands run and their exit codes, the calls that failed or were
//! denied). Fed only by [`CallOutcome`]s, which come from the tools' typed
//! [`Effect`] and the approval gate, never from the text of a result, a
//! request or an answer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::tools::{Effect, Hold, ToolOutput};

/// What one tool call did: the effect the tool itself reports
/// ([`CallOutcome::Did`]), or what pirn knows of a call that had none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOutcome {
    /// The tool ran and reports this effect on the workspace (never
    /// [`Effect::None`]: that is [`CallOutcome::Looked`] or
    /// [`CallOutcome::Failed`]).
    Did(Effect),
    /// A write held back because the request was read as asking for no
    /// change (`write_check`): nothing ran.
    Withheld,
    /// The approval policy or the user refused the call: nothing ran.
    Denied,
    /// The call failed (bad arguments, a path outside, an edit that did not match).
    Failed,
    /// It succeeded without changing anything pirn can see (a read, a
    /// search), or it was a tool whose effects pirn cannot see (MCP).
    Looked,
    /// A subagent ran (`task`): the files its writes changed, each with
    /// the hash of what it left (`None`: changed since, unseen), and
    /// whether it ran commands or tools whose effects pirn cannot see.
    Delegated { changed: Vec<(PathBuf, Option<u64>)>, unseen: bool },
}

impl CallOutcome {
    /// The outcome of a call that ran (or was refused by the tool itself).
    pub fn of(output: &ToolOutput) -> CallOutcome {
        match &output.effect {
            Effect::None if output.is_error => CallOutcome::Failed,
            Effect::None => CallOutcome::Looked,
            effect => CallOutcome::Did(effect.clone()),
        }
    }

    /// True when a later call's result may differ because of this one
    /// (it wrote, ran a command, or may have: an MCP tool).
    pub fn may_change_workspace(&self, tool: &str) -> bool {
        match self {
            CallOutcome::Did(Effect::Changed { .. } | Effect::Ran { .. }) => true,
            CallOutcome::Delegated { changed, unseen } => *unseen || !changed.is_empty(),
            CallOutcome::Looked => !crate::tools::effects_known(tool),
            _ => false,
        }
    }
}

/// One call of a round as a later repeat may be answered with it.
#[derive(Debug, Clone)]
pub struct PastCall {
    /// [`super::loop_guard::call_signature`] of the call.
    pub signature: String,
    /// The result the model read.
    pub text: String,
    /// The call failed (it will fail again with the same arguments).
    pub failed: bool,
}

/// The facts of one send so far.
#[derive(Debug, Default)]
pub struct Facts {
    /// Files changed by `write_file`/`edit_file`: path → hash of what the
    /// last such call wrote.
    pub changed: BTreeMap<PathBuf, u64>,
    /// Files changed and then touched by a call whose effect on them pirn
    /// cannot see (`bash`, an MCP tool): what they hold is the model's doing
    /// either way, so their hash is not held against the disk.
    pub touched_since: BTreeSet<PathBuf>,
    /// Writes held back and not confirmed or superseded since, and why.
    pub held_back: BTreeMap<PathBuf, Hold>,
    /// Exit codes of the commands run, in order.
    pub ran: Vec<Option<i32>>,
    /// Calls that failed, and calls refused by the policy or the user.
    pub failed: u32,
    pub denied: u32,
    /// Writes the request's reading withheld (`write_check`): none ran.
    pub withheld: u32,
    /// Outcomes of the last tool round.
    pub last_round: Vec<CallOutcome>,
    /// pirn's own tools whose calls succeeded without changing anything (a
    /// read, a search), by name: what the model has looked at with.
    pub looked_with: BTreeSet<String>,
    /// Calls so far that changed the workspace or may have (a write that
    /// changed a file, a command, an MCP tool): equal counts at two moments
    /// mean nothing the send did could have changed a file in between.
    pub moves: u32,
}

impl Facts {
    /// Records one call's outcome (`tool`: its name).
    pub fn record(&mut self, tool: &str, outcome: &CallOutcome) {
        if outcome.may_change_workspace(tool) {
            self.moves += 1;
        }
        match outcome {
            CallOutcome::Did(Effect::Changed { path, hash, .. }) => {
                self.changed.insert(path.clone(), *hash);
                self.touched_since.remove(path);
                self.held_back.remove(path);
            }
            CallOutcome::Did(Effect::Unchanged { path }) => {
                self.held_back.remove(path);
            }
            CallOutcome::Did(Effect::HeldBack { path, why }) => {
                self.held_back.insert(path.clone(), *why);
            }
            CallOutcome::Did(Effect::Ran { exit_code }) => {
                self.ran.push(*exit_code);
                self.touched_since.extend(self.changed.keys().cloned());
            }
            CallOutcome::Delegated { changed, unseen } => {
                if *unseen {
                    self.touched_since.extend(self.changed.keys().cloned());
                }
                for (path, hash) in changed {
                    self.changed.insert(path.clone(), hash.unwrap_or_default());
                    self.held_back.remove(path);
                    match hash {
                        Some(_) => self.touched_since.remove(path),
                        None => self.touched_since.insert(path.clone()),
                    };
                }
            }
            CallOutcome::Denied => self.denied += 1,
            CallOutcome::Withheld => self.withheld += 1,
            CallOutcome::Failed => self.failed += 1,
            CallOutcome::Looked if !crate::tools::effects_known(tool) => {
                self.touched_since.extend(self.changed.keys().cloned());
            }
            CallOutcome::Looked => {
                self.looked_with.insert(tool.to_owned());
            }
            CallOutcome::Did(Effect::MadeAlready { .. } | Effect::None) => {}
        }
    }

    /// True once a file was changed in this send.
    pub fn wrote(&self) -> bool {
        !self.changed.is_empty()
    }

    /// pirn's account of the send for an answer the model did not give:
    /// the files it changed (`shown` turns a path into the workspace form).
    pub fn account(&self, shown: impl Fn(&std::path::Path) -> String) -> String {
        if self.changed.is_empty() {
            "No file was changed.".to_owned()
        } else {
            let files: Vec<String> = self.changed.keys().map(|p| shown(p)).collect();
            format!("Files changed: {}.", files.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changed(path: &std::path::Path, hash: u64) -> CallOutcome {
        CallOutcome::Did(Effect::Changed { path: path.to_path_buf(), hash, created: false, relaid: false })
    }

    #[test]
    fn facts_follow_typed_outcomes() {
        let mut f = Facts::default();
        let a = PathBuf::from("/w/a.py");
        f.record("write_file", &CallOutcome::Did(Effect::HeldBack { path: a.clone(), why: Hold::MostlyRemoved }));
        assert!(f.held_back.contains_key(&a) && !f.wrote());
        f.record("write_file", &changed(&a, 7));
        assert!(f.held_back.is_empty() && f.wrote());
        f.record("bash", &CallOutcome::Did(Effect::Ran { exit_code: Some(1) }));
        assert!(f.touched_since.contains(&a), "a command ran after the write");
        f.record("edit_file", &changed(&a, 8));
        assert!(f.touched_since.is_empty() && f.changed[&a] == 8);
        f.record("read_file", &CallOutcome::Denied);
        f.record("write_file", &CallOutcome::Did(Effect::Unchanged { path: a.clone() }));
        f.record("read_file", &CallOutcome::Looked);
        f.record("grep", &CallOutcome::Failed);
        assert_eq!(f.looked_with.iter().collect::<Vec<_>>(), ["read_file"], "a failed search showed nothing");
        assert_eq!((f.denied, f.ran.clone()), (1, vec![Some(1)]));
        assert_eq!(f.moves, 3, "two writes that changed the file and a command; not a read or a same-bytes write");
        f.record("mcp__x__y", &CallOutcome::Looked);
        assert_eq!(f.moves, 4, "an MCP tool may have changed anything");
        assert_eq!(f.account(|p| p.display().to_string()), "Files changed: /w/a.py.");
    }
}
