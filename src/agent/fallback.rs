//! The send's fallback model (`config.fallback_model`; Claude Code's
//! `--fallback-model`): when the session's model cannot take a request
//! that another model on the same server could, the request goes to the
//! fallback, and so does the rest of the send; the next send tries the
//! session's model again (as Claude Code reverts at the next turn).
//!
//! Owns: [`Fallback`], which errors it absorbs ([`Fallback::takes`]) and
//! the request body it rewrites. Only a request refused before anything
//! streamed falls back (a stream cut midway would show its text twice),
//! and only once per send; each switch is a `model_fallback` event.

use bytes::Bytes;
use serde_json::Value;

use crate::model::ModelError;

/// A send's fallback state. `Default`: no fallback model.
#[derive(Debug, Default, Clone)]
pub struct Fallback {
    model: Option<String>,
    engaged: bool,
}

impl Fallback {
    /// The state at a send's start: `model` is the session's fallback.
    pub fn new(model: Option<String>) -> Fallback {
        Fallback { model, engaged: false }
    }

    /// The fallback model, once the send has switched to it.
    pub fn engaged(&self) -> Option<&str> {
        self.model.as_deref().filter(|_| self.engaged)
    }

    /// Whether `e`, the refusal of a request before anything streamed, is
    /// one the fallback may absorb: the server is overloaded or failing
    /// (429, 5xx and 529 after pirn's own retries), does not have the
    /// model (404), or did not answer in time. Not: a bad request, an
    /// authentication failure, a connection that cannot be made (the
    /// fallback is on the same server), a spent budget.
    pub fn takes(&self, e: &ModelError) -> bool {
        if self.model.is_none() || self.engaged {
            return false;
        }
        match e {
            ModelError::Http { status, .. } => *status == 404 || *status == 429 || *status >= 500,
            ModelError::Remote { status, .. } => status.is_none_or(|s| s == 404 || s == 429 || s >= 500),
            ModelError::Timeout(_) => true,
            _ => false,
        }
    }

    /// Switches the rest of the send to the fallback; its name.
    pub fn engage(&mut self) -> Option<&str> {
        self.engaged = self.model.is_some();
        self.engaged()
    }

    /// `body` with its `model` set to the fallback once engaged (else as
    /// it is).
    pub fn body(&self, body: Bytes) -> Bytes {
        let Some(model) = self.engaged() else { return body };
        match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Object(mut request)) => {
                request.insert("model".into(), Value::String(model.to_owned()));
                serde_json::to_vec(&request).map(Bytes::from).unwrap_or(body)
            }
            _ => body,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overload_and_missing_models_fall_back_once_and_bad_requests_never() {
        let mut f = Fallback::new(Some("small".into()));
        assert!(!f.takes(&ModelError::http(400, "bad")));
        assert!(!f.takes(&ModelError::http(401, "key")));
        assert!(f.takes(&ModelError::http(503, "busy")));
        assert!(f.takes(&ModelError::http(404, "no such model")));
        assert_eq!(f.body(Bytes::from_static(b"{\"model\":\"big\"}")), Bytes::from_static(b"{\"model\":\"big\"}"));
        assert_eq!(f.engage(), Some("small"));
        assert!(!f.takes(&ModelError::http(503, "busy")), "once per send");
        let body = f.body(Bytes::from_static(b"{\"model\":\"big\",\"stream\":true}"));
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!((v["model"].as_str(), v["stream"].as_bool()), (Some("small"), Some(true)));
        assert!(!Fallback::default().takes(&ModelError::http(503, "busy")));
    }
}
