//! Schema-checked final answers: a send's `output_schema` (0.3.0).
//!
//! Owns: compiling the schema (draft 2020-12, with the `jsonschema` crate),
//! reading a JSON value out of the model's answer, the validation errors
//! the model is shown when it does not match, and the provider's
//! structured-output request (`response_format` in the OpenAI form, which
//! llama.cpp turns into a grammar) used for the answers asked for again.
//!
//! The loop's rule ([`super::run`]): the first final answer is the model's
//! own; when it does not parse or validate, the model is told exactly
//! which errors were found and asked again, with `response_format` and no
//! tools, up to `output_retries` times; then the send fails with
//! `output_invalid` and the errors in `details`.

use serde_json::{Value, json};

/// Most validation errors quoted to the model and in `details`.
const MAX_ERRORS: usize = 10;
/// The miss of an answer cut off at the token limit.
pub const CUT_OFF: &str = "the answer was cut off at the token limit: reply with a short JSON value";

/// A send's compiled `output_schema`. See the module doc.
#[derive(Debug)]
pub struct OutputSpec {
    schema: Value,
    validator: jsonschema::Validator,
    /// Answers that may still be asked for again.
    pub retries_left: u32,
}

impl OutputSpec {
    /// Compiles `schema` (draft 2020-12 unless its `$schema` names
    /// another). Errors: the schema is not a valid JSON Schema, as a
    /// sentence naming where.
    pub fn compile(schema: &Value, retries: u32) -> Result<OutputSpec, String> {
        if !schema.is_object() && !schema.is_boolean() {
            return Err("output_schema must be a JSON Schema: an object or a boolean".to_owned());
        }
        let validator = jsonschema::validator_for(schema)
            .map_err(|e| format!("output_schema is not a valid JSON Schema: {e} (at {})", where_(e.schema_path())))?;
        Ok(OutputSpec { schema: schema.clone(), validator, retries_left: retries })
    }

    /// The answer's JSON value when it is valid, else the validation errors
    /// (a parse error is one). The value may be the whole answer, the
    /// inside of one fenced block, or the one JSON object or array the
    /// text holds.
    pub fn check(&self, answer: &str) -> Result<Value, Vec<String>> {
        let value = parse_answer(answer).ok_or_else(|| {
            vec!["the answer is not JSON: reply with only one JSON value, no prose around it".to_owned()]
        })?;
        let errors: Vec<String> = self
            .validator
            .iter_errors(&value)
            .take(MAX_ERRORS)
            .map(|e| format!("at {}: {e}", where_(e.instance_path())))
            .collect();
        if errors.is_empty() { Ok(value) } else { Err(errors) }
    }

    /// What the user message gains: the answer's required shape.
    pub fn instruction(&self) -> String {
        format!(
            "\n\nWhen you are done, your final answer must be only one JSON value, with no other text, \
             that matches this JSON Schema:\n{}",
            self.schema
        )
    }

    /// The note that asks for the answer again after `errors`.
    pub fn retry_note(&self, errors: &[String]) -> String {
        format!(
            "Your answer does not match the required JSON Schema:\n- {}\nReply now with only one JSON value \
             that matches this schema, using what the tools showed:\n{}",
            errors.join("\n- "),
            self.schema
        )
    }

    /// The request field that asks the provider for a JSON answer matching
    /// the schema.
    pub fn response_format(&self) -> Value {
        json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": self.schema, "strict": true}})
    }
}

/// A location for a person: `/` for the root.
fn where_(path: &impl std::fmt::Display) -> String {
    let p = path.to_string();
    if p.is_empty() { "/".to_owned() } else { p }
}

/// The JSON value of an answer: all of it, the inside of a fenced block,
/// or the span from the first `{`/`[` to the last `}`/`]`.
fn parse_answer(answer: &str) -> Option<Value> {
    let t = answer.trim();
    if let Ok(v) = serde_json::from_str(t) {
        return Some(v);
    }
    if let Some(start) = t.find("```") {
        let body = &t[start + 3..];
        let body = body.split_once('\n').map_or(body, |(_, rest)| rest);
        if let Some(end) = body.find("```")
            && let Ok(v) = serde_json::from_str(body[..end].trim())
        {
            return Some(v);
        }
    }
    let start = t.find(['{', '['])?;
    let end = t.rfind(['}', ']'])?;
    (end > start).then(|| serde_json::from_str(&t[start..=end]).ok()).flatten()
}

/// True when a provider's HTTP 400 body says it does not take
/// `response_format` (it is then sent without, for the session).
pub fn rejects_response_format(status: Option<u16>, message: &str) -> bool {
    status == Some(400) && message.contains("response_format")
}

/// The `output_invalid` error after the last retry, with the validation
/// errors in `details.errors`.
pub fn invalid(errors: Vec<String>) -> crate::wire::ErrorEnvelope {
    let mut error = crate::wire::ErrorEnvelope::new(
        crate::wire::ErrorCode::OutputInvalid,
        format!("the final answer does not match the send's output_schema: {}", errors.join("; ")),
    );
    error.details = Some(json!({ "errors": errors }));
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_leniently_and_checked_strictly() {
        let schema = json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}});
        let spec = OutputSpec::compile(&schema, 2).unwrap();
        assert_eq!(spec.check(r#"{"n": 3}"#), Ok(json!({"n": 3})));
        assert_eq!(spec.check("Here:\n```json\n{\"n\": 4}\n```"), Ok(json!({"n": 4})));
        assert_eq!(spec.check("The answer is {\"n\": 5}."), Ok(json!({"n": 5})));
        let errors = spec.check(r#"{"n": "three"}"#).unwrap_err();
        assert!(errors[0].starts_with("at /n:") && errors[0].contains("integer"), "{errors:?}");
        assert!(spec.check(r#"{}"#).unwrap_err()[0].contains("\"n\""));
        assert!(spec.check("three").unwrap_err()[0].contains("not JSON"));
        assert!(OutputSpec::compile(&json!({"type": "nonsense"}), 2).unwrap_err().contains("not a valid JSON Schema"));
        assert!(OutputSpec::compile(&json!("x"), 2).is_err());
        assert_eq!(spec.response_format()["json_schema"]["schema"], schema);
    }
}
