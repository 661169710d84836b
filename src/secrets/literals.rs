//! A key split over adjacent string literals: `"sk-proj-abc" "def…"` (C and Python join
//! them), `"ghp_ab" + "cd…"` (JS, Java), `"…" .. "…"` (Lua), `'…' . '…'` (PHP, Perl),
//! `'…' || '…'` (SQL), over a line break too. The literals of a chain are joined so the
//! rules can read the string the program builds, and a hit maps back onto the literals.
//!
//! One pass over the text's quotes (`memchr`): a literal runs from a quote to the next
//! unescaped quote of its kind on the same line, a chain is literals with only whitespace
//! (one line break at most) and one concatenation operator between them. Prose pairs its
//! apostrophes oddly; every quote is tried as an opening one, and each stretch of text is
//! looked at a bounded number of times.

/// The longest literal taken into a chain.
const MAX_LITERAL: usize = 4096;

/// The contents of two or more adjacent string literals, joined.
#[derive(Debug)]
pub(super) struct Chain {
    pub joined: String,
    /// Where each literal's content is: in `joined` and in the text.
    segments: Vec<Segment>,
}

#[derive(Debug, Clone, Copy)]
struct Segment {
    /// Where the content starts in [`Chain::joined`].
    at: usize,
    /// Where it starts in the text.
    start: usize,
    len: usize,
}

impl Chain {
    /// The range of the text that `joined[start..end]` came from: from inside the first
    /// literal it touches to inside the last (the quotes and operators between go with it).
    pub fn to_text(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        if start >= end {
            return None;
        }
        let first = self
            .segments
            .iter()
            .find(|g| g.at <= start && start < g.at + g.len)?;
        let last = self
            .segments
            .iter()
            .rev()
            .find(|g| g.at < end && end <= g.at + g.len)?;
        Some((
            first.start + (start - first.at),
            last.start + (end - last.at),
        ))
    }
}

/// Whether the quote at `i` is escaped (an odd number of backslashes before it).
fn escaped(bytes: &[u8], i: usize) -> bool {
    bytes[..i].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
}

/// Where the next literal of a chain opens, if what follows `from` is a concatenation:
/// whitespace with one line break at most (a `\` before it continues the line), at most one
/// operator, a Python prefix (`f`, `rb`, …), a quote.
fn next_literal(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    let mut breaks = 0;
    let mut skip_space = |i: &mut usize| {
        while let Some(&b) = bytes.get(*i) {
            match b {
                b' ' | b'\t' | b'\r' => *i += 1,
                b'\n' => {
                    breaks += 1;
                    *i += 1;
                }
                b'\\' if matches!(bytes.get(*i + 1), Some(b'\n' | b'\r')) => *i += 1,
                _ => break,
            }
        }
    };
    skip_space(&mut i);
    let rest = &bytes[i.min(bytes.len())..];
    if rest.starts_with(b"..") || rest.starts_with(b"||") {
        i += 2;
    } else if rest.starts_with(b"+") || rest.starts_with(b".") {
        i += 1;
    }
    skip_space(&mut i);
    if breaks > 1 {
        return None;
    }
    let prefix = bytes[i.min(bytes.len())..]
        .iter()
        .take(2)
        .take_while(|b| matches!(b, b'r' | b'R' | b'b' | b'B' | b'u' | b'U' | b'f' | b'F'))
        .count();
    let quote = i + prefix;
    // A prefix is one only when the quote follows it (`bar'` is not).
    let quote = if matches!(bytes.get(quote), Some(b'"' | b'\'')) {
        quote
    } else {
        i
    };
    matches!(bytes.get(quote), Some(b'"' | b'\'')).then_some(quote)
}

/// The chains of `text`, in order, none overlapping.
pub(super) fn chains(text: &str) -> Vec<Chain> {
    let bytes = text.as_bytes();
    let quotes: Vec<usize> = memchr::memchr2_iter(b'"', b'\'', bytes)
        .filter(|&i| !escaped(bytes, i))
        .collect();
    // Two literals need four quotes.
    if quotes.len() < 4 {
        return Vec::new();
    }
    // For each quote, the index of the next one of its kind.
    let mut next_same = vec![usize::MAX; quotes.len()];
    let mut last = [usize::MAX; 2];
    for (k, &q) in quotes.iter().enumerate().rev() {
        let kind = usize::from(bytes[q] == b'\'');
        next_same[k] = last[kind];
        last[kind] = k;
    }
    let mut chains = Vec::new();
    let mut k = 0;
    while k < quotes.len() {
        // Literals as (opening, closing) indices into `quotes`.
        let mut literals: Vec<(usize, usize)> = Vec::new();
        let mut open = k;
        loop {
            let close = next_same[open];
            let Some(&end) = quotes.get(close) else {
                break;
            };
            let content = &bytes[quotes[open] + 1..end];
            if content.len() > MAX_LITERAL || memchr::memchr(b'\n', content).is_some() {
                break;
            }
            literals.push((open, close));
            // The next literal opens at the next quote, if only a concatenation is between.
            match next_literal(bytes, end + 1) {
                Some(q) if quotes.get(close + 1) == Some(&q) => open = close + 1,
                _ => break,
            }
        }
        match literals.last() {
            Some(&(_, close)) if literals.len() >= 2 => {
                let mut joined = String::new();
                let mut segments = Vec::with_capacity(literals.len());
                for &(o, c) in &literals {
                    let (start, end) = (quotes[o] + 1, quotes[c]);
                    segments.push(Segment {
                        at: joined.len(),
                        start,
                        len: end - start,
                    });
                    joined.push_str(&text[start..end]);
                }
                chains.push(Chain { joined, segments });
                k = close + 1;
            }
            _ => k += 1,
        }
    }
    chains
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(text: &str) -> Vec<String> {
        chains(text).into_iter().map(|c| c.joined).collect()
    }

    #[test]
    fn adjacent_literals_join() {
        assert_eq!(joined(r#"k = "ab" "cd""#), ["abcd"]);
        assert_eq!(joined("k = 'ab' + 'cd' + \"ef\";"), ["abcdef"]);
        assert_eq!(joined("k = 'ab' .. 'cd'"), ["abcd"]);
        assert_eq!(joined("k = ('ab'\n     'cd')"), ["abcd"]);
        assert_eq!(joined("k = 'ab' \\\n  f'cd'"), ["abcd"]);
        assert_eq!(joined(r#"k = "a\"b" "cd""#), [r#"a\"bcd"#]);
        // Prose: apostrophes, quotes with words between, paragraphs.
        assert!(joined("don't say 'no' and 'yes' it's fine").is_empty());
        assert!(joined("\"ab\"\n\n\"cd\"").is_empty());
        assert_eq!(joined("it's 'ab' 'cd'"), ["abcd"]);
    }

    #[test]
    fn hits_map_back() {
        let text = r#"x("abc" + "def")"#;
        let c = &chains(text)[0];
        let (s, e) = c.to_text(1, 5).unwrap();
        assert_eq!(&text[s..e], r#"bc" + "de"#);
        let (s, e) = c.to_text(3, 6).unwrap();
        assert_eq!(&text[s..e], "def");
        assert_eq!(c.to_text(2, 2), None);
    }
}
