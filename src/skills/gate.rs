//! A skill's gate table and tests: rows of (action, condition, decision, reason) whose
//! conditions come from a closed vocabulary, checked when the skill loads.

use std::fmt;

/// What a rule decides when its action and condition match. Skills only tighten the user's
/// policy, so there is no `allow`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Deny,
    Ask,
}

/// How a term compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Is,
    IsNot,
    /// Matches a glob (`*`, `?`).
    Like,
    Above,
    Below,
}

/// What a term is about. The vocabulary is closed: a skill cannot name anything else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    /// The TODO state the action sets (`set_todo`'s `state`).
    State,
    /// The target node's TODO keyword now.
    Todo,
    /// A tag of the target node, own or inherited.
    Tag,
    /// The target's file name.
    File,
    /// How many of the target's children are open tasks.
    OpenChildren,
    /// The target's outline level.
    Level,
    /// The property key an action sets or deletes.
    Key,
    /// The value of the target's property NAME (`prop.NAME`).
    Property(String),
    /// A property the target has, by name (`prop=NAME`; `prop!=NAME`: it has none NAME),
    /// as `tag` is a tag it has.
    PropertyName,
    /// Whether the action may change an Org file (`yes`, `no`): every edit, and a direct
    /// Elisp tool call; not a message, not a visit, not a tool that reads.
    Edit,
    /// Whether the user approved this kind of action for the conversation (`yes`, `no`),
    /// so that a rule can ask only until they did, as the default policy does.
    Approved,
}

/// The subjects a condition may name, as written, with the comparisons each takes.
pub const VOCABULARY: [(&str, &[Op]); 11] = [
    ("state", &[Op::Is, Op::IsNot]),
    ("todo", &[Op::Is, Op::IsNot]),
    ("tag", &[Op::Is, Op::IsNot]),
    ("file", &[Op::Is, Op::Like]),
    ("open-children", &[Op::Is, Op::Above, Op::Below]),
    ("level", &[Op::Is, Op::Above, Op::Below]),
    ("key", &[Op::Is, Op::IsNot, Op::Like]),
    ("prop.NAME", &[Op::Is, Op::IsNot, Op::Like]),
    ("prop", &[Op::Is, Op::IsNot]),
    ("edit", &[Op::Is, Op::IsNot]),
    ("approved", &[Op::Is, Op::IsNot]),
];

/// One comparison of a condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    pub subject: Subject,
    pub op: Op,
    pub value: String,
}

/// All terms must hold; no terms: always.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Condition(pub Vec<Term>);

/// One row of a skill's `* Gate` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateRow {
    /// A tool or actuator verb, globs allowed (`set_todo`, `set-*`, `*`).
    pub action: String,
    pub condition: Condition,
    pub decision: Decision,
    pub reason: String,
    pub line: usize,
}

/// A test a skill carries (`* Tests`): its title, kind (`gate`, `trigger`, `turn`: the
/// heading's tag), its properties (what it does and expects) and fixture text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Test {
    pub title: String,
    pub kind: String,
    pub properties: Vec<(String, String)>,
    pub body: String,
    pub line: usize,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Is => "=",
            Op::IsNot => "!=",
            Op::Like => "~",
            Op::Above => ">",
            Op::Below => "<",
        })
    }
}

impl Condition {
    /// A condition as written in a gate table: terms joined by `&`; `-` or nothing is
    /// always. An unknown subject, a comparison the subject does not take, or a number that
    /// is not one is an error that says which.
    pub fn parse(text: &str) -> Result<Condition, String> {
        let text = text.trim();
        if text.is_empty() || text == "-" {
            return Ok(Condition::default());
        }
        text.split('&')
            .map(term)
            .collect::<Result<_, _>>()
            .map(Condition)
    }
}

fn term(text: &str) -> Result<Term, String> {
    let text = text.trim();
    // Two-character comparisons first, so `!=` is not read as `=`.
    let (at, op, len) = [
        ("!=", Op::IsNot),
        ("=", Op::Is),
        ("~", Op::Like),
        (">", Op::Above),
        ("<", Op::Below),
    ]
    .iter()
    .filter_map(|(s, op)| text.find(s).map(|i| (i, *op, s.len())))
    .min_by_key(|(i, _, len)| (*i, std::cmp::Reverse(*len)))
    .ok_or_else(|| format!("{text:?} compares nothing (use =, !=, ~, > or <)"))?;
    let (name, value) = (text[..at].trim(), text[at + len..].trim());
    let subject = match name {
        "state" => Subject::State,
        "todo" => Subject::Todo,
        "tag" => Subject::Tag,
        "file" => Subject::File,
        "open-children" => Subject::OpenChildren,
        "level" => Subject::Level,
        "key" => Subject::Key,
        "edit" => Subject::Edit,
        "approved" => Subject::Approved,
        "prop" => Subject::PropertyName,
        _ => match name.strip_prefix("prop.") {
            Some(p) if !p.is_empty() => Subject::Property(p.to_uppercase()),
            _ => {
                let known: Vec<&str> = VOCABULARY.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "unknown condition {name:?} (known: {})",
                    known.join(", ")
                ));
            }
        },
    };
    let written = match &subject {
        Subject::Property(_) => "prop.NAME",
        _ => name,
    };
    let ops = VOCABULARY
        .iter()
        .find(|(n, _)| *n == written)
        .map(|(_, ops)| *ops)
        .unwrap_or(&[]);
    if !ops.contains(&op) {
        let allowed: Vec<String> = ops.iter().map(|o| o.to_string()).collect();
        return Err(format!("{name} takes {}, not {op}", allowed.join(" ")));
    }
    if matches!(op, Op::Above | Op::Below)
        || matches!(subject, Subject::OpenChildren | Subject::Level)
    {
        value
            .parse::<u32>()
            .map_err(|_| format!("{name} compares with a number, not {value:?}"))?;
    }
    if value.is_empty() {
        return Err(format!("{name}{op} needs a value"));
    }
    if matches!(subject, Subject::Edit | Subject::Approved) && !matches!(value, "yes" | "no") {
        return Err(format!("{name} is yes or no, not {value:?}"));
    }
    let value = match subject {
        // Org's property names are read whatever their case.
        Subject::PropertyName => {
            if value.contains(char::is_whitespace) || value.contains(':') {
                return Err(format!("prop names a property, not {value:?}"));
            }
            value.to_uppercase()
        }
        _ => value.to_owned(),
    };
    Ok(Term { subject, op, value })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readme_lists_the_vocabulary_as_it_is() {
        let readme = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("skills/README.org"),
        )
        .expect("skills/README.org");
        for (name, ops) in VOCABULARY {
            let row = readme
                .lines()
                .find(|l| l.starts_with(&format!("| ={name}= ")))
                .unwrap_or_else(|| panic!("the README's vocabulary has no row for {name}"));
            let takes = row.split('|').nth(2).unwrap_or_default();
            let written: Vec<String> = ops.iter().map(Op::to_string).collect();
            assert_eq!(
                takes
                    .split_whitespace()
                    .take_while(|w| !w.starts_with('('))
                    .collect::<Vec<_>>(),
                written,
                "{row}"
            );
        }
    }

    #[test]
    fn conditions_read_in_the_closed_vocabulary() {
        let c = Condition::parse("state=DONE & open-children>0").unwrap();
        assert_eq!(c.0.len(), 2);
        assert_eq!(c.0[0].subject, Subject::State);
        assert_eq!(c.0[1].op, Op::Above);
        let c = Condition::parse("file~*/archive/* & prop.effort!=1h").unwrap();
        assert_eq!(c.0[0].op, Op::Like);
        assert_eq!(c.0[1].subject, Subject::Property("EFFORT".into()));
        assert_eq!(c.0[1].op, Op::IsNot);
        assert!(Condition::parse("-").unwrap().0.is_empty());
        let c = Condition::parse("state=DONE & prop!=rating").unwrap();
        assert_eq!(
            c.0[1],
            Term {
                subject: Subject::PropertyName,
                op: Op::IsNot,
                value: "RATING".into()
            }
        );
        let c = Condition::parse("edit=yes & approved!=yes").unwrap();
        assert_eq!(c.0[0].subject, Subject::Edit);
        assert_eq!(
            (c.0[1].subject.clone(), c.0[1].op),
            (Subject::Approved, Op::IsNot)
        );
        for (bad, says) in [
            ("colour=red", "unknown condition \"colour\""),
            ("state>2", "state takes = !=, not >"),
            ("open-children>some", "compares with a number"),
            ("tag", "compares nothing"),
            ("tag=", "needs a value"),
            ("approved=maybe", "approved is yes or no, not \"maybe\""),
            ("edit>0", "edit takes = !=, not >"),
            ("prop~RAT*", "prop takes = !=, not ~"),
            ("prop!=", "needs a value"),
            ("prop=two words", "prop names a property"),
        ] {
            let e = Condition::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
