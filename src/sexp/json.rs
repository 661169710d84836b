//! JSON ⇄ S-expression, for tool arguments that arrive as JSON (native tool calling) and
//! must pass the same gates as plists.

use lexpr::Value;
use serde_json::Value as Json;

/// Objects become plists (keys as lowercase keywords), arrays lists, `null` nil.
/// Nesting deeper than the reader allows is cut to nil, as the reader would refuse it.
pub fn from_json(j: &Json) -> Value {
    from_json_at(j, 0)
}

fn from_json_at(j: &Json, depth: usize) -> Value {
    if depth > super::reader::MAX_DEPTH {
        return Value::Nil;
    }
    match j {
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Value::from(i),
            (None, Some(u), _) => Value::from(u),
            (_, _, Some(f)) => Value::from(f),
            _ => Value::Nil,
        },
        Json::String(s) => Value::string(s.as_str()),
        Json::Array(items) => Value::list(
            items
                .iter()
                .map(|x| from_json_at(x, depth + 1))
                .collect::<Vec<_>>(),
        ),
        Json::Object(map) => {
            let mut items = Vec::with_capacity(map.len() * 2);
            for (k, v) in map {
                items.push(Value::keyword(k.to_lowercase()));
                items.push(from_json_at(v, depth + 1));
            }
            Value::list(items)
        }
    }
}

/// A plist (a list whose first element is a keyword) becomes an object whose keys are the
/// keyword names with `-` as `_` (the tools' JSON spelling); other lists and vectors become
/// arrays; `t` true, `nil` null.
pub fn to_json(v: &Value) -> Json {
    to_json_at(v, 0)
}

fn to_json_at(v: &Value, depth: usize) -> Json {
    if depth > super::reader::MAX_DEPTH {
        return Json::Null;
    }
    match v {
        Value::Bool(true) => Json::Bool(true),
        Value::Symbol(s) if &**s == "t" => Json::Bool(true),
        v if super::is_nil(v) => Json::Null,
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Json::from(i),
            (None, Some(u), _) => Json::from(u),
            (_, _, Some(f)) => serde_json::Number::from_f64(f).map_or(Json::Null, Json::Number),
            _ => Json::Null,
        },
        Value::String(s) => Json::String(s.to_string()),
        Value::Symbol(s) => Json::String(s.to_string()),
        Value::Keyword(k) => Json::String(k.to_string()),
        Value::Char(c) => Json::String(c.to_string()),
        Value::Vector(items) => {
            Json::Array(items.iter().map(|x| to_json_at(x, depth + 1)).collect())
        }
        Value::Cons(cell) if matches!(cell.car(), Value::Keyword(_)) => {
            let mut map = serde_json::Map::new();
            let mut cur = v;
            while let Value::Cons(cell) = cur {
                let key = match cell.car() {
                    Value::Keyword(k) => k.replace('-', "_"),
                    other => super::print(other),
                };
                match cell.cdr() {
                    Value::Cons(rest) => {
                        map.insert(key, to_json_at(rest.car(), depth + 1));
                        cur = rest.cdr();
                    }
                    _ => {
                        map.insert(key, Json::Null);
                        break;
                    }
                }
            }
            Json::Object(map)
        }
        Value::Cons(_) => {
            let mut items = Vec::new();
            let mut cur = v;
            while let Value::Cons(cell) = cur {
                items.push(to_json_at(cell.car(), depth + 1));
                cur = cell.cdr();
            }
            Json::Array(items)
        }
        _ => Json::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sexp::print;
    use serde_json::json;

    #[test]
    fn plists_become_objects() {
        let v = crate::sexp::read("(:todo-type \"todo\" :limit 5 :projects t :none nil :xs (1 2))")
            .unwrap();
        assert_eq!(
            to_json(v.value()),
            json!({"todo_type": "todo", "limit": 5, "projects": true, "none": null, "xs": [1, 2]})
        );
    }

    #[test]
    fn objects_become_plists() {
        let v = from_json(
            &json!({"Tag": "work", "limit": 5, "deep": {"ok": true, "none": null}, "xs": [1, 2.5, "a"]}),
        );
        let get = |k| print(crate::sexp::plist_get(&v, k).unwrap());
        assert_eq!(get("tag"), "\"work\"");
        assert_eq!(get("limit"), "5");
        assert_eq!(get("xs"), "(1 2.5 \"a\")");
        let deep_v = crate::sexp::plist_get(&v, "deep").unwrap();
        assert_eq!(print(crate::sexp::plist_get(deep_v, "ok").unwrap()), "t");
        assert_eq!(
            print(crate::sexp::plist_get(deep_v, "none").unwrap()),
            "nil"
        );
        let mut deep = json!(1);
        for _ in 0..200 {
            deep = json!([deep]);
        }
        // Cut, not overflowed.
        let _ = print(&from_json(&deep));
    }
}
