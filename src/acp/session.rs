//! One ACP session as `pirn acp` keeps it: the pirn session, the prompts
//! waiting for their answer and the permission answers given "always".
//!
//! Owns: [`AcpSession`] only; the handlers ([`super::state`]) create it and
//! its forwarder ([`super::forward`]) answers from it.

use std::collections::HashMap;
use std::sync::Mutex;

use agent_client_protocol::Responder;
use agent_client_protocol::V1;
use agent_client_protocol::v1::schema::{Meta, PromptResponse, SessionId};

use crate::session::Session;

/// One ACP session: the pirn session, the prompts waiting for their
/// result (by pirn send id), and the permission answers given "always".
pub(crate) struct AcpSession {
    pub session: Session,
    pub id: SessionId,
    pub pending: Mutex<HashMap<String, Responder<PromptResponse, V1>>>,
    /// Tool name → allowed (true) or rejected (false) for the session.
    pub always: Mutex<HashMap<String, bool>>,
}

impl AcpSession {
    /// `_meta` of the answer that opened the session: the profile in force.
    pub fn profile_meta(&self) -> Meta {
        super::meta::pirn(&super::meta::ProfileMeta { profile: self.session.config().profile.name.clone() })
    }
}
