//! Token counts as a model server reports them, carried by `usage` events
//! and results.
//!
//! Owns: [`Usage`] and its arithmetic.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Token counts, as reported by the model server.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, utoipa::ToSchema, PartialEq)]
pub struct Usage {
    /// Tokens of the request (system prompt, conversation, tool specs).
    pub prompt_tokens: u64,
    /// Tokens the model generated.
    pub completion_tokens: u64,
    /// The two together (as the server reports it).
    pub total_tokens: u64,
    /// 0.3.0: prompt tokens the server answered from its prompt cache, when
    /// it says (OpenAI `prompt_tokens_details.cached_tokens`, llama.cpp
    /// `timings.cache_n`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// 0.3.0: what the call cost in US dollars: the provider's own figure
    /// (OpenRouter's `usage.cost`, LiteLLM's `x-litellm-response-cost`
    /// header), else the operator's price table (`config.prices`). Absent
    /// when unknown (never a made-up 0). In `result.usage`: the send's sum,
    /// absent when any of its model calls' cost is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// Adds `other` into `self` (saturating).
    pub fn add(&mut self, other: &Usage) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self.completion_tokens.saturating_add(other.completion_tokens);
        self.total_tokens = self.total_tokens.saturating_add(other.total_tokens);
        if let Some(c) = other.cached_tokens {
            self.cached_tokens = Some(self.cached_tokens.unwrap_or(0).saturating_add(c));
        }
        if let Some(c) = other.cost_usd {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + c);
        }
    }
}
