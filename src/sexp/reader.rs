//! The guarded reader: untrusted text (LLM output, skill files) → [`Sexp`].
//!
//! `lexpr` parses recursively and overflows the stack on deep nesting and on long runs of
//! quote characters (about 9,000 `'` in 0.2.7), and a stack overflow aborts Emacs. So every
//! input is first scanned here, without recursion: size, nesting depth (quotes count as a
//! level, since each becomes `(quote …)`) and quote runs are capped, every `#` reader macro
//! (`#.` evaluates code at read time in Emacs) is refused, and keywords are lowercased so
//! `:TYPE` and `:type` are the same key. Only then does `lexpr` see the text.

use super::{Sexp, SexpError};

/// Largest input read, in bytes.
pub const MAX_INPUT: usize = 1 << 20;
/// Deepest nesting of lists, vectors and quotes.
pub const MAX_DEPTH: usize = 64;
/// Longest run of quote characters (`'`, `` ` ``, `,`, `,@`) before one datum.
pub const MAX_QUOTE_RUN: usize = 16;

fn at(kind: &str, line: usize, column: usize) -> SexpError {
    SexpError::Syntax {
        line,
        column,
        message: kind.to_string(),
    }
}

/// Scan `input` and return it with keywords lowercased, or the first problem found.
fn guard(input: &str) -> Result<String, SexpError> {
    if input.len() > MAX_INPUT {
        return Err(SexpError::TooLarge {
            bytes: input.len(),
            max: MAX_INPUT,
        });
    }
    let mut out = String::with_capacity(input.len());
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
            flush_token(&mut out, &mut token);
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
            c if c.is_whitespace() => {
                out.push(c);
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
            '#' if token_start => {
                let next = chars.peek().copied().unwrap_or(' ');
                return Err(at(
                    &format!("reader macro `#{next}' is not allowed"),
                    line,
                    column,
                ));
            }
            '?' if token_start => {
                // A character literal: `?a`, `?\n`, `?\(`.
                out.push(c);
                if let Some(n) = chars.next() {
                    advance!(n);
                    out.push(n);
                    if n == '\\' {
                        if let Some(e) = chars.next() {
                            advance!(e);
                            out.push(e);
                        }
                    }
                }
                quote_run = 0;
                token_start = false;
            }
            '\\' => {
                return Err(at(
                    "escaped characters in symbols are not supported",
                    line,
                    column,
                ));
            }
            ':' if token_start => {
                token.push(c);
                in_keyword = true;
                quote_run = 0;
                token_start = false;
            }
            c => {
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
    flush_token(&mut out, &mut token);
    if depth > 0 {
        return Err(at("unexpected end of input: unclosed list", line, column));
    }
    if quote_run > 0 {
        return Err(at("unexpected end of input after a quote", line, column));
    }
    Ok(out)
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

/// Characters that continue a symbol or number token.
fn is_constituent(c: char) -> bool {
    !(c.is_whitespace() || matches!(c, '(' | ')' | '[' | ']' | '"' | ';' | '\'' | '`' | ','))
}

/// Write a finished token, rewriting the number forms Emacs reads but `lexpr` does not:
/// `1e3` and `1e+300` (floats without a point) and `1.` (an integer).
fn flush_token(out: &mut String, token: &mut String) {
    let t = token.as_str();
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((mantissa, exponent)) = unsigned.split_once(['e', 'E']) {
        let exp_digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        if digits(mantissa) && digits(exp_digits) {
            let sign = &t[..t.len() - unsigned.len()];
            out.push_str(&format!("{sign}{mantissa}.0e{exponent}"));
            token.clear();
            return;
        }
    }
    if let Some(int) = unsigned.strip_suffix('.') {
        if digits(int) {
            out.push_str(&t[..t.len() - 1]);
            token.clear();
            return;
        }
    }
    out.push_str(t);
    token.clear();
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
    let text = guard(input)?;
    let mut parser = lexpr::Parser::from_str_custom(&text, lexpr::parse::Options::elisp());
    let value = match parser.next_value().map_err(lexpr_error)? {
        Some(v) => Sexp::from(v),
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
    let text = guard(input)?;
    let mut parser = lexpr::Parser::from_str_custom(&text, lexpr::parse::Options::elisp());
    let mut out = Vec::new();
    while let Some(v) = parser.next_value().map_err(lexpr_error)? {
        out.push(Sexp::from(v));
    }
    Ok(out)
}
