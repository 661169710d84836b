//! Lisp values ⇄ S-expressions, built directly through the module API (no printing and
//! reading in between). Both directions are bounded: nesting by [`MAX_DEPTH`] (recursion
//! follows nesting only, never list length) and total size by [`MAX_NODES`], which also
//! stops circular Lisp lists.

use super::org_agent_error;
use crate::sexp::{self, Value as Sexp};
use ::emacs::{Env, ErrorKind, IntoLisp, ModuleError, Result, RustError, Value};

/// Deepest nesting converted either way.
pub const MAX_DEPTH: usize = sexp::reader::MAX_DEPTH;
/// Most conses, vector slots and atoms converted from one Lisp value.
pub const MAX_NODES: usize = 1_000_000;

::emacs::use_functions! {
    lisp_type_of => "type-of"
    lisp_symbol_name => "symbol-name"
    lisp_list => "list"
    lisp_cons => "cons"
    lisp_vector => "vector"
    lisp_intern => "intern"
}

fn too_deep<T>(env: &Env) -> Result<T> {
    env.signal(
        org_agent_error,
        (format!(
            "S-expression nested deeper than {MAX_DEPTH} levels"
        ),),
    )
}

/// A Lisp value for `v`.
pub fn to_lisp<'e>(env: &'e Env, v: &Sexp) -> Result<Value<'e>> {
    to_lisp_at(env, v, 0)
}

fn to_lisp_at<'e>(env: &'e Env, v: &Sexp, depth: usize) -> Result<Value<'e>> {
    if depth > MAX_DEPTH {
        return too_deep(env);
    }
    Ok(match v {
        v if sexp::is_nil(v) => ().into_lisp(env)?,
        Sexp::Bool(true) => true.into_lisp(env)?,
        Sexp::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.into_lisp(env)?,
            (None, Some(f)) => f.into_lisp(env)?,
            _ => return env.signal(org_agent_error, ("number out of range",)),
        },
        Sexp::Char(c) => (*c as i64).into_lisp(env)?,
        Sexp::String(s) => text(env, s)?,
        Sexp::Symbol(name) => intern(env, name)?,
        Sexp::Keyword(name) => intern(env, &format!(":{name}"))?,
        Sexp::Bytes(bytes) => bytes.as_ref().into_lisp(env)?,
        Sexp::Vector(items) => {
            let mut out = Vec::with_capacity(items.len());
            for x in items.iter() {
                out.push(to_lisp_at(env, x, depth + 1)?);
            }
            lisp_vector.call(env, &out[..])?
        }
        Sexp::Cons(_) => {
            // Walk the spine iteratively; only elements recurse (one level deeper).
            let mut items = Vec::new();
            let mut cur = v;
            let tail = loop {
                match cur {
                    Sexp::Cons(cell) => {
                        items.push(to_lisp_at(env, cell.car(), depth + 1)?);
                        cur = cell.cdr();
                    }
                    end if sexp::is_nil(end) => break None,
                    end => break Some(to_lisp_at(env, end, depth + 1)?),
                }
            };
            match tail {
                None => lisp_list.call(env, &items[..])?,
                Some(t) => {
                    let mut acc = t;
                    for x in items.into_iter().rev() {
                        acc = lisp_cons.call(env, (x, acc))?;
                    }
                    acc
                }
            }
        }
        _ => ().into_lisp(env)?,
    })
}

/// A Lisp string of `s`. Emacs 28's `make_string` makes a second, throwaway string while
/// it decodes UTF-8, two strings for one (and every streamed piece of an answer is such a
/// string); ASCII text is made unibyte directly instead, as the Lisp reader makes it
/// (`equal`, `string=`, `insert`, `concat` and hashing see no difference).
pub fn text<'e>(env: &'e Env, s: &str) -> Result<Value<'e>> {
    if s.is_ascii() {
        s.as_bytes().into_lisp(env)
    } else {
        s.into_lisp(env)
    }
}

/// The symbol named `name`. The module API's `intern` finds a symbol that exists without
/// making a Lisp string of its name, as calling `intern` does: an event's keys and kinds then
/// cost Emacs no garbage, which a stream draining ten events a second would otherwise make.
/// It reads the name as ASCII, so other names, and names it cannot take (a NUL), go the
/// long way.
fn intern<'e>(env: &'e Env, name: &str) -> Result<Value<'e>> {
    if name.is_ascii() && !name.contains('\0') {
        env.intern(name)
    } else {
        lisp_intern.call(env, (name,))
    }
}

/// An S-expression for the Lisp value `v`.
pub fn from_lisp(env: &Env, v: Value) -> Result<sexp::Sexp> {
    let mut budget = MAX_NODES;
    from_lisp_at(env, v, 0, &mut budget).map(sexp::Sexp::from)
}

fn spend(env: &Env, budget: &mut usize) -> Result<()> {
    if *budget == 0 {
        return env.signal(
            org_agent_error,
            (format!(
                "Lisp value too large (over {MAX_NODES} parts) or circular"
            ),),
        );
    }
    *budget -= 1;
    Ok(())
}

fn from_lisp_at(env: &Env, v: Value, depth: usize, budget: &mut usize) -> Result<Sexp> {
    if depth > MAX_DEPTH {
        return too_deep(env);
    }
    spend(env, budget)?;
    if !v.is_not_nil() {
        return Ok(Sexp::Nil);
    }
    let ty: String = lisp_symbol_name
        .call(env, (lisp_type_of.call(env, (v,))?,))?
        .into_rust()?;
    Ok(match ty.as_str() {
        "integer" => Sexp::from(v.into_rust::<i64>()?),
        "float" => Sexp::from(v.into_rust::<f64>()?),
        "string" => Sexp::string(text_arg(env, v)?),
        "symbol" => {
            let name: String = lisp_symbol_name.call(env, (v,))?.into_rust()?;
            match (name.as_str(), name.strip_prefix(':')) {
                ("t", _) => Sexp::Bool(true),
                (_, Some(k)) if !k.is_empty() => Sexp::keyword(k.to_lowercase()),
                _ => Sexp::symbol(name),
            }
        }
        "cons" => {
            let mut items: Vec<Sexp> = Vec::new();
            let mut cur = v;
            let tail = loop {
                spend(env, budget)?;
                items.push(from_lisp_at(env, cur.car()?, depth + 1, budget)?);
                let next: Value = cur.cdr()?;
                if !next.is_not_nil() {
                    break None;
                }
                let next_ty: String = lisp_symbol_name
                    .call(env, (lisp_type_of.call(env, (next,))?,))?
                    .into_rust()?;
                if next_ty != "cons" {
                    break Some(from_lisp_at(env, next, depth + 1, budget)?);
                }
                cur = next;
            };
            match tail {
                None => Sexp::list(items),
                Some(t) => Sexp::append(items, t),
            }
        }
        "vector" => {
            let vector: ::emacs::Vector = v.into_rust()?;
            let mut items = Vec::with_capacity(vector.len());
            for i in 0..vector.len() {
                items.push(from_lisp_at(env, vector.get(i)?, depth + 1, budget)?);
            }
            Sexp::vector(items)
        }
        other => {
            return env.signal(
                org_agent_error,
                (format!("cannot pass a Lisp {other} as an S-expression"),),
            )
        }
    })
}

/// Whether `e` is the module API refusing a string that is not Unicode (a multibyte string
/// with raw bytes), or a unibyte string whose bytes are not UTF-8.
pub(super) fn is_non_unicode(e: &::emacs::Error) -> bool {
    matches!(
        e.downcast_ref::<ErrorKind>(),
        Some(
            ErrorKind::Module(ModuleError::NonUnicodeString { .. })
                | ErrorKind::Rust(RustError::InvalidUtf8 { .. })
        )
    )
}

/// The bytes of the Lisp string `v` encoded with `coding`. The module API only hands over
/// Unicode text, so they cross as base64; every step is one C primitive (or plain Rust), so
/// this stays linear and cheap on the main thread.
pub(super) fn encoded_bytes(env: &Env, v: Value, coding: Value) -> Result<Vec<u8>> {
    use base64::Engine;
    let encoded = env.call("encode-coding-string", (v, coding, true))?;
    let b64: String = env
        .call("base64-encode-string", (encoded, true))?
        .into_rust()?;
    match base64::engine::general_purpose::STANDARD.decode(b64) {
        Ok(bytes) => Ok(bytes),
        Err(e) => env.signal(org_agent_error, (format!("cannot take the text: {e}"),)),
    }
}

/// A string argument as text. Emacs may hold text the module API refuses: raw bytes
/// (undecodable input, one character each) and characters beyond Unicode. Such text is taken
/// through its UTF-8 encoding, each of those characters becoming one U+FFFD, so buffer
/// positions still agree (see [`crate::store::text::from_emacs_utf8`]).
pub fn text_arg(env: &Env, v: Value) -> Result<String> {
    match v.into_rust::<String>() {
        Err(e) if is_non_unicode(&e) => {
            let bytes = encoded_bytes(env, v, env.intern("utf-8-unix")?)?;
            Ok(crate::store::text::from_emacs_utf8(&bytes))
        }
        other => other,
    }
}
