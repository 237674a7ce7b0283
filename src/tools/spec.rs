//! What the model is told about the tools: their names ([`ALL_TOOLS`]), the
//! chat-completions `tools` entries, with each tool's parameter schema
//! derived from its serde `Args` struct (so the schema cannot drift from
//! what the tool accepts).

use schemars::JsonSchema;
use serde_json::{Value, json};

use super::{bash, edit_file, glob, grep, read_file, shells, write_file};

/// Every tool pirn knows, in the order they are advertised.
pub const ALL_TOOLS: [&str; 6] = ["read_file", "write_file", "edit_file", "glob", "grep", "bash"];

/// The function specs advertised to the model for `enabled` tools (unknown
/// names are skipped), as chat-completions `tools` entries; `bash` without
/// `run_in_background` (see [`specs_for`]).
pub fn specs(enabled: &[String]) -> Vec<Value> {
    specs_for(enabled, false)
}

/// [`specs`], and with `background` (background shells offered, see
/// `tools::shells`): `bash` takes `run_in_background`, and `bash_output`
/// and `kill_shell` follow it when `bash` is enabled.
pub fn specs_for(enabled: &[String], background: bool) -> Vec<Value> {
    let entry = |name: &str, description: &str, parameters: Value| json!({"type": "function", "function": {"name": name, "description": description, "parameters": parameters}});
    let mut specs: Vec<Value> = ALL_TOOLS
        .iter()
        .filter(|name| enabled.iter().any(|e| e == *name))
        .map(|name| {
            let (description, parameters) = match *name {
                "read_file" => (read_file::DESCRIPTION, schema_of::<read_file::Args>()),
                "write_file" => (write_file::DESCRIPTION, schema_of::<write_file::Args>()),
                "edit_file" => (edit_file::DESCRIPTION, schema_of::<edit_file::Args>()),
                "glob" => (glob::DESCRIPTION, schema_of::<glob::Args>()),
                "grep" => (grep::DESCRIPTION, schema_of::<grep::Args>()),
                _ if background => (bash::DESCRIPTION_BACKGROUND, schema_of::<bash::Args>()),
                _ => {
                    let mut schema = schema_of::<bash::Args>();
                    if let Some(Value::Object(props)) = schema.get_mut("properties") {
                        props.remove("run_in_background");
                    }
                    (bash::DESCRIPTION, schema)
                }
            };
            entry(name, description, parameters)
        })
        .collect();
    if background && enabled.iter().any(|e| e == "bash") {
        specs.push(entry(shells::OUTPUT, shells::OUTPUT_DESCRIPTION, schema_of::<shells::OutputArgs>()));
        specs.push(entry(shells::KILL, shells::KILL_DESCRIPTION, schema_of::<shells::KillArgs>()));
    }
    specs
}

/// The chat-completions `tools` entry of the plan tool (`todo_write`,
/// offered apart from the workspace tools: see `tools::todo`).
pub fn plan_spec() -> Value {
    let (name, description, parameters) =
        (super::todo::NAME, super::todo::DESCRIPTION, schema_of::<super::todo::Args>());
    json!({"type": "function", "function": {"name": name, "description": description, "parameters": parameters}})
}

/// The JSON Schema of a tool's arguments, derived from its serde `Args`
/// struct (field docs become descriptions): a plain object schema as
/// chat-completions `parameters` expects, without `$schema`, `title` or
/// `null` alternatives for optional fields (small models handle the plain
/// form better; an absent field means the default).
pub fn schema_of<A: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.meta_schema = None;
            s.inline_subschemas = true;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<A>().to_value();
    if let Some(map) = schema.as_object_mut() {
        map.remove("title");
        map.remove("description");
        if let Some(Value::Object(props)) = map.get_mut("properties") {
            props.values_mut().for_each(plain_property);
        }
    }
    schema
}

/// `{"type": ["integer", "null"], "format": "uint64", …}` → `{"type": "integer", …}`;
/// a `oneOf` of constants (a unit enum) → `{"type": "string", "enum": […]}`.
/// An array's object items get the same, all the way down.
fn plain_property(p: &mut Value) {
    let Some(map) = p.as_object_mut() else { return };
    map.remove("format");
    if let Some(Value::Object(items)) = map.get_mut("items") {
        items.remove("description");
        if let Some(Value::Object(props)) = items.get_mut("properties") {
            props.values_mut().for_each(plain_property);
        }
    }
    if map.get("default") == Some(&Value::Null) {
        map.remove("default");
    }
    let consts: Option<Vec<Value>> = map
        .get("oneOf")
        .and_then(Value::as_array)
        .and_then(|alts| alts.iter().map(|a| a.get("const").cloned()).collect());
    if let Some(values) = consts {
        map.remove("oneOf");
        map.insert("type".to_owned(), json!("string"));
        map.insert("enum".to_owned(), Value::Array(values));
    }
    if let Some(Value::Array(types)) = map.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if kept.len() == 1 {
            map.insert("type".to_owned(), kept[0].clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::DeserializeOwned;

    /// A value of the type a property schema declares.
    fn sample(prop: &Value) -> Value {
        if let Some(first) = prop.get("enum").and_then(|e| e.get(0)) {
            return first.clone();
        }
        if let Some(first) = prop.get("oneOf").and_then(|e| e.get(0)) {
            return first.get("const").cloned().unwrap_or_else(|| sample(first));
        }
        match prop.get("type").and_then(Value::as_str) {
            Some("string") => json!("x"),
            Some("integer") => prop.get("minimum").cloned().unwrap_or(json!(1)),
            Some("boolean") => json!(true),
            other => panic!("unexpected property type {other:?} in {prop}"),
        }
    }

    /// Every tool's advertised schema describes exactly what its `Args`
    /// accept: all properties filled in parse, the required ones alone
    /// parse, and dropping any required one fails.
    fn check<A: DeserializeOwned + JsonSchema>(name: &str) {
        let schema = schema_of::<A>();
        assert_eq!(schema["type"], "object", "{name}: {schema}");
        assert!(schema.get("$schema").is_none() && schema.get("title").is_none(), "{name}: {schema}");
        let props = schema["properties"].as_object().unwrap_or_else(|| panic!("{name}: no properties"));
        let required: Vec<&str> =
            schema["required"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        assert!(!required.is_empty(), "{name}: nothing required");
        for p in props.values() {
            assert!(p.get("description").is_some(), "{name}: property without description: {p}");
            assert!(!p["type"].is_array(), "{name}: nullable type left: {p}");
            assert!(p.get("default") != Some(&Value::Null), "{name}: null default left: {p}");
        }
        let all: serde_json::Map<String, Value> = props.iter().map(|(k, v)| (k.clone(), sample(v))).collect();
        serde_json::from_value::<A>(Value::Object(all.clone())).unwrap_or_else(|e| panic!("{name}: all fields: {e}"));
        let only_required: serde_json::Map<String, Value> =
            all.iter().filter(|(k, _)| required.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
        serde_json::from_value::<A>(Value::Object(only_required.clone())).unwrap_or_else(|e| panic!("{name}: {e}"));
        for r in &required {
            let mut missing = only_required.clone();
            missing.remove(*r);
            assert!(serde_json::from_value::<A>(Value::Object(missing)).is_err(), "{name}: {r} is not required");
        }
    }

    #[test]
    fn every_schema_matches_its_arguments() {
        check::<read_file::Args>("read_file");
        check::<write_file::Args>("write_file");
        check::<edit_file::Args>("edit_file");
        check::<glob::Args>("glob");
        check::<grep::Args>("grep");
        check::<bash::Args>("bash");
        assert_eq!(specs(&ALL_TOOLS.map(String::from)).len(), ALL_TOOLS.len());
        let grep = schema_of::<grep::Args>();
        assert_eq!(grep["properties"]["head_limit"]["minimum"], 1, "{grep}");
    }

    #[test]
    fn the_plan_spec_is_plain() {
        let spec = plan_spec();
        let step = &spec["function"]["parameters"]["properties"]["todos"]["items"];
        assert_eq!(step["properties"]["status"]["enum"], json!(["pending", "in_progress", "completed"]), "{spec}");
        assert_eq!(step["required"], json!(["content", "status"]), "{spec}");
        assert!(!spec.to_string().contains("null"), "{spec}");
    }
}
