//! `org-agent-find`'s candidates: one display string per headline, built in one pass over a
//! file's nodes (each outline path from its parent's, not by walking up from every node),
//! and matched here against what the user types, so that Emacs gets Lisp strings only for
//! the candidates that match (the completion style `org-agent-substring`).

use super::convert::file_name;
use crate::store::{FileDoc, NodeKind, State};
use memchr::memmem::Finder;
use std::sync::Arc;

/// Call `f` with the index and the display string of every headline of `doc`, in document
/// order. The display is what `org-agent-find` shows: the TODO keyword, the outline path and
/// title joined by `/`, the tags (inherited ones included) and the file's name.
pub fn each_display<E>(
    doc: &FileDoc,
    mut f: impl FnMut(u32, &str) -> Result<(), E>,
) -> Result<(), E> {
    let file = file_name(&doc.path);
    // The outline path of the innermost headline visited, "A/B/", and the headlines it
    // runs through with the length of the path up to each: nodes come in document order,
    // so a node's parent, when it is a headline, is on this stack.
    let mut path = String::new();
    let mut open: Vec<(u32, usize)> = Vec::new();
    let mut display = String::new();
    for (i, n) in doc.nodes.iter().enumerate() {
        if n.content.kind != NodeKind::Headline {
            continue;
        }
        let parent = n.parent();
        while open.last().is_some_and(|&(j, _)| Some(j) != parent) {
            open.pop();
        }
        path.truncate(open.last().map_or(0, |&(_, len)| len));
        display.clear();
        if let Some(k) = &n.content.todo {
            display.push_str(k);
            display.push(' ');
        }
        display.push_str(&path);
        display.push_str(&n.content.title);
        path.push_str(&n.content.title);
        path.push('/');
        open.push((i as u32, path.len()));
        let tags = n.all_tags();
        if !tags.is_empty() {
            display.push_str("  :");
            for t in tags {
                display.push_str(t);
                display.push(':');
            }
        }
        display.push_str("  — ");
        display.push_str(file);
        f(i as u32, &display)?;
    }
    Ok(())
}

/// Every display of the store, in store order.
fn each_in_store<E>(state: &State, mut f: impl FnMut(&str) -> Result<(), E>) -> Result<(), E> {
    for doc in state.files.values() {
        each_display(doc, |_, d| f(d))?;
    }
    Ok(())
}

/// `c` as compared when case is ignored: its lower case when that is one character (as
/// Emacs's `downcase` maps one character to one), else itself.
fn fold_char(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    let mut lower = c.to_lowercase();
    match (lower.next(), lower.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

/// `s` with each character folded into `out` (cleared first): as many characters as `s`.
fn fold_into(s: &str, out: &mut String) {
    out.clear();
    if s.is_ascii() {
        out.push_str(s);
        out.make_ascii_lowercase();
    } else {
        out.extend(s.chars().map(fold_char));
    }
}

/// What the user typed, as `org-agent-find` matches it: words separated by spaces, each of
/// which must occur somewhere in a candidate, in any order (one word is the `substring`
/// style's match). With `ignore_case` (`completion-ignore-case`) both sides are compared
/// with each character in lower case. No words (empty input) match every candidate.
pub struct Matcher {
    finders: Vec<Finder<'static>>,
    ignore_case: bool,
    folded: String,
}

impl Matcher {
    pub fn new(input: &str, ignore_case: bool) -> Matcher {
        let mut word = String::new();
        let finders = input
            .split(' ')
            .filter(|w| !w.is_empty())
            .map(|w| {
                if ignore_case {
                    fold_into(w, &mut word);
                } else {
                    word.clear();
                    word.push_str(w);
                }
                Finder::new(word.as_bytes()).into_owned()
            })
            .collect();
        Matcher {
            finders,
            ignore_case,
            folded: String::new(),
        }
    }

    /// The text the words are looked for in: `candidate`, or its folded copy.
    fn haystack<'a>(folded: &'a mut String, ignore_case: bool, candidate: &'a str) -> &'a [u8] {
        if ignore_case {
            fold_into(candidate, folded);
            folded.as_bytes()
        } else {
            candidate.as_bytes()
        }
    }

    pub fn matches(&mut self, candidate: &str) -> bool {
        if self.finders.is_empty() {
            return true;
        }
        let hay = Self::haystack(&mut self.folded, self.ignore_case, candidate);
        self.finders.iter().all(|f| f.find(hay).is_some())
    }

    /// Where the text after the first occurrence of the last word starts in `candidate`,
    /// counted in characters (folding keeps the count); `None` without words or when the
    /// word is not there.
    fn after_last_word(&mut self, candidate: &str) -> Option<usize> {
        let finder = self.finders.last()?;
        let hay = Self::haystack(&mut self.folded, self.ignore_case, candidate);
        let at = finder.find(hay)? + finder.needle().len();
        // UTF-8: every byte but continuation bytes (0b10xx_xxxx) starts a character.
        Some(hay[..at].iter().filter(|&&b| b & 0xC0 != 0x80).count())
    }
}

/// The candidates of the store `input` matches (see [`Matcher`]), in store order, each
/// given to `f`.
pub fn each_match<E>(
    state: &State,
    input: &str,
    ignore_case: bool,
    mut f: impl FnMut(&str) -> Result<(), E>,
) -> Result<(), E> {
    let mut m = Matcher::new(input, ignore_case);
    each_in_store(state, |d| if m.matches(d) { f(d) } else { Ok(()) })
}

/// The candidates of the store that start with `prefix` (each character folded with
/// `ignore_case`, as [`Matcher`] does), in store order, each given to `f`: what
/// `all-completions` keeps of them, for the `basic` style and the like.
pub fn each_prefixed<E>(
    state: &State,
    prefix: &str,
    ignore_case: bool,
    mut f: impl FnMut(&str) -> Result<(), E>,
) -> Result<(), E> {
    let mut folded = String::new();
    fold_into(prefix, &mut folded);
    let n = folded.chars().count();
    each_in_store(state, |d| {
        let starts = if ignore_case {
            d.chars().take(n).map(fold_char).eq(folded.chars())
        } else {
            d.starts_with(prefix)
        };
        if starts {
            f(d)
        } else {
            Ok(())
        }
    })
}

/// What completing `input` (point at its end) against the store's candidates gives.
#[derive(Debug, PartialEq, Eq)]
pub enum Completion {
    /// No candidate matches.
    None,
    /// One candidate matches (or several, all the same string): this one.
    Sole(String),
    /// Several candidates match; each has this text right after the first occurrence of
    /// the input's last word (as the first match writes it), which may be empty. Empty too
    /// when the input ends in a space or has no words.
    Several(String),
}

/// Complete `input` against the store: [`Completion`]. The common text after the last word
/// is what the `substring` style's TAB adds after the typed text.
pub fn complete(state: &State, input: &str, ignore_case: bool) -> Completion {
    complete_over(input, ignore_case, |f| each_in_store(state, f))
}

/// [`complete`] over the candidates `each` gives its argument, which may stop early.
fn complete_over(
    input: &str,
    ignore_case: bool,
    each: impl FnOnce(&mut dyn FnMut(&str) -> Result<(), ()>) -> Result<(), ()>,
) -> Completion {
    let mut m = Matcher::new(input, ignore_case);
    let extend = !input.ends_with(' ');
    let mut first: Option<String> = None;
    let mut all_same = true;
    // The first match's text after its last word, and the folded text every match has
    // there so far; `None` when nothing can be added.
    let mut common: Option<(Vec<char>, Vec<char>)> = None;
    let _ = each(&mut |d| {
        if !m.matches(d) {
            return Ok(());
        }
        let Some(shown) = &first else {
            first = Some(d.to_owned());
            common = m.after_last_word(d).filter(|_| extend).map(|at| {
                let rest: Vec<char> = d.chars().skip(at).collect();
                let folded = rest.iter().map(|&c| fold_if(c, ignore_case)).collect();
                (rest, folded)
            });
            return Ok(());
        };
        all_same &= shown == d;
        if let Some((_, folded)) = &mut common {
            let at = m.after_last_word(d).unwrap_or(usize::MAX);
            let same = d
                .chars()
                .skip(at)
                .zip(folded.iter())
                .take_while(|&(c, &f)| fold_if(c, ignore_case) == f)
                .count();
            folded.truncate(same);
            if folded.is_empty() {
                common = None;
            }
        }
        // Nothing more to learn: several differ and nothing can be added.
        if !all_same && common.is_none() {
            return Err(());
        }
        Ok(())
    });
    match (first, all_same) {
        (None, _) => Completion::None,
        (Some(d), true) => Completion::Sole(d),
        (Some(_), false) => {
            Completion::Several(common.map_or_else(String::new, |(rest, folded)| {
                rest[..folded.len()].iter().collect()
            }))
        }
    }
}

fn fold_if(c: char, ignore_case: bool) -> char {
    if ignore_case {
        fold_char(c)
    } else {
        c
    }
}

/// The number of headlines in the store: every node but each file's own.
pub fn headline_count(state: &State) -> usize {
    state.node_count().saturating_sub(state.files.len())
}

/// The file and node index of the first headline whose display is `display`.
pub fn target(state: &State, display: &str) -> Option<(Arc<FileDoc>, u32)> {
    for doc in state.files.values() {
        let file = file_name(&doc.path);
        let shown_here = display
            .strip_suffix(file)
            .is_some_and(|rest| rest.ends_with("  — "));
        if !shown_here {
            continue;
        }
        let mut found = None;
        let _ = each_display(doc, |i, d| {
            if d == display {
                found = Some(i);
                return Err(());
            }
            Ok(())
        });
        if let Some(i) = found {
            return Some((doc.clone(), i));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Config, Store};

    const TEXT: &str = "#+FILETAGS: :ref:\n* Café ☕ plans :trip:\n** TODO Book the 🎉 train\n\
                        *** Seat by the window :quiet:\n** Pack\n* DONE Plain ascii headline\n";

    fn displays() -> Vec<String> {
        let store = Store::in_memory(Config::default());
        store
            .ingest_text("/n/find.org", TEXT, None, None, None)
            .expect("ingest");
        let state = store.state();
        let mut out = Vec::new();
        let _ = each_in_store(&state, |d| {
            out.push(d.to_owned());
            Ok::<(), ()>(())
        });
        out
    }

    #[test]
    fn each_headline_shows_todo_path_tags_and_file() {
        assert_eq!(
            displays(),
            [
                "Café ☕ plans  :ref:trip:  — find.org",
                "TODO Café ☕ plans/Book the 🎉 train  :ref:trip:  — find.org",
                "Café ☕ plans/Book the 🎉 train/Seat by the window  :ref:trip:quiet:  — find.org",
                "Café ☕ plans/Pack  :ref:trip:  — find.org",
                "DONE Plain ascii headline  :ref:  — find.org",
            ]
        );
    }

    fn matching(input: &str, ignore_case: bool) -> Vec<String> {
        let mut m = Matcher::new(input, ignore_case);
        displays().into_iter().filter(|d| m.matches(d)).collect()
    }

    #[test]
    fn every_word_anywhere_in_any_order() {
        assert_eq!(matching("", false).len(), 5);
        assert_eq!(matching("   ", false).len(), 5);
        assert_eq!(matching("window", false).len(), 1);
        assert_eq!(matching("train Book", false).len(), 2);
        assert_eq!(matching("  🎉   Seat ", false).len(), 1);
        assert_eq!(matching("Book train x", false).len(), 0);
        // One word is matched whole, spaces inside it included ("a/B" is not "a B").
        assert_eq!(matching("plans/Pack", false).len(), 1);
        assert_eq!(matching("— find.org", false).len(), 5);
    }

    #[test]
    fn case_is_ignored_only_when_asked() {
        assert!(matching("CAFÉ", false).is_empty());
        assert_eq!(matching("CAFÉ", true).len(), 4);
        assert_eq!(matching("plain ASCII", true).len(), 1);
        assert!(matching("plain ASCII", false).is_empty());
        // Folding keeps one character for one, so positions in characters agree.
        assert_eq!(fold_char('Ä'), 'ä');
        assert_eq!(fold_char('İ'), 'İ');
        let mut m = Matcher::new("É ☕", true);
        assert_eq!(m.after_last_word("XCafé ☕ plans"), Some(7));
    }

    #[test]
    fn prefixed_as_all_completions_keeps_them() {
        let store = Store::in_memory(Config::default());
        store
            .ingest_text("/n/find.org", TEXT, None, None, None)
            .expect("ingest");
        let state = store.state();
        let prefixed = |p: &str, ic: bool| {
            let mut out = Vec::new();
            let _ = each_prefixed(&state, p, ic, |d| {
                out.push(d.to_owned());
                Ok::<(), ()>(())
            });
            out
        };
        assert_eq!(prefixed("", false).len(), 5);
        assert_eq!(prefixed("Café ☕ plans/", false).len(), 2);
        assert!(prefixed("café ☕ plans/", false).is_empty());
        assert_eq!(prefixed("café ☕ PLANS/", true).len(), 2);
        assert_eq!(
            prefixed("done", true),
            ["DONE Plain ascii headline  :ref:  — find.org"]
        );
        assert!(prefixed("DONE Plain ascii headline  :ref:  — find.org!", true).is_empty());
    }

    fn complete_in(list: &[&str], input: &str, ignore_case: bool) -> Completion {
        complete_over(input, ignore_case, |f| list.iter().try_for_each(|d| f(d)))
    }

    #[test]
    fn completion_is_none_sole_or_the_common_text_after() {
        let list = [
            "Garden plans  — a.org",
            "Garden plans/Beds  — a.org",
            "Read about gardening  — b.org",
            "Garden plans/Beds  — a.org",
        ];
        assert_eq!(complete_in(&list, "zzz", false), Completion::None);
        assert_eq!(
            complete_in(&list, "about", false),
            Completion::Sole(list[2].into())
        );
        // Two matches, the same string: as one.
        assert_eq!(
            complete_in(&list, "Beds", false),
            Completion::Sole(list[1].into())
        );
        assert_eq!(
            complete_in(&list, "Gard", false),
            Completion::Several("en plans".into())
        );
        assert_eq!(
            complete_in(&list, "gard", true),
            Completion::Several("en".into())
        );
        assert_eq!(
            complete_in(&list, "GARDEN P", true),
            Completion::Several("lans".into())
        );
        assert_eq!(
            complete_in(&list, "Gard ", false),
            Completion::Several(String::new())
        );
        assert_eq!(
            complete_in(&list, "", false),
            Completion::Several(String::new())
        );
        // The text added is the first match's, in its case.
        assert_eq!(
            complete_in(&["xA-Bc", "ya-bD"], "a", true),
            Completion::Several("-B".into())
        );
    }
}
