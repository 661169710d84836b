//! An MCP server's input schemas, checked when its tools are listed, and the arguments of a
//! call checked against them before the gates see the call.
//!
//! The check covers what tool schemas use: `type` (one or several), `properties`,
//! `required`, `additionalProperties`, `items`, `enum` and `const`, nested to a bounded
//! depth. What it does not know (`pattern`, `format`, `oneOf` …) it lets through: the server
//! checks its own arguments too; this check is there so the model learns of a wrong call
//! at once, and so no call reaches a server with arguments of the wrong shape.

use serde_json::{Map, Value};

/// The largest schema offered to a model (JSON text): a server cannot fill the request with
/// one tool's schema.
pub const MAX_SCHEMA_BYTES: usize = 32 * 1024;
/// The longest description of a tool offered to a model.
pub const MAX_DESCRIPTION_CHARS: usize = 2_000;
const MAX_DEPTH: usize = 24;

/// The schema as offered to the model, or why the tool is not offered: it must describe an
/// object (a missing `type` is taken for one), its `properties` an object, its `required`
/// a list of names; `$schema` and `$id` are dropped (some providers refuse them).
pub fn offered(schema: &Value) -> Result<Value, String> {
    let Value::Object(map) = schema else {
        return Err("its input schema is not a JSON object".into());
    };
    let mut map: Map<String, Value> = map.clone();
    map.remove("$schema");
    map.remove("$id");
    match map.get("type") {
        None => {
            map.insert("type".into(), Value::String("object".into()));
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(format!(
                "its input schema's type is {other}, not \"object\""
            ))
        }
    }
    match map.get("properties") {
        None => {
            map.insert("properties".into(), Value::Object(Map::new()));
        }
        Some(Value::Object(_)) => {}
        Some(_) => return Err("its input schema's properties are not an object".into()),
    }
    if let Some(required) = map.get("required") {
        let names = required
            .as_array()
            .filter(|a| a.iter().all(Value::is_string));
        if names.is_none() {
            return Err("its input schema's required is not a list of names".into());
        }
    }
    let out = Value::Object(map);
    let size = serde_json::to_string(&out)
        .map(|s| s.len())
        .unwrap_or(usize::MAX);
    if size > MAX_SCHEMA_BYTES {
        return Err(format!(
            "its input schema is {size} bytes, more than the {MAX_SCHEMA_BYTES} offered to a model"
        ));
    }
    Ok(out)
}

/// Check `args` (a call's arguments; `null` is an empty object) against `schema`.
pub fn check(schema: &Value, args: &Value) -> Result<(), String> {
    let empty = Value::Object(Map::new());
    let args = if args.is_null() { &empty } else { args };
    check_at(schema, args, "arguments", 0)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn admits(kind: &str, v: &Value) -> bool {
    match kind {
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        other => type_name(v) == other,
    }
}

fn check_at(schema: &Value, v: &Value, at: &str, depth: usize) -> Result<(), String> {
    let Value::Object(s) = schema else {
        // `true` or an unknown shape: anything goes.
        return if schema == &Value::Bool(false) {
            Err(format!("{at} is not allowed here"))
        } else {
            Ok(())
        };
    };
    if depth > MAX_DEPTH {
        return Ok(());
    }
    match s.get("type") {
        Some(Value::String(t)) if !admits(t, v) => {
            return Err(format!("{at} must be a {t}, not a {}", type_name(v)));
        }
        Some(Value::Array(ts)) => {
            let names: Vec<&str> = ts.iter().filter_map(Value::as_str).collect();
            if !names.is_empty() && !names.iter().any(|t| admits(t, v)) {
                return Err(format!(
                    "{at} must be one of {}, not a {}",
                    names.join(", "),
                    type_name(v)
                ));
            }
        }
        _ => {}
    }
    if let Some(Value::Array(options)) = s.get("enum") {
        if !options.contains(v) {
            let shown: Vec<String> = options.iter().take(20).map(Value::to_string).collect();
            return Err(format!("{at} must be one of {}", shown.join(", ")));
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            return Err(format!("{at} must be {c}"));
        }
    }
    match v {
        Value::Object(obj) => {
            let props = s.get("properties").and_then(Value::as_object);
            if let Some(Value::Array(required)) = s.get("required") {
                for name in required.iter().filter_map(Value::as_str) {
                    if !obj.contains_key(name) {
                        return Err(format!("{at}.{name} is required"));
                    }
                }
            }
            for (key, value) in obj {
                let here = format!("{at}.{key}");
                match props.and_then(|p| p.get(key)) {
                    Some(sub) => check_at(sub, value, &here, depth + 1)?,
                    None => match s.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            let known: Vec<&str> = props
                                .map(|p| p.keys().map(String::as_str).collect())
                                .unwrap_or_default();
                            return Err(format!(
                                "{here} is not an argument of this tool (known: {})",
                                known.join(", ")
                            ));
                        }
                        Some(sub @ Value::Object(_)) => check_at(sub, value, &here, depth + 1)?,
                        _ => {}
                    },
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = s.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check_at(sub, item, &format!("{at}[{i}]"), depth + 1)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn offered_schemas_describe_objects() {
        let s = offered(&json!({"$schema": "x", "properties": {"a": {"type": "string"}}}))
            .expect("offered");
        assert_eq!(s["type"], "object");
        assert!(s.get("$schema").is_none());
        assert!(offered(&json!({"type": "string"})).is_err());
        assert!(offered(&json!([1])).is_err());
        assert!(offered(&json!({"type": "object", "required": "a"})).is_err());
        let huge = json!({"type": "object", "description": "x".repeat(MAX_SCHEMA_BYTES)});
        assert!(offered(&huge).unwrap_err().contains("bytes"));
    }

    #[test]
    fn calls_are_checked_against_the_schema() {
        let s = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "n": {"type": "integer"},
                "mode": {"enum": ["r", "w"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "opt": {"type": ["string", "null"]},
                "sub": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
            },
            "required": ["path"],
            "additionalProperties": false
        });
        assert!(check(&s, &json!({"path": "/a", "n": 3, "mode": "r", "tags": ["x"], "opt": null, "sub": {"x": 1.5}})).is_ok());
        assert_eq!(
            check(&s, &json!({})).unwrap_err(),
            "arguments.path is required"
        );
        assert!(check(&s, &Value::Null).is_err());
        assert!(check(&s, &json!({"path": 1}))
            .unwrap_err()
            .contains("must be a string"));
        assert!(check(&s, &json!({"path": "a", "n": 1.5}))
            .unwrap_err()
            .contains("integer"));
        assert!(check(&s, &json!({"path": "a", "mode": "x"}))
            .unwrap_err()
            .contains("one of"));
        assert!(check(&s, &json!({"path": "a", "tags": [1]}))
            .unwrap_err()
            .contains("tags[0]"));
        assert!(check(&s, &json!({"path": "a", "sub": {}}))
            .unwrap_err()
            .contains("sub.x is required"));
        assert!(check(&s, &json!({"path": "a", "evil": 1}))
            .unwrap_err()
            .contains("not an argument"));
        assert!(check(&s, &json!({"path": "a", "n": 2.0})).is_ok());
    }
}
