//! Typed reading of plists: each accessor returns the value of one key or an error that
//! names the key and what was there. Stimuli, actions, backends and turn options are all
//! read through it, so every plist that comes from Emacs or an LLM fails the same way.

use super::{plist_get, SexpError, Value};

fn shape(msg: impl Into<String>) -> SexpError {
    SexpError::Shape(msg.into())
}

/// Typed access to the values of one plist, with errors that name the key.
pub struct Fields<'v> {
    plist: &'v Value,
    what: &'static str,
}

impl<'v> Fields<'v> {
    pub fn new(plist: &'v Value, what: &'static str) -> Result<Fields<'v>, SexpError> {
        if !(super::is_nil(plist) || matches!(plist, Value::Cons(_))) {
            return Err(shape(format!(
                "{what}: expected a plist, got {}",
                super::print(plist)
            )));
        }
        Ok(Fields { plist, what })
    }

    pub fn get(&self, key: &str) -> Option<&'v Value> {
        plist_get(self.plist, key).filter(|v| !super::is_nil(v))
    }

    pub fn keyword(&self, key: &str) -> Result<&'v str, SexpError> {
        match self.get(key) {
            Some(Value::Keyword(k)) => Ok(k),
            Some(other) => Err(shape(format!(
                "{}: :{key} must be a keyword, got {}",
                self.what,
                super::print(other)
            ))),
            None => Err(shape(format!("{}: :{key} is missing", self.what))),
        }
    }

    pub fn opt_string(&self, key: &str) -> Result<Option<String>, SexpError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.to_string())),
            Some(Value::Symbol(s)) => Ok(Some(s.to_string())),
            Some(other) => Err(shape(format!(
                "{}: :{key} must be a string, got {}",
                self.what,
                super::print(other)
            ))),
        }
    }

    pub fn string(&self, key: &str) -> Result<String, SexpError> {
        self.opt_string(key)?
            .ok_or_else(|| shape(format!("{}: :{key} is missing", self.what)))
    }

    pub fn strings(&self, key: &str) -> Result<Vec<String>, SexpError> {
        let mut out = Vec::new();
        let Some(list) = self.get(key) else {
            return Ok(out);
        };
        let mut cur = list;
        loop {
            match cur {
                Value::Cons(cell) => {
                    match cell.car() {
                        Value::String(s) | Value::Symbol(s) => out.push(s.to_string()),
                        other => {
                            return Err(shape(format!(
                                "{}: :{key} must be a list of strings, found {}",
                                self.what,
                                super::print(other)
                            )))
                        }
                    }
                    cur = cell.cdr();
                }
                v if super::is_nil(v) => return Ok(out),
                other => {
                    return Err(shape(format!(
                        "{}: :{key} must be a list of strings, got {}",
                        self.what,
                        super::print(other)
                    )))
                }
            }
        }
    }

    /// An alist `(("KEY" . "VALUE") …)` or a plist `(:key "value" …)`.
    pub fn pairs(&self, key: &str) -> Result<Vec<(String, String)>, SexpError> {
        let mut out = Vec::new();
        let Some(list) = self.get(key) else {
            return Ok(out);
        };
        let bad = |v: &Value| {
            shape(format!(
                "{}: :{key} must be an alist of strings or a plist, found {}",
                self.what,
                super::print(v)
            ))
        };
        let text = |v: &Value| match v {
            Value::String(s) | Value::Symbol(s) => Some(s.to_string()),
            Value::Keyword(k) => Some(k.to_uppercase()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        let mut cur = list;
        while let Value::Cons(cell) = cur {
            match cell.car() {
                Value::Cons(pair) => {
                    let k = text(pair.car()).ok_or_else(|| bad(pair.car()))?;
                    let v = match pair.cdr() {
                        Value::Cons(rest) => text(rest.car()),
                        other => text(other),
                    }
                    .ok_or_else(|| bad(pair.cdr()))?;
                    out.push((k, v));
                    cur = cell.cdr();
                }
                Value::Keyword(k) => {
                    let Value::Cons(rest) = cell.cdr() else {
                        return Err(bad(cell.car()));
                    };
                    let v = text(rest.car()).ok_or_else(|| bad(rest.car()))?;
                    out.push((k.to_uppercase(), v));
                    cur = rest.cdr();
                }
                other => return Err(bad(other)),
            }
        }
        if !super::is_nil(cur) {
            return Err(bad(cur));
        }
        Ok(out)
    }

    pub fn bool(&self, key: &str, default: bool) -> bool {
        match plist_get(self.plist, key) {
            None => default,
            Some(v) => !super::is_nil(v),
        }
    }

    /// A natural number (`None` when absent), or an error that names the key.
    pub fn natural(&self, key: &str) -> Result<Option<u32>, SexpError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|d| u32::try_from(d).ok())
                .map(Some)
                .ok_or_else(|| {
                    shape(format!(
                        "{}: :{key} must be a natural number, got {}",
                        self.what,
                        super::print(v)
                    ))
                }),
        }
    }

    /// An integer (`None` when absent).
    pub fn integer(&self, key: &str) -> Result<Option<i64>, SexpError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_i64().map(Some).ok_or_else(|| {
                shape(format!(
                    "{}: :{key} must be an integer, got {}",
                    self.what,
                    super::print(v)
                ))
            }),
        }
    }

    /// A number, integer or float (`None` when absent).
    pub fn number(&self, key: &str) -> Result<Option<f64>, SexpError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_f64().map(Some).ok_or_else(|| {
                shape(format!(
                    "{}: :{key} must be a number, got {}",
                    self.what,
                    super::print(v)
                ))
            }),
        }
    }

    /// A pair of numbers `(A . B)`, integers or floats (`None` when absent).
    pub fn number_pair(&self, key: &str) -> Result<Option<(f64, f64)>, SexpError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v {
            Value::Cons(pair) => match (pair.car().as_f64(), pair.cdr().as_f64()) {
                (Some(a), Some(b)) => Ok(Some((a, b))),
                _ => Err(self.not_a_pair(key, v)),
            },
            _ => Err(self.not_a_pair(key, v)),
        }
    }

    fn not_a_pair(&self, key: &str, v: &Value) -> SexpError {
        shape(format!(
            "{}: :{key} must be a pair of numbers (A . B), got {}",
            self.what,
            super::print(v)
        ))
    }

    /// A name given as a symbol, a keyword or a string, without a keyword's colon
    /// (`:type openai`, `:type :openai` and `:type "openai"` are the same).
    pub fn name(&self, key: &str) -> Result<Option<String>, SexpError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Symbol(s) | Value::String(s) | Value::Keyword(s)) => {
                Ok(Some(s.trim_start_matches(':').to_string()))
            }
            Some(other) => Err(shape(format!(
                "{}: :{key} must be a name, got {}",
                self.what,
                super::print(other)
            ))),
        }
    }

    /// The items of the list under `key` (empty when absent), or an error for a value that
    /// is not a proper list.
    pub fn list(&self, key: &str) -> Result<Vec<&'v Value>, SexpError> {
        let Some(list) = self.get(key) else {
            return Ok(Vec::new());
        };
        super::list_items(list).map_err(|tail| {
            shape(format!(
                "{}: :{key} must be a list, got {}",
                self.what,
                super::print(tail)
            ))
        })
    }

    /// Whether `key` is present with a non-nil value.
    pub fn flag(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_pair_takes_integers_and_floats_and_names_the_key() {
        let plist = crate::sexp::read("(:price (3 . 1.5) :list (3 15) :word x)").unwrap();
        let f = Fields::new(plist.value(), "backend").unwrap();
        assert_eq!(f.number_pair("price"), Ok(Some((3.0, 1.5))));
        assert_eq!(f.number_pair("absent"), Ok(None));
        assert_eq!(
            f.number_pair("list").unwrap_err().to_string(),
            "backend: :list must be a pair of numbers (A . B), got (3 15)"
        );
        assert_eq!(
            f.number_pair("word").unwrap_err().to_string(),
            "backend: :word must be a pair of numbers (A . B), got x"
        );
    }
}
