//! `task`: hand a self-contained piece of work to a subagent, which works
//! in its own conversation and answers with its result.
//!
//! Owns the tool's name, its spec (built from the operator's agent
//! definitions: their names and what each is for) and reading a call's
//! arguments ([`parse`]). Running the child is `agent::subagent`: this
//! module touches nothing.
//!
//! Source of the semantics: Claude Code's `Task` tool (`description`,
//! `prompt`, `subagent_type`) as its public documentation describes it.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::wire::Agents;

/// The tool's name, as the model calls it (Claude Code's `Task`).
pub const NAME: &str = "task";

/// `task`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args {
    /// A short (3-5 word) title of the work.
    pub description: String,
    /// The whole task for the subagent: it sees nothing of this
    /// conversation, so say everything it needs and what to answer with.
    pub prompt: String,
    /// Which subagent does the work (one of the names listed).
    pub subagent_type: String,
}

/// The tool's spec for a session whose operator defined `agents` (names
/// in order, with what each is for).
pub fn spec(agents: &Agents) -> Value {
    let mut description = String::from(
        "Hand a self-contained piece of work to a subagent. It works in its own conversation with its own \
tools and sees nothing of this one, so the prompt must say everything it needs; its final answer is this \
call's result. Use it for work that is separate from the rest and would fill this conversation. Subagents:",
    );
    for (name, a) in agents {
        description.push_str(&format!("\n- {name}: {}", a.description.trim()));
    }
    let mut parameters = super::spec::schema_of::<Args>();
    parameters["properties"]["subagent_type"]["enum"] = json!(agents.keys().collect::<Vec<_>>());
    json!({"type": "function", "function": {"name": NAME, "description": description, "parameters": parameters}})
}

/// Reads a call's arguments; the error is for the model.
pub fn parse(arguments: &str, agents: &Agents) -> Result<Args, String> {
    let args: Args = serde_json::from_str(arguments).map_err(|e| {
        format!("the task call's arguments do not read ({e}): send description, prompt and subagent_type")
    })?;
    if !agents.contains_key(&args.subagent_type) {
        let known: Vec<&str> = agents.keys().map(String::as_str).collect();
        return Err(format!("there is no subagent {:?}; use one of: {}", args.subagent_type, known.join(", ")));
    }
    if args.prompt.trim().is_empty() {
        return Err("the task's prompt is empty: say what the subagent should do".to_owned());
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::AgentDefinition;

    #[test]
    fn the_spec_lists_the_operators_agents_and_parse_names_the_known_ones() {
        let agents = Agents::from([(
            "reviewer".to_owned(),
            AgentDefinition {
                description: "reviews a diff".into(),
                prompt: "You review.".into(),
                ..Default::default()
            },
        )]);
        let spec = spec(&agents);
        assert!(spec["function"]["description"].as_str().unwrap().contains("- reviewer: reviews a diff"));
        assert_eq!(spec["function"]["parameters"]["properties"]["subagent_type"]["enum"], json!(["reviewer"]));
        assert_eq!(spec["function"]["parameters"]["required"], json!(["description", "prompt", "subagent_type"]));
        let a = parse(r#"{"description":"d","prompt":"p","subagent_type":"reviewer"}"#, &agents).unwrap();
        assert_eq!(a.prompt, "p");
        let e = parse(r#"{"description":"d","prompt":"p","subagent_type":"coder"}"#, &agents).unwrap_err();
        assert!(e.contains("reviewer"), "{e}");
    }
}
