//! Printing values as Emacs Lisp read syntax, without recursion.
//!
//! `lexpr`'s own printer recurses per nesting level and does not escape symbols the way
//! Emacs reads them; this one walks with an explicit stack and escapes so that `read` in
//! Emacs gives back the same value.

use super::is_nil;
use lexpr::Value;

enum Item<'a> {
    Value(&'a Value),
    Text(&'static str),
    /// The rest of a list whose first element was printed.
    ListRest(&'a Value),
}

/// Print `v` as Emacs Lisp read syntax.
pub fn print(v: &Value) -> String {
    let mut out = String::new();
    let mut stack = vec![Item::Value(v)];
    while let Some(item) = stack.pop() {
        match item {
            Item::Text(s) => out.push_str(s),
            Item::ListRest(rest) => match rest {
                Value::Cons(cell) => {
                    out.push(' ');
                    stack.push(Item::ListRest(cell.cdr()));
                    stack.push(Item::Value(cell.car()));
                }
                v if is_nil(v) => out.push(')'),
                other => {
                    out.push_str(" . ");
                    stack.push(Item::Text(")"));
                    stack.push(Item::Value(other));
                }
            },
            Item::Value(v) => match v {
                Value::Cons(cell) => {
                    out.push('(');
                    stack.push(Item::ListRest(cell.cdr()));
                    stack.push(Item::Value(cell.car()));
                }
                Value::Vector(items) => {
                    out.push('[');
                    stack.push(Item::Text("]"));
                    for (i, x) in items.iter().enumerate().rev() {
                        stack.push(Item::Value(x));
                        if i > 0 {
                            stack.push(Item::Text(" "));
                        }
                    }
                }
                atom => print_atom(&mut out, atom),
            },
        }
    }
    out
}

fn print_atom(out: &mut String, v: &Value) {
    match v {
        Value::Bool(true) => out.push('t'),
        v if is_nil(v) => out.push_str("nil"),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&i.to_string());
            } else if let Some(u) = n.as_u64() {
                out.push_str(&u.to_string());
            } else {
                out.push_str(&float(n.as_f64().unwrap_or(0.0)));
            }
        }
        Value::Char(c) => {
            out.push('?');
            if c.is_ascii_alphanumeric() {
                out.push(*c);
            } else {
                push_unicode_escape(out, *c);
            }
        }
        Value::Symbol(name) => symbol(out, name),
        Value::Keyword(name) => {
            out.push(':');
            // `:` alone is the keyword with an empty name, not `:##`.
            if !name.is_empty() {
                symbol(out, name);
            }
        }
        Value::String(s) => string(out, s),
        Value::Bytes(bytes) => {
            out.push('"');
            for &b in bytes.iter() {
                match b {
                    b'"' => out.push_str("\\\""),
                    b'\\' => out.push_str("\\\\"),
                    0x20..=0x7e => out.push(b as char),
                    // Octal escapes keep the string unibyte in Emacs.
                    _ => out.push_str(&format!("\\{b:03o}")),
                }
            }
            out.push('"');
        }
        // Lists and vectors are printed by the caller; nothing else exists.
        _ => out.push_str("nil"),
    }
}

/// A float as Emacs prints and reads it.
fn float(f: f64) -> String {
    if f.is_nan() {
        "0.0e+NaN".to_string()
    } else if f.is_infinite() {
        if f > 0.0 { "1.0e+INF" } else { "-1.0e+INF" }.to_string()
    } else {
        // Debug formatting always marks a float as one ("1.0", "1e300"), and Emacs reads both.
        format!("{f:?}")
    }
}

fn push_unicode_escape(out: &mut String, c: char) {
    let code = c as u32;
    if code <= 0xFFFF {
        out.push_str(&format!("\\u{code:04X}"));
    } else {
        out.push_str(&format!("\\U{code:08X}"));
    }
}

fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => push_unicode_escape(out, c),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn symbol(out: &mut String, name: &str) {
    if name.is_empty() {
        out.push_str("##");
        return;
    }
    // Emacs would read these bare as a number, a dotted pair's dot or a character.
    if super::reader::is_number_syntax(name) || name == "." || name.starts_with('?') {
        out.push('\\');
    }
    for (i, c) in name.chars().enumerate() {
        let special = c <= ' '
            || c == '\u{a0}'
            || c.is_control()
            || matches!(
                c,
                '(' | ')' | '[' | ']' | '"' | '\'' | ';' | '`' | ',' | '#' | '\\'
            )
            || (i > 0 && c == '?');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
}
