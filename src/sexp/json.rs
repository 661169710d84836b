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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sexp::print;
    use serde_json::json;

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
