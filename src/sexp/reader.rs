//! The guarded reader: untrusted text (LLM output, skill files) → [`Sexp`].
//!
//! `lexpr` parses recursively and overflows the stack on deep nesting and on long runs of
//! quote characters (about 9,000 `'` in 0.2.7), and a stack overflow aborts Emacs. So every
//! input is first scanned here, without recursion: size, nesting depth (quotes count as a
//! level, since each becomes `(quote …)`) and quote runs are capped, every `#` reader macro
//! (`#.` evaluates code at read time in Emacs) is refused, and keywords are lowercased so
//! `:TYPE` and `:type` are the same key. Only then does `lexpr` see the text.
//!
//! Atoms `lexpr` would read differently from Emacs never reach it as written: every float
//! (`lexpr` rounds some differently, and reads `.5` as a symbol) and every symbol `lexpr`
//! would split or refuse (`1+`, `1.5.2`, `é`, `{x}`) goes through as a placeholder symbol
//! and is put back, as Emacs reads it, once `lexpr` has built the structure.

use super::{Sexp, SexpError, Value};

/// Largest input read, in bytes.
pub const MAX_INPUT: usize = 1 << 20;
/// Deepest nesting of lists, vectors and quotes.
pub const MAX_DEPTH: usize = 64;
/// Longest run of quote characters (`'`, `` ` ``, `,`, `,@`) before one datum.
pub const MAX_QUOTE_RUN: usize = 16;

/// The symbol that stands for an atom taken out of the text; it starts with a letter so
/// `lexpr` reads it as a symbol, and it is not plain (see [`is_plain_symbol`]), so a user's
/// symbol of that name is itself taken out and cannot be confused with it.
const PLACEHOLDER: &str = "oa\u{E000}";

/// An atom taken out of the text, in the order of the text.
#[derive(Debug)]
enum Atom {
    Float(f64),
    Symbol(String),
    Keyword(String),
    Char(char),
    /// A character code that is not a Unicode scalar (modifier bits, surrogates).
    Integer(i64),
}

/// The guarded text for `lexpr` and the atoms its placeholders stand for.
struct Guarded {
    text: String,
    atoms: Vec<Atom>,
    /// A backquote or comma was read: `lexpr` names them `quasiquote`, `unquote` and
    /// `unquote-splicing`, Emacs `` ` ``, `,` and `,@`.
    backquotes: bool,
}

/// `lexpr`'s names for what Emacs reads `` ` ``, `,` and `,@` as.
const BACKQUOTES: [(&str, &str); 3] = [
    ("quasiquote", "`"),
    ("unquote", ","),
    ("unquote-splicing", ",@"),
];

fn at(kind: &str, line: usize, column: usize) -> SexpError {
    SexpError::Syntax {
        line,
        column,
        message: kind.to_string(),
    }
}

/// Scan `input` and return it with keywords lowercased, or the first problem found.
fn guard(input: &str) -> Result<Guarded, SexpError> {
    if input.len() > MAX_INPUT {
        return Err(SexpError::TooLarge {
            bytes: input.len(),
            max: MAX_INPUT,
        });
    }
    let mut out = String::with_capacity(input.len());
    let mut atoms = Vec::new();
    let mut backquotes = false;
    // The token had a backslash: it is a symbol (or keyword) whatever it looks like.
    let mut escaped = false;
    // Where the last lone `.` was written: Emacs reads it as a symbol when a closing
    // bracket follows (`(a .)`), where `lexpr` expects a dotted pair's tail.
    let mut pending_dot: Option<usize> = None;
    // Levels each open list/vector added (itself plus the quotes before it), and their sum.
    let mut open: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut quote_run = 0usize;
    let (mut line, mut column) = (1usize, 0usize);
    let mut chars = input.chars().peekable();
    // Are we at the start of a token (so `:` begins a keyword and `?` a character)?
    let mut token_start = true;
    let mut in_keyword = false;
    // The symbol or number being read, flushed (normalised) at its end.
    let mut token = String::new();
    // Where it started, for errors about it.
    let mut token_at = (1usize, 0usize);

    macro_rules! advance {
        ($c:expr) => {{
            if $c == '\n' {
                line += 1;
                column = 0;
            } else {
                column += 1;
            }
        }};
    }

    while let Some(c) = chars.next() {
        advance!(c);
        if !token.is_empty() && !is_constituent(c) {
            if !escaped && token == "." {
                pending_dot = Some(out.len());
            }
            flush_token(&mut out, &mut token, &mut atoms, escaped, in_keyword)
                .map_err(|m| at(&m, token_at.0, token_at.1))?;
            // `lexpr` runs a symbol on into a `"` (`:a"b"` would be one keyword).
            out.push(' ');
            escaped = false;
        }
        if !(is_space(c) || c == ';' || matches!(c, ')' | ']')) {
            pending_dot = None;
        }
        match c {
            ';' => {
                // A comment runs to the end of the line.
                out.push(c);
                for c in chars.by_ref() {
                    advance!(c);
                    out.push(c);
                    if c == '\n' {
                        break;
                    }
                }
                token_start = true;
                in_keyword = false;
            }
            c if is_space(c) => {
                // `lexpr` knows only ASCII whitespace; Emacs also skips control characters
                // and no-break spaces between atoms.
                out.push(if matches!(c, '\n' | '\r' | '\t') {
                    c
                } else {
                    ' '
                });
                token_start = true;
                in_keyword = false;
            }
            '"' => {
                let start = (line, column);
                out.push(c);
                let mut closed = false;
                while let Some(c) = chars.next() {
                    advance!(c);
                    match c {
                        '\\' => {
                            let Some(e) = chars.next() else { break };
                            advance!(e);
                            string_escape(&mut out, e, &mut chars, &mut column)
                                .map_err(|m| at(m, line, column))?;
                        }
                        '"' => {
                            out.push(c);
                            closed = true;
                            break;
                        }
                        c => out.push(c),
                    }
                }
                if !closed {
                    return Err(at("unterminated string", start.0, start.1));
                }
                quote_run = 0;
                token_start = true;
                in_keyword = false;
            }
            '(' | '[' => {
                open.push(1 + quote_run);
                depth += 1 + quote_run;
                quote_run = 0;
                if depth > MAX_DEPTH {
                    return Err(at(
                        &format!("nested more than {MAX_DEPTH} levels deep"),
                        line,
                        column,
                    ));
                }
                out.push(c);
                token_start = true;
                in_keyword = false;
            }
            ')' | ']' => {
                if let Some(at_dot) = pending_dot.take() {
                    out.replace_range(at_dot..at_dot + 1, PLACEHOLDER);
                    atoms.push(Atom::Symbol(".".into()));
                }
                let Some(levels) = open.pop() else {
                    return Err(at(&format!("unbalanced `{c}'"), line, column));
                };
                if quote_run > 0 {
                    return Err(at(&format!("a quote before `{c}'"), line, column));
                }
                depth -= levels;
                out.push(c);
                token_start = true;
                in_keyword = false;
            }
            '\'' | '`' | ',' => {
                if !token_start {
                    // Inside a symbol these are plain constituents in lexpr's eyes; refuse
                    // the ambiguity instead.
                    return Err(at(&format!("`{c}' inside a symbol"), line, column));
                }
                quote_run += 1;
                backquotes |= c != '\'';
                if c == ',' && chars.peek() == Some(&'@') {
                    if let Some(a) = chars.next() {
                        advance!(a);
                        out.push(c);
                        out.push(a);
                        if quote_run > MAX_QUOTE_RUN || depth + quote_run > MAX_DEPTH {
                            return Err(at("too many quote characters in a row", line, column));
                        }
                        continue;
                    }
                }
                if quote_run > MAX_QUOTE_RUN || depth + quote_run > MAX_DEPTH {
                    return Err(at("too many quote characters in a row", line, column));
                }
                out.push(c);
            }
            // Emacs ends a symbol at `#` and reads a reader macro from there on.
            '#' => {
                let next = chars.peek().copied().unwrap_or(' ');
                return Err(at(
                    &format!("reader macro `#{next}' is not allowed"),
                    line,
                    column,
                ));
            }
            '?' if token_start => {
                let start = (line, column);
                let atom = char_literal(&mut chars, &mut line, &mut column)
                    .map_err(|m| at(m, start.0, start.1))?;
                // Emacs wants a delimiter after a character literal (`?ab` is an error).
                if let Some(&next) = chars.peek() {
                    if !(is_space(next) || "\"';()[]#?`,.".contains(next)) {
                        return Err(at("invalid character literal", start.0, start.1));
                    }
                }
                out.push_str(PLACEHOLDER);
                // The literal is a whole atom: what follows (`?a?b`) starts another.
                out.push(' ');
                atoms.push(atom);
                quote_run = 0;
                token_start = true;
                in_keyword = false;
            }
            '\\' => {
                // An escaped character: part of a symbol's name, whatever it is.
                let Some(e) = chars.next() else {
                    return Err(at("unexpected end of input after `\\'", line, column));
                };
                advance!(e);
                if token.is_empty() {
                    token_at = (line, column);
                }
                if token_start && e == ':' {
                    // Emacs interns `\:a` as `:a`, the keyword: a name that starts with a
                    // colon is a keyword however the colon was written.
                    token.push(e);
                    in_keyword = true;
                } else if in_keyword {
                    token.extend(e.to_lowercase());
                } else {
                    token.push(e);
                }
                escaped = true;
                if token_start {
                    quote_run = 0;
                }
                token_start = false;
            }
            ':' if token_start => {
                token_at = (line, column);
                token.push(c);
                in_keyword = true;
                quote_run = 0;
                token_start = false;
            }
            c => {
                if token.is_empty() {
                    token_at = (line, column);
                }
                if in_keyword {
                    token.extend(c.to_lowercase());
                } else {
                    token.push(c);
                }
                if token_start {
                    quote_run = 0;
                }
                token_start = false;
            }
        }
    }
    flush_token(&mut out, &mut token, &mut atoms, escaped, in_keyword)
        .map_err(|m| at(&m, token_at.0, token_at.1))?;
    if depth > 0 {
        return Err(at("unexpected end of input: unclosed list", line, column));
    }
    if quote_run > 0 {
        return Err(at("unexpected end of input after a quote", line, column));
    }
    Ok(Guarded {
        text: out,
        atoms,
        backquotes,
    })
}

/// Rewrite the string escape that follows a backslash into one `lexpr` reads the same way
/// Emacs reads the original: octal `\\11`, hex `\\x41`, `\\^I`, `\\s`, `\\d`, `\\e`; and drop
/// the escapes Emacs ignores (backslash-newline, backslash-space).
fn string_escape(
    out: &mut String,
    e: char,
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    column: &mut usize,
) -> Result<(), &'static str> {
    let mut code = |value: u32| match char::from_u32(value) {
        Some(c) if !c.is_control() && c != '"' && c != '\\' => {
            out.push(c);
            Ok(())
        }
        Some(c) => {
            out.push_str(&format!("\\u{:04X}", c as u32));
            Ok(())
        }
        None => Err("invalid character code in a string escape"),
    };
    match e {
        '0'..='7' => {
            let mut value = e.to_digit(8).unwrap_or(0);
            for _ in 0..2 {
                match chars.peek().and_then(|c| c.to_digit(8)) {
                    Some(d) => {
                        value = value * 8 + d;
                        chars.next();
                        *column += 1;
                    }
                    None => break,
                }
            }
            code(value)
        }
        'x' => {
            let mut value: u32 = 0;
            let mut n = 0;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(16)) {
                value = value
                    .checked_mul(16)
                    .and_then(|v| v.checked_add(d))
                    .ok_or("escape too large")?;
                chars.next();
                *column += 1;
                n += 1;
            }
            if n == 0 {
                return Err("`\\x' without hex digits");
            }
            code(value)
        }
        '^' => {
            let c = chars.next().ok_or("unfinished `\\^' escape")?;
            *column += 1;
            code(if c == '?' { 127 } else { (c as u32) & 0x1f })
        }
        's' => code(' ' as u32),
        'd' => code(127),
        'e' => code(27),
        '\n' | ' ' => Ok(()),
        other => {
            out.push('\\');
            out.push(other);
            Ok(())
        }
    }
}

/// The character literal after a `?`, as Emacs reads it: `?a`, `?(`, `?\\n`, `?\\(`, `?\\^I`,
/// `?\\C-a`, `?\\M-a` (modifier bits make it an integer), `?\\x41`, `?\\101`, `?\\u00e9`.
fn char_literal(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    line: &mut usize,
    column: &mut usize,
) -> Result<Atom, &'static str> {
    type Chars<'a, 'b> = &'a mut std::iter::Peekable<std::str::Chars<'b>>;
    fn step(chars: Chars<'_, '_>, line: &mut usize, column: &mut usize) -> Option<char> {
        let c = chars.next()?;
        if c == '\n' {
            *line += 1;
            *column = 0;
        } else {
            *column += 1;
        }
        Some(c)
    }
    macro_rules! next {
        () => {
            step(chars, line, column)
        };
    }
    const META: i64 = 1 << 27;
    const CTRL: i64 = 1 << 26;
    let mut modifiers = 0i64;
    let mut control = false;
    let base: i64 = loop {
        let c = next!().ok_or("unexpected end of input after `?'")?;
        if c != '\\' {
            break c as i64;
        }
        let e = next!().ok_or("unexpected end of input after `?\\'")?;
        let bit = match e {
            'M' => Some(META),
            'S' => Some(1 << 25),
            'H' => Some(1 << 24),
            's' => Some(1 << 23),
            'A' => Some(1 << 22),
            'C' => Some(0),
            _ => None,
        };
        let value = match (bit, e) {
            (Some(bit), _) if chars.peek() == Some(&'-') => {
                next!();
                if e == 'C' {
                    control = true;
                } else {
                    modifiers |= bit;
                }
                continue;
            }
            (_, '^') => {
                control = true;
                continue;
            }
            (_, 'a') => 7,
            (_, 'b') => 8,
            (_, 't') => 9,
            (_, 'n') => 10,
            (_, 'v') => 11,
            (_, 'f') => 12,
            (_, 'r') => 13,
            (_, 'e') => 27,
            (_, 's') => 32,
            (_, 'd') => 127,
            (_, 'x' | 'u' | 'U') => {
                let max = match e {
                    'u' => 4,
                    'U' => 8,
                    _ => usize::MAX,
                };
                let mut v: i64 = 0;
                let mut n = 0;
                while n < max {
                    let Some(d) = chars.peek().and_then(|c| c.to_digit(16)) else {
                        break;
                    };
                    next!();
                    v = v.checked_mul(16).ok_or("character code too large")? + i64::from(d);
                    if v > 0x3F_FFFF {
                        return Err("character code too large");
                    }
                    n += 1;
                }
                if n == 0 || (e != 'x' && n != max) {
                    return Err("invalid character escape");
                }
                v
            }
            (_, '0'..='7') => {
                let mut v = i64::from(e.to_digit(8).unwrap_or(0));
                for _ in 0..2 {
                    let Some(d) = chars.peek().and_then(|c| c.to_digit(8)) else {
                        break;
                    };
                    next!();
                    v = v * 8 + i64::from(d);
                }
                v
            }
            (_, 'N') => return Err("named character escapes are not supported"),
            (_, other) => other as i64,
        };
        break value;
    };
    let mut code = base;
    if control {
        code = match code {
            0x3F => 127,
            0x40..=0x5F | 0x61..=0x7A => code & 0x1F,
            0x60 => 0,
            _ => code | CTRL,
        };
    }
    code |= modifiers;
    Ok(match u32::try_from(code).ok().and_then(char::from_u32) {
        Some(c) => Atom::Char(c),
        None => Atom::Integer(code),
    })
}

/// Characters Emacs skips between atoms: control characters, space and no-break space.
fn is_space(c: char) -> bool {
    c <= ' ' || c == '\u{a0}'
}

/// Characters that continue a symbol or number token (`#` ends one in Emacs too).
fn is_constituent(c: char) -> bool {
    !(is_space(c)
        || matches!(
            c,
            '(' | ')' | '[' | ']' | '"' | ';' | '\'' | '`' | ',' | '#'
        ))
}

/// How Emacs reads a token that is not a keyword (`string_to_number` in lread.c, base 10).
#[derive(Debug, PartialEq)]
enum Number<'t> {
    /// An integer: its optional `-` and its digits.
    Integer { negative: bool, digits: &'t str },
    /// A float, with the text Rust parses to the same value Emacs' `strtod` gives.
    Float(String),
    /// `…e+INF` or `…e+NaN`.
    NonFinite,
}

/// The number `t` is in Emacs' eyes, or `None` when Emacs reads it as a symbol. Emacs takes
/// a token as a number only when the number syntax covers all of it: an optional sign,
/// digits, an optional point, digits, and an optional exponent (`e`, an optional sign,
/// digits; or `e+INF` / `e+NaN`); a point without digits after it leaves an integer (`1.`),
/// and without digits before it needs digits after it (`.5`).
fn emacs_number(t: &str) -> Option<Number<'_>> {
    let b = t.as_bytes();
    let digits_from = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let negative = b.first() == Some(&b'-');
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let lead = (i, digits_from(i));
    i = lead.1;
    let dot = b.get(i) == Some(&b'.');
    i += usize::from(dot);
    let trail = (i, digits_from(i));
    i = trail.1;
    let has_lead = lead.1 > lead.0;
    let has_trail = trail.1 > trail.0;
    let mut exponent = None;
    let mut non_finite = false;
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let sign = matches!(b.get(i + 1), Some(b'+' | b'-'));
        let e_digits = (
            i + 1 + usize::from(sign),
            digits_from(i + 1 + usize::from(sign)),
        );
        if e_digits.1 > e_digits.0 {
            exponent = Some(&t[i + 1..e_digits.1]);
            i = e_digits.1;
        } else if b.get(i + 1) == Some(&b'+') && matches!(&t[i + 2..], "INF" | "NaN") {
            non_finite = true;
            i = b.len();
        }
    }
    if i != b.len() {
        return None;
    }
    let float = has_trail || (has_lead && (exponent.is_some() || non_finite));
    if float {
        if non_finite {
            return Some(Number::NonFinite);
        }
        let part = |r: (usize, usize)| if r.1 > r.0 { &t[r.0..r.1] } else { "0" };
        let sign = if negative { "-" } else { "" };
        return Some(Number::Float(format!(
            "{sign}{}.{}e{}",
            part(lead),
            part(trail),
            exponent.unwrap_or("0")
        )));
    }
    if has_lead && exponent.is_none() && !non_finite {
        return Some(Number::Integer {
            negative,
            digits: &t[lead.0..lead.1],
        });
    }
    None
}

/// Whether Emacs reads `t`, written bare, as a number (so a symbol of that name is printed
/// with a backslash).
pub(crate) fn is_number_syntax(t: &str) -> bool {
    emacs_number(t).is_some()
}

/// Symbols `lexpr` reads as Emacs does: ASCII names it does not take for a number, a dotted
/// pair's dot, a sign or a `#` syntax.
fn is_plain_symbol(t: &str) -> bool {
    const EXTENDED: &[u8] = b"!$%&*/:<=>?@^_~";
    let b = t.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || EXTENDED.contains(c) || b"+-.".contains(c);
    let Some(first) = b.first() else {
        return false;
    };
    let starts_well = match first {
        c if c.is_ascii_alphabetic() || EXTENDED.contains(c) => true,
        // `lexpr` reads a sign followed by anything but a letter or another sign-subsequent
        // character as the start of a number.
        b'+' | b'-' => b
            .get(1)
            .is_none_or(|c| c.is_ascii_alphabetic() || b"!$%&*/:<=>?@^_~-+".contains(c)),
        _ => false,
    };
    starts_well && b.iter().all(inner)
}

/// The largest magnitude `lexpr` holds exactly: a `u64` when positive, an `i64` when negative.
fn integer_fits(negative: bool, digits: &str) -> bool {
    let digits = digits.trim_start_matches('0');
    match digits.parse::<u64>() {
        Ok(n) => !negative || n <= 1 << 63,
        Err(_) => digits.is_empty(),
    }
}

/// Write a finished token as `lexpr` should see it: keywords and plain symbols as they are,
/// integers in plain decimal, and floats and other symbols as [`PLACEHOLDER`] with the atom
/// Emacs reads pushed on `atoms`. Numbers a plist cannot hold (infinities, NaNs, integers
/// past 64 bits, which Emacs reads as bignums) are refused. A token with a backslash in it
/// (`escaped`) is always a symbol, or a keyword when it started as one.
fn flush_token(
    out: &mut String,
    token: &mut String,
    atoms: &mut Vec<Atom>,
    escaped: bool,
    keyword: bool,
) -> Result<(), String> {
    let t = token.as_str();
    if t.is_empty() {
        return Ok(());
    }
    if escaped {
        out.push_str(PLACEHOLDER);
        atoms.push(match t.strip_prefix(':').filter(|_| keyword) {
            Some(name) => Atom::Keyword(name.to_string()),
            None => Atom::Symbol(t.to_string()),
        });
    } else if BACKQUOTES.iter().any(|(name, _)| *name == t) {
        // Written out, these are plain symbols, not what `lexpr` makes of `` ` `` and `,`.
        out.push_str(PLACEHOLDER);
        atoms.push(Atom::Symbol(t.to_string()));
    } else if t.starts_with(':') || t == "." || is_plain_symbol(t) {
        out.push_str(t);
    } else {
        match emacs_number(t) {
            Some(Number::Integer { negative, digits }) => {
                if !integer_fits(negative, digits) {
                    return Err(format!("integer `{t}' is out of range (64 bits)"));
                }
                if negative {
                    out.push('-');
                }
                out.push_str(digits);
            }
            Some(Number::Float(text)) => match text.parse::<f64>() {
                Ok(f) if f.is_finite() => {
                    out.push_str(PLACEHOLDER);
                    atoms.push(Atom::Float(f));
                }
                _ => return Err(format!("float `{t}' is out of range")),
            },
            Some(Number::NonFinite) => {
                return Err(format!("`{t}' is not a finite number"));
            }
            None => {
                out.push_str(PLACEHOLDER);
                atoms.push(Atom::Symbol(t.to_string()));
            }
        }
    }
    token.clear();
    Ok(())
}

/// Put the atoms taken out by [`flush_token`] back into `v`, in the order of the text (cars
/// before cdrs, vector elements in order). Walks lists iteratively; only nesting recurses,
/// and the guard capped it.
fn restore(v: &mut Value, atoms: &mut std::vec::IntoIter<Atom>) -> Result<(), SexpError> {
    let mut cur = v;
    loop {
        match cur {
            Value::Cons(cell) => {
                restore(cell.car_mut(), atoms)?;
                cur = cell.cdr_mut();
            }
            Value::Vector(items) => {
                for item in items.iter_mut() {
                    restore(item, atoms)?;
                }
                return Ok(());
            }
            Value::Symbol(s) if &**s == PLACEHOLDER => {
                *cur = match atoms.next() {
                    Some(Atom::Float(f)) => Value::from(f),
                    Some(Atom::Symbol(name)) => Value::symbol(name),
                    Some(Atom::Keyword(name)) => Value::keyword(name),
                    Some(Atom::Char(c)) => Value::Char(c),
                    Some(Atom::Integer(i)) => Value::from(i),
                    None => return Err(SexpError::Shape("reader: an atom went missing".into())),
                };
                return Ok(());
            }
            Value::Symbol(s) => {
                if let Some((_, emacs)) = BACKQUOTES.iter().find(|(name, _)| **name == **s) {
                    *cur = Value::symbol(*emacs);
                }
                return Ok(());
            }
            _ => return Ok(()),
        }
    }
}

/// `value` read by `lexpr`, with the taken-out atoms put back.
fn finish(
    value: Value,
    atoms: &mut std::vec::IntoIter<Atom>,
    backquotes: bool,
) -> Result<Sexp, SexpError> {
    let mut value = Sexp::from(value);
    if atoms.len() > 0 || backquotes {
        if let Some(v) = value.value_mut() {
            restore(v, atoms)?;
        }
    }
    Ok(value)
}

fn lexpr_error(e: lexpr::parse::Error) -> SexpError {
    match e.location() {
        Some(loc) => SexpError::Syntax {
            line: loc.line(),
            column: loc.column() + 1,
            message: e.to_string(),
        },
        None => SexpError::Syntax {
            line: 0,
            column: 0,
            message: e.to_string(),
        },
    }
}

/// Read exactly one datum from `input`.
pub fn read(input: &str) -> Result<Sexp, SexpError> {
    let Guarded {
        text,
        atoms,
        backquotes,
    } = guard(input)?;
    let mut atoms = atoms.into_iter();
    let mut parser = lexpr::Parser::from_str_custom(&text, lexpr::parse::Options::elisp());
    let value = match parser.next_value().map_err(lexpr_error)? {
        Some(v) => finish(v, &mut atoms, backquotes)?,
        None => return Err(SexpError::Empty),
    };
    match parser.next_value().map_err(lexpr_error)? {
        None => Ok(value),
        Some(extra) => {
            drop(Sexp::from(extra));
            Err(SexpError::Trailing)
        }
    }
}

/// Read every datum in `input`.
pub fn read_all(input: &str) -> Result<Vec<Sexp>, SexpError> {
    let Guarded {
        text,
        atoms,
        backquotes,
    } = guard(input)?;
    let mut atoms = atoms.into_iter();
    let mut parser = lexpr::Parser::from_str_custom(&text, lexpr::parse::Options::elisp());
    let mut out = Vec::new();
    while let Some(v) = parser.next_value().map_err(lexpr_error)? {
        out.push(finish(v, &mut atoms, backquotes)?);
    }
    Ok(out)
}
