//! S-expressions: the plist values that LLM proposals, stimuli and Emacs actions are made of.
//!
//! [`Sexp`] wraps a `lexpr::Value`. It exists for two guards `lexpr` lacks: values come in
//! only through the [guarded reader](reader), and are dropped iteratively — `lexpr` drops a
//! list recursively, one stack frame per element, and overflows (aborting Emacs) on a flat
//! list of ~32,000 elements. The [printer](printer) writes text Emacs `read`s back to the
//! same value.

pub mod fields;
pub mod json;
pub mod printer;
pub mod reader;

pub use lexpr::Value;
pub use printer::print;
pub use reader::{read, read_all};

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SexpError {
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("input too large: {bytes} bytes (at most {max})")]
    TooLarge { bytes: usize, max: usize },
    #[error("no S-expression in the input")]
    Empty,
    #[error("more than one S-expression in the input")]
    Trailing,
    #[error("{0}")]
    Shape(String),
}

/// An owned S-expression value. Dropping it never recurses.
pub struct Sexp(Option<Value>);

impl From<Value> for Sexp {
    fn from(v: Value) -> Sexp {
        Sexp(Some(v))
    }
}

impl Drop for Sexp {
    fn drop(&mut self) {
        if let Some(v) = self.0.take() {
            drop_iteratively(v);
        }
    }
}

impl std::fmt::Debug for Sexp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&print(self.value()))
    }
}

impl Clone for Sexp {
    fn clone(&self) -> Sexp {
        Sexp::from(clone_value(self.value()))
    }
}

impl PartialEq for Sexp {
    fn eq(&self, other: &Sexp) -> bool {
        equal(self.value(), other.value())
    }
}

/// Dismantle `v` with an explicit stack, so that no drop recurses deeper than one level.
pub fn drop_iteratively(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Cons(cell) => {
                let (car, cdr) = cell.into_pair();
                stack.push(car);
                stack.push(cdr);
            }
            Value::Vector(items) => stack.extend(items.into_vec()),
            _ => {}
        }
    }
}

/// A copy of `v` that walks lists iteratively (`lexpr`'s derived `clone` recurses along a
/// list, one frame per element); only nesting recurses, and that is capped by the reader.
pub fn clone_value(v: &Value) -> Value {
    match v {
        Value::Cons(_) => {
            let mut items = Vec::new();
            let mut cur = v;
            while let Value::Cons(cell) = cur {
                items.push(clone_value(cell.car()));
                cur = cell.cdr();
            }
            if is_nil(cur) {
                Value::list(items)
            } else {
                Value::append(items, clone_value(cur))
            }
        }
        Value::Vector(items) => Value::vector(items.iter().map(clone_value).collect::<Vec<_>>()),
        atom => atom.clone(),
    }
}

/// Structural equality without recursion (`lexpr`'s derived `==` recurses along lists).
/// Floats compare by their bits; `nil`, `()` and `#f` are the same, and a character equals
/// its code, as in Emacs.
pub fn equal(a: &Value, b: &Value) -> bool {
    let mut stack = vec![(a, b)];
    while let Some((a, b)) = stack.pop() {
        match (a, b) {
            (Value::Cons(x), Value::Cons(y)) => {
                stack.push((x.car(), y.car()));
                stack.push((x.cdr(), y.cdr()));
            }
            (Value::Vector(x), Value::Vector(y)) => {
                if x.len() != y.len() {
                    return false;
                }
                stack.extend(x.iter().zip(y.iter()));
            }
            (x, y) if is_nil(x) && is_nil(y) => {}
            // Emacs characters are integers: ?A is 65.
            (Value::Char(c), Value::Number(n)) | (Value::Number(n), Value::Char(c)) => {
                if n.as_i64() != Some(*c as i64) {
                    return false;
                }
            }
            (Value::Number(x), Value::Number(y)) => {
                // Floats as Emacs' `equal` compares them: the same bits (`-0.0` is not `0.0`,
                // a NaN is itself); integers exactly, past `i64::MAX` too.
                let same = if x.is_f64() || y.is_f64() {
                    let bits =
                        |n: &lexpr::Number| n.as_f64().filter(|_| n.is_f64()).map(f64::to_bits);
                    bits(x).is_some() && bits(x) == bits(y)
                } else {
                    match (x.as_i64(), y.as_i64()) {
                        (Some(i), Some(j)) => i == j,
                        _ => x.as_u64().is_some() && x.as_u64() == y.as_u64(),
                    }
                };
                if !same {
                    return false;
                }
            }
            (Value::Cons(_) | Value::Vector(_), _) | (_, Value::Cons(_) | Value::Vector(_)) => {
                return false
            }
            (x, y) => {
                if x != y {
                    return false;
                }
            }
        }
    }
    true
}

/// Whether `v` is what Emacs calls `nil`.
pub fn is_nil(v: &Value) -> bool {
    matches!(v, Value::Nil | Value::Null | Value::Bool(false))
        || matches!(v, Value::Symbol(s) if &**s == "nil")
}

impl Sexp {
    pub fn value(&self) -> &Value {
        // Only `drop` takes the value out.
        self.0.as_ref().unwrap_or(&Value::Nil)
    }

    /// The value, to change it in place (`None` only while it is being dropped).
    pub fn value_mut(&mut self) -> Option<&mut Value> {
        self.0.as_mut()
    }

    /// The value after `key` (a keyword name without the colon, lowercase) in a plist.
    pub fn get(&self, key: &str) -> Option<&Value> {
        plist_get(self.value(), key)
    }

    /// The keys of a plist, in order; an error if the value is not a proper plist.
    pub fn plist_keys(&self) -> Result<Vec<&str>, SexpError> {
        let mut keys = Vec::new();
        let mut cur = self.value();
        loop {
            match cur {
                v if is_nil(v) => return Ok(keys),
                Value::Cons(cell) => {
                    let Value::Keyword(k) = cell.car() else {
                        return Err(SexpError::Shape(format!(
                            "expected a keyword in a plist, found {}",
                            print(cell.car())
                        )));
                    };
                    let Value::Cons(rest) = cell.cdr() else {
                        return Err(SexpError::Shape(format!("plist key :{k} has no value")));
                    };
                    keys.push(&**k);
                    cur = rest.cdr();
                }
                other => {
                    return Err(SexpError::Shape(format!(
                        "expected a plist, found {}",
                        print(other)
                    )))
                }
            }
        }
    }
}

/// The items of the proper list `v` (none for nil), or the tail that ends it when it is
/// not a proper list (`v` itself for an atom).
pub fn list_items(v: &Value) -> Result<Vec<&Value>, &Value> {
    let mut out = Vec::new();
    let mut cur = v;
    while let Value::Cons(cell) = cur {
        out.push(cell.car());
        cur = cell.cdr();
    }
    if is_nil(cur) {
        Ok(out)
    } else {
        Err(cur)
    }
}

/// `plist-get` over a `lexpr` value: the value after keyword `key`.
pub fn plist_get<'v>(plist: &'v Value, key: &str) -> Option<&'v Value> {
    let mut cur = plist;
    while let Value::Cons(cell) = cur {
        let Value::Cons(rest) = cell.cdr() else {
            return None;
        };
        if matches!(cell.car(), Value::Keyword(k) if &**k == key) {
            return Some(rest.car());
        }
        cur = rest.cdr();
    }
    None
}

#[cfg(test)]
mod tests;
