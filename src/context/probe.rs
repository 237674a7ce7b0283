//! Asking the model server how large its context window is, once per
//! session and never on the path to `init_ok`.
//!
//! Where the answer comes from, in order: llama.cpp's `GET /props`
//! (`default_generation_settings.n_ctx`, at the server's root, i.e. the base
//! URL without its `/v1`), then `GET <base>/models` where a server reports a
//! length there (vLLM's `max_model_len`, for the model in use if listed).
//! Each request is bounded by [`PROBE_TIMEOUT`]; any failure means "unknown".

use std::time::Duration;

use serde_json::Value;

use crate::model::Endpoint;

/// Longest wait for each probe request.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The window the server at `endpoint` reports for `model`, in tokens.
pub async fn probe_window(endpoint: &Endpoint, model: &str) -> Option<u32> {
    let base = endpoint.base_url();
    let root = base.strip_suffix("/v1").unwrap_or(base);
    if let Some(props) = endpoint.get_json(&format!("{root}/props"), PROBE_TIMEOUT).await
        && let Some(n) = window_from_props(&props)
    {
        return Some(n);
    }
    let models = endpoint.get_json(&format!("{base}/models"), PROBE_TIMEOUT).await?;
    window_from_models(&models, model)
}

/// `default_generation_settings.n_ctx` (or a top-level `n_ctx`) of llama.cpp's `/props`.
pub fn window_from_props(props: &Value) -> Option<u32> {
    props
        .pointer("/default_generation_settings/n_ctx")
        .or_else(|| props.get("n_ctx"))
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
        .and_then(|n| u32::try_from(n).ok())
}

/// `max_model_len` of the listed model named `model` (else of the first one
/// that has it) in an OpenAI-style `/models` answer.
pub fn window_from_models(models: &Value, model: &str) -> Option<u32> {
    let list = models.get("data").and_then(Value::as_array)?;
    let len = |m: &Value| m.get("max_model_len").and_then(Value::as_u64).filter(|n| *n > 0);
    list.iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .and_then(len)
        .or_else(|| list.iter().find_map(len))
        .and_then(|n| u32::try_from(n).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn windows_are_read_from_llama_and_vllm_answers() {
        assert_eq!(window_from_props(&json!({"default_generation_settings": {"n_ctx": 8192}})), Some(8192));
        assert_eq!(window_from_props(&json!({"n_ctx": 0})), None);
        let models = json!({"data": [{"id": "a", "max_model_len": 4096}, {"id": "b", "max_model_len": 32768}]});
        assert_eq!(window_from_models(&models, "b"), Some(32768));
        assert_eq!(window_from_models(&models, "zzz"), Some(4096));
        assert_eq!(window_from_models(&json!({"data": [{"id": "x"}]}), "x"), None);
    }
}
