//! Shell command lines as argv, and what the rules say about them (the `run_command` tool).
//!
//! A line is never handed to a shell: [`parse`] splits it into words the way a POSIX shell
//! would (single and double quotes, backslash escapes) and into the plain commands joined by
//! `&&`, `||`, `;` and `|`. Everything else a shell would do with the line — subshells, brace
//! groups, redirections, command substitution, variables, globs, here-documents, background
//! jobs, comments, several lines — is refused with the construct named, since the words a
//! rule judges would not be the words that run.
//!
//! `~` is expanded only as a whole unquoted word `~` or a leading unquoted `~/`, to `$HOME`
//! (`~user` is refused): that is what the user means by `ls ~/notes`, and the expanded path
//! is what the rules and the runner see. A quoted `'~/x'` stays a literal `~`, as in a shell.
//!
//! [`CommandRules::judge`] judges every part of a line on its own and the strictest wins
//! (deny > ask > allow). The defaults allow a short list of read-only commands (with relative
//! paths only, and without the options of each program's table that make it write a file or
//! run a program), deny known destructive forms and any word naming a protected file (the
//! file tools' list, [`crate::notes::paths::PROTECTED`]), and ask for everything else. The
//! path checks read every word, every value after an `=` and every value a short option may
//! have attached (`-f/abs`, `-rf../x`).
//!
//! User rules (from `org-agent-permissions`) come on top: a user's deny or ask holds for
//! every command starting with its words; a user's allow covers exactly the argv it names
//! (`(allow run_command "make test")` is not `make test --eval=…`), or, ending with a `*`
//! word (`"make test *"`), its words followed by any arguments, each of which is still judged
//! by the defaults' asks and path checks. An allow loosens the default *ask* of the words it
//! names, never a default *deny*: a destructive form stays denied whatever a broad allow such
//! as `(allow run_command "git *")` says, so one careless rule cannot open
//! `git push --force` or `rm -rf`. The parser is the first wall, not the only one: the
//! commands themselves run confined.

use super::{Context, Decision, Gate, GateRules};
use crate::action::Action;
use std::fmt;

/// How two plain commands of a line are joined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Join {
    /// `&&`: the next runs when this one succeeded.
    And,
    /// `||`: the next runs when this one failed.
    Or,
    /// `;`: the next runs after this one.
    Then,
    /// `|`: this one's output is the next one's input.
    Pipe,
}

impl Join {
    pub fn symbol(self) -> &'static str {
        match self {
            Join::And => "&&",
            Join::Or => "||",
            Join::Then => ";",
            Join::Pipe => "|",
        }
    }
}

/// A parsed line: `parts[i]` and `parts[i + 1]` are joined by `joins[i]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    pub parts: Vec<Vec<String>>,
    pub joins: Vec<Join>,
}

/// Why a line is not a plain command: the construct, and what to do instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The construct the line used ("a redirection", "a variable"…).
    pub construct: &'static str,
    pub reason: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for Refusal {}

fn refuse(construct: &'static str, detail: &str) -> Refusal {
    Refusal {
        construct,
        reason: format!(
            "{construct} ({detail}) is refused: commands run without a shell, as plain words \
             joined by &&, ||, ; or |"
        ),
    }
}

/// `line` as plain commands, `~` expanded with `$HOME`.
pub fn parse(line: &str) -> Result<Command, Refusal> {
    let home = std::env::var("HOME").ok().filter(|h| !h.is_empty());
    parse_with_home(line, home.as_deref())
}

/// `line` as plain commands, `~` expanded to `home` (refused when there is none).
pub fn parse_with_home(line: &str, home: Option<&str>) -> Result<Command, Refusal> {
    Parser {
        chars: line.chars().collect(),
        at: 0,
        home,
    }
    .command()
}

struct Parser<'h> {
    chars: Vec<char>,
    at: usize,
    home: Option<&'h str>,
}

/// Characters a shell treats specially outside quotes, and what they would start.
fn unquoted_special(c: char, next: Option<char>) -> Option<(&'static str, String)> {
    let (what, pair) = match c {
        '(' | ')' => ("a subshell", false),
        '{' | '}' => ("a brace group or expansion", false),
        '<' if next == Some('<') => ("a here-document", true),
        '>' if next == Some('>') => ("a redirection", true),
        '>' | '<' => ("a redirection", false),
        '$' if matches!(next, Some('(' | '{')) => ("a command substitution or variable", true),
        '$' => ("a variable", false),
        '`' => ("a command substitution", false),
        '*' | '?' | '[' => ("a glob", false),
        _ => return None,
    };
    let shown: String = std::iter::once(c).chain(next.filter(|_| pair)).collect();
    Some((what, shown))
}

impl Parser<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn command(mut self) -> Result<Command, Refusal> {
        if let Some(c) = self
            .chars
            .iter()
            .find(|c| c.is_control() && **c != '\t' && **c != '\n' && **c != '\r')
        {
            let name = if *c == '\0' {
                "a NUL character"
            } else {
                "a control character"
            };
            return Err(refuse(name, &format!("U+{:04X}", *c as u32)));
        }
        if self.chars.iter().any(|c| *c == '\n' || *c == '\r') {
            return Err(refuse("a second line", "a newline"));
        }
        let mut parts = vec![Vec::new()];
        let mut joins = Vec::new();
        loop {
            while matches!(self.peek(0), Some(' ' | '\t')) {
                self.at += 1;
            }
            let Some(c) = self.peek(0) else { break };
            let join = match (c, self.peek(1)) {
                ('&', Some('&')) => Some((Join::And, 2)),
                ('|', Some('|')) => Some((Join::Or, 2)),
                (';', Some(';')) => return Err(refuse("a case terminator", ";;")),
                (';', _) => Some((Join::Then, 1)),
                ('|', Some('&')) => return Err(refuse("a redirection", "|&")),
                ('|', _) => Some((Join::Pipe, 1)),
                ('&', Some('>')) => return Err(refuse("a redirection", "&>")),
                ('&', _) => return Err(refuse("a background job", "&")),
                _ => None,
            };
            if let Some((join, width)) = join {
                if parts.last().is_some_and(Vec::is_empty) {
                    return Err(refuse(
                        "an empty command",
                        &format!("nothing before {}", join.symbol()),
                    ));
                }
                self.at += width;
                joins.push(join);
                parts.push(Vec::new());
                continue;
            }
            let first = parts.last().is_some_and(Vec::is_empty);
            let word = self.word()?;
            if first {
                check_command_word(&word)?;
            }
            if let Some(last) = parts.last_mut() {
                last.push(word);
            }
        }
        if parts.len() > 1
            && parts.last().is_some_and(Vec::is_empty)
            && joins.last() == Some(&Join::Then)
        {
            // `ls;` is `ls`, as in a shell.
            parts.pop();
            joins.pop();
        }
        if parts.last().is_some_and(Vec::is_empty) {
            return Err(match joins.last() {
                Some(join) => refuse(
                    "an empty command",
                    &format!("nothing after {}", join.symbol()),
                ),
                None => refuse("an empty command", "the line has no words"),
            });
        }
        Ok(Command { parts, joins })
    }

    /// One word, its quotes removed.
    fn word(&mut self) -> Result<String, Refusal> {
        let start = self.at;
        let mut word = String::new();
        while let Some(c) = self.peek(0) {
            let next = self.peek(1);
            match c {
                ' ' | '\t' | ';' | '|' | '&' => break,
                '\'' => {
                    self.at += 1;
                    loop {
                        match self.peek(0) {
                            None => return Err(refuse("an unclosed quote", "'")),
                            Some('\'') => break,
                            Some(q) => word.push(q),
                        }
                        self.at += 1;
                    }
                    self.at += 1;
                }
                '"' => {
                    self.at += 1;
                    self.double_quoted(&mut word)?;
                }
                '\\' => match next {
                    None => return Err(refuse("a trailing backslash", "\\")),
                    Some(escaped) => {
                        word.push(escaped);
                        self.at += 2;
                    }
                },
                '#' if self.at == start => return Err(refuse("a comment", "#")),
                '!' if self.at == start && matches!(next, None | Some(' ' | '\t')) => {
                    return Err(refuse("a negation", "!"))
                }
                '~' if self.at == start => {
                    let home = self
                        .home
                        .ok_or_else(|| refuse("a ~ expansion", "there is no HOME"))?;
                    match next {
                        None | Some(' ' | '\t' | ';' | '|' | '&') => word.push_str(home),
                        Some('/') => word.push_str(home),
                        Some(_) => return Err(refuse("a ~user expansion", "~ before a name")),
                    }
                    self.at += 1;
                }
                '{' | '}' if self.brace_pair_word(start) => {
                    word.push_str("{}");
                    self.at += 2;
                }
                c => {
                    if let Some((what, shown)) = unquoted_special(c, next) {
                        return Err(refuse(what, &shown));
                    }
                    word.push(c);
                    self.at += 1;
                }
            }
        }
        Ok(word)
    }

    /// Whether the word starting at `start` is exactly `{}` (find's placeholder, not a
    /// brace group) and we are at its `{`.
    fn brace_pair_word(&self, start: usize) -> bool {
        self.at == start
            && self.peek(0) == Some('{')
            && self.peek(1) == Some('}')
            && matches!(self.peek(2), None | Some(' ' | '\t' | ';' | '|' | '&'))
    }

    /// The rest of a double-quoted string (after its `"`), pushed to `word`.
    fn double_quoted(&mut self, word: &mut String) -> Result<(), Refusal> {
        loop {
            let Some(c) = self.peek(0) else {
                return Err(refuse("an unclosed quote", "\""));
            };
            let next = self.peek(1);
            match c {
                '"' => {
                    self.at += 1;
                    return Ok(());
                }
                '\\' if matches!(next, Some('$' | '`' | '"' | '\\')) => {
                    word.extend(next);
                    self.at += 2;
                    continue;
                }
                '$' if next == Some('(') => {
                    return Err(refuse("a command substitution", "$( inside quotes"))
                }
                '$' => return Err(refuse("a variable", "$ inside quotes")),
                '`' => return Err(refuse("a command substitution", "` inside quotes")),
                c => word.push(c),
            }
            self.at += 1;
        }
    }
}

/// A command's first word may not be a variable assignment (`LD_PRELOAD=x ls`): the
/// runner would not set it, a shell would.
fn check_command_word(word: &str) -> Result<(), Refusal> {
    if let Some((name, _)) = word.split_once('=') {
        let mut chars = name.chars();
        if chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(refuse("a variable assignment", word));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Rules.

/// What a rule, a part or a line comes to. Ordered: `Allow < Ask < Deny` (the strictest is
/// the greatest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CommandDecision {
    Allow,
    Ask,
    Deny,
}

impl CommandDecision {
    pub fn name(self) -> &'static str {
        match self {
            CommandDecision::Allow => "allow",
            CommandDecision::Ask => "ask",
            CommandDecision::Deny => "deny",
        }
    }
}

/// Where a rule comes from: the defaults below, or the user's `org-agent-permissions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleSource {
    Default,
    User,
}

/// What a rule matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// A plain command by its first words. Deny and ask rules match every argv starting
    /// with these words, their first word the program's file name wherever it lives
    /// (`/usr/bin/sudo`; a trailing `*` there matches a name prefix, `mkfs*`). Allow rules
    /// match the first word as written (`./ls` is not `ls`), and a *user's* allow matches
    /// only an argv of exactly these words, unless the rule ends with a `*` word (see
    /// [`CommandRule::star`]).
    Prefix(Vec<String>),
    /// The whole line, exactly (surrounding blanks aside): the only way a refused construct
    /// (a redirection, a variable…) can be allowed, and then the line runs with `/bin/sh -c`.
    Exact(String),
}

/// One rule: a decision about the commands its pattern matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandRule {
    pub decision: CommandDecision,
    pub pattern: Pattern,
    /// Why, as the user reads it when a command is asked about or denied.
    pub reason: String,
    pub source: RuleSource,
    /// The rule holds only when some argument after the prefix is one of these options
    /// (empty: always). See [`option_matches`] for how an option is matched.
    pub with_any: Vec<String>,
    /// The rule does not hold when some argument after the prefix is one of these options
    /// (a read-only command made to write or run something).
    pub without: Vec<String>,
    /// The user's rule ended with a `*` word (`"make test *"`): a user's allow then also
    /// matches an argv with more arguments after its words, each judged by the defaults'
    /// asks and the path checks (see [`CommandRules::judge`]). Ask and deny rules match
    /// every longer argv anyway.
    pub star: bool,
}

impl CommandRule {
    /// A user's rule for `line`: a plain command becomes its words (a trailing `*` word
    /// opening an allow to more arguments), anything else (a line of several commands, a
    /// refused construct) an exact form.
    pub fn user(decision: CommandDecision, line: &str, reason: impl Into<String>) -> CommandRule {
        let trimmed = line.trim();
        let (words, star) = match trimmed.strip_suffix('*') {
            Some(words) if words.ends_with([' ', '\t']) && !words.trim().is_empty() => {
                (words, true)
            }
            _ => (trimmed, false),
        };
        let (pattern, star) = match parse(words) {
            Ok(c) if c.parts.len() == 1 => (
                Pattern::Prefix(c.parts.into_iter().flatten().collect()),
                star,
            ),
            _ => (Pattern::Exact(trimmed.to_owned()), false),
        };
        CommandRule {
            decision,
            pattern,
            reason: reason.into(),
            source: RuleSource::User,
            with_any: Vec::new(),
            without: Vec::new(),
            star,
        }
    }

    fn default(
        decision: CommandDecision,
        prefix: &[&str],
        with_any: &[&str],
        without: &[&str],
        reason: &str,
    ) -> CommandRule {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect();
        CommandRule {
            decision,
            pattern: Pattern::Prefix(words(prefix)),
            reason: reason.to_owned(),
            source: RuleSource::Default,
            with_any: words(with_any),
            without: words(without),
            star: false,
        }
    }

    /// Whether this rule holds for the plain command `argv`.
    pub(super) fn matches(&self, argv: &[String]) -> bool {
        self.hits(argv).is_some()
    }

    /// How many words of an argv this rule names (0 for an exact form).
    fn named(&self) -> usize {
        match &self.pattern {
            Pattern::Prefix(words) => words.len(),
            Pattern::Exact(_) => 0,
        }
    }

    /// Where in `argv` the rule's options are (empty when it has none), if the rule holds.
    fn hits(&self, argv: &[String]) -> Option<Vec<usize>> {
        let Pattern::Prefix(prefix) = &self.pattern else {
            return None;
        };
        let (program, rest) = prefix.split_first()?;
        let first = argv.first()?;
        let by_name = self.decision != CommandDecision::Allow;
        let name = if by_name { file_name(first) } else { first };
        let program_matches = match program.strip_suffix('*') {
            Some(stem) if by_name => name.starts_with(stem),
            _ => name == program,
        };
        if !program_matches || argv.len() < prefix.len() || argv[1..prefix.len()] != *rest {
            return None;
        }
        // A user's allow covers the words it names, and more only after its `*`.
        if self.source == RuleSource::User
            && self.decision == CommandDecision::Allow
            && !self.star
            && argv.len() != prefix.len()
        {
            return None;
        }
        let found = |options: &[String]| {
            (prefix.len()..argv.len())
                .filter(|&at| options.iter().any(|o| option_matches(o, &argv[at])))
                .collect::<Vec<usize>>()
        };
        if !found(&self.without).is_empty() {
            return None;
        }
        let hits = found(&self.with_any);
        (self.with_any.is_empty() || !hits.is_empty()).then_some(hits)
    }
}

/// The last component of a program's path.
fn file_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// Whether the argument `arg` is the option `option`:
/// - `-x` (one letter) is also found in a cluster of short options (`-rf`, `-xdf`), up to
///   the first character that is not a letter or a digit (in `-r/etc/hostname` the `s` is
///   the value's, as getopt reads it: no option letter follows a `/`, `.`, `-`…);
/// - `--long` also as `--long=value` and as any abbreviation of at least one letter
///   (`--har` for `--hard`: git and GNU tools accept unambiguous abbreviations, and taking
///   every abbreviation is the cautious reading);
/// - `-long` (find's) as itself or `-long=…`;
/// - `+` and `:` are any argument starting with them (git's forced refspec `+main`, and
///   `:main`, which deletes the remote branch);
/// - `=` is a variable assignment, any argument that is not an option and has a name
///   before an `=` (`CC=x`: make takes it as one).
pub fn option_matches(option: &str, arg: &str) -> bool {
    if option == "+" || option == ":" {
        return arg.len() > 1 && arg.starts_with(option);
    }
    if option == "=" {
        return !arg.starts_with('-') && arg.find('=').is_some_and(|at| at > 0);
    }
    if let Some(long) = option.strip_prefix("--") {
        let Some(given) = arg.strip_prefix("--") else {
            return false;
        };
        let given = given.split_once('=').map_or(given, |(name, _)| name);
        return !given.is_empty() && long.starts_with(given);
    }
    if let Some(short) = option.strip_prefix('-') {
        if short.chars().count() == 1 {
            let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.starts_with('-')) else {
                return false;
            };
            return cluster
                .split(|c: char| !c.is_ascii_alphanumeric())
                .next()
                .is_some_and(|letters| letters.contains(short));
        }
        return arg == option || arg.split_once('=').is_some_and(|(name, _)| name == option);
    }
    arg == option
}

/// The values `option` is given in `args`: attached (`--file=F`, `-fF`, `-rfF`, `-newer=F`)
/// or the next word (`--file F`, `-f F`, `-rf F`, `-newer F`).
fn option_values<'a>(option: &str, args: &'a [String]) -> Vec<&'a str> {
    let mut values = Vec::new();
    for (at, arg) in args.iter().enumerate() {
        if !option_matches(option, arg) {
            continue;
        }
        let next = args.get(at + 1).map(String::as_str);
        let attached = match option.strip_prefix('-') {
            Some(short) if short.chars().count() == 1 => arg[1..]
                .find(short)
                .map(|i| &arg[1 + i + short.len()..])
                .filter(|rest| !rest.is_empty()),
            _ => arg.split_once('=').map(|(_, value)| value),
        };
        values.extend(attached.or(next));
    }
    values
}

/// The judgement of one plain command of a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartJudgement {
    pub argv: Vec<String>,
    pub decision: CommandDecision,
    pub reason: String,
}

/// The judgement of a whole line: the strictest of its parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgement {
    pub decision: CommandDecision,
    /// Each plain command and what it came to (empty when the line was refused, or allowed
    /// as an exact form).
    pub parts: Vec<PartJudgement>,
    /// Why: the reasons of the parts that decided, joined.
    pub reason: String,
}

/// The rules `run_command` calls are judged by: the defaults and the user's.
#[derive(Clone, Debug)]
pub struct CommandRules {
    pub rules: Vec<CommandRule>,
}

/// Programs that run another command given in their arguments: a deny rule that holds
/// for that command holds for the wrapper too (`env rm -rf x`, `find . -exec rm -rf {} ;`).
const WRAPPERS: &[&str] = &[
    "env", "nice", "ionice", "nohup", "timeout", "time", "command", "exec", "stdbuf", "xargs",
    "setsid", "find", "chrt", "taskset", "watch", "flock", "strace", "ltrace", "parallel",
    "unbuffer", "script", "busybox",
];

/// Shells and interpreters: what is piped into them is run as a program.
const INTERPRETERS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "fish",
    "csh",
    "tcsh",
    "busybox",
    "python",
    "python2",
    "python3",
    "perl",
    "ruby",
    "node",
    "nodejs",
    "php",
    "lua",
    "osascript",
    "pwsh",
];

/// A default rule: the argv prefix, the options it holds with, the reason.
type Row = (
    &'static [&'static str],
    &'static [&'static str],
    &'static str,
);

/// What an option of a program does beyond what the program does alone.
#[derive(Clone, Copy, Debug)]
enum Does {
    /// It writes a file, runs a program, evaluates code or takes the names of the files to
    /// read from elsewhere (where the path checks cannot see them): the command asks, for
    /// this reason (a user's allow lifts it only for an argument the rule names).
    Asks(&'static str),
    /// Its value is a file the program reads: the value passes the path checks (they judge
    /// every word and every attached value too; this names the ones that matter).
    ReadsFile,
}
use Does::{Asks, ReadsFile};

/// Whether a program is allowed by default (unless one of its asking options is given).
#[derive(Clone, Copy, Debug)]
enum Reads {
    /// It only reads: allowed, for this reason.
    Only(&'static str),
    /// These subcommands only read: allowed, for this reason.
    Subcommands(&'static [&'static str], &'static str),
    /// It may change things: it asks.
    No,
}

/// A program the defaults know, and its options that are more than reading.
struct Program {
    name: &'static str,
    reads: Reads,
    options: &'static [(&'static str, Does)],
}

const ONLY_READS: Reads = Reads::Only("only reads");
const NOTHING: &[(&str, Does)] = &[];

/// Git subcommands that only read the repository, unless given one of git's asking options.
const GIT_READS: &[&str] = &[
    "status", "log", "diff", "show", "blame", "shortlog", "describe", "ls-files",
];

/// Git's options (of any subcommand).
#[rustfmt::skip]
const GIT: &[(&str, Does)] = &[
    ("--output", Asks("git --output writes its output to a file")),
    ("--ext-diff", Asks("git --ext-diff runs an external diff program")),
    ("--textconv", Asks("git --textconv runs text conversion programs")),
    ("--exec-path", Asks("git --exec-path runs git's programs from another directory")),
    ("--show-signature", Asks("git --show-signature runs gpg to check signatures")),
    ("--contents", ReadsFile), ("--ignore-revs-file", ReadsFile), ("-O", ReadsFile),
    ("--exclude-from", ReadsFile),
];

#[rustfmt::skip]
const RG: &[(&str, Does)] = &[
    ("--pre", Asks("rg --pre runs a program on every file")),
    ("--pre-glob", Asks("rg --pre-glob chooses the files rg --pre runs a program on")),
    ("-z", Asks("rg -z runs decompression programs")),
    ("--search-zip", Asks("rg --search-zip runs decompression programs")),
    ("--hostname-bin", Asks("rg --hostname-bin runs a program")),
    ("-f", ReadsFile), ("--file", ReadsFile), ("--ignore-file", ReadsFile),
];

#[rustfmt::skip]
const GREP: &[(&str, Does)] = &[
    ("-f", ReadsFile), ("--file", ReadsFile), ("--exclude-from", ReadsFile),
];

#[rustfmt::skip]
const FILE: &[(&str, Does)] = &[
    ("-C", Asks("file -C compiles a magic file, writing it")),
    ("--compile", Asks("file --compile compiles a magic file, writing it")),
    ("-f", Asks("file -f reads the names of the files to read from a file")),
    ("--files-from", Asks("file --files-from reads the names of the files to read from a file")),
    ("-z", Asks("file -z runs decompression programs")),
    ("-Z", Asks("file -Z runs decompression programs")),
    ("--uncompress", Asks("file --uncompress runs decompression programs")),
    ("--uncompress-noreport", Asks("file --uncompress-noreport runs decompression programs")),
    ("-m", ReadsFile), ("--magic-file", ReadsFile),
];

#[rustfmt::skip]
const SORT: &[(&str, Does)] = &[
    ("-o", Asks("sort -o writes its output to a file")),
    ("--output", Asks("sort --output writes its output to a file")),
    ("-T", Asks("sort -T writes temporary files to a directory")),
    ("--temporary-directory", Asks("sort --temporary-directory writes temporary files to a directory")),
    ("--compress-program", Asks("sort --compress-program runs a program")),
    ("--files0-from", Asks("sort --files0-from reads the names of the files to read from a file")),
    ("--random-source", ReadsFile),
];

#[rustfmt::skip]
const FIND: &[(&str, Does)] = &[
    ("-exec", Asks("find -exec runs a program on every file")),
    ("-execdir", Asks("find -execdir runs a program on every file")),
    ("-ok", Asks("find -ok runs a program on every file")),
    ("-okdir", Asks("find -okdir runs a program on every file")),
    ("-delete", Asks("find -delete deletes files")),
    ("-fprint", Asks("find -fprint writes a file")),
    ("-fprint0", Asks("find -fprint0 writes a file")),
    ("-fprintf", Asks("find -fprintf writes a file")),
    ("-fls", Asks("find -fls writes a file")),
    ("-files0-from", Asks("find -files0-from reads the names of the files to read from a file")),
    ("-newer", ReadsFile), ("-anewer", ReadsFile), ("-cnewer", ReadsFile),
    ("-samefile", ReadsFile),
];

#[rustfmt::skip]
const DU: &[(&str, Does)] = &[
    ("--files0-from", Asks("du --files0-from reads the names of the files to read from a file")),
    ("-X", ReadsFile), ("--exclude-from", ReadsFile),
];

#[rustfmt::skip]
const WC: &[(&str, Does)] = &[
    ("--files0-from", Asks("wc --files0-from reads the names of the files to read from a file")),
];

#[rustfmt::skip]
const DATE: &[(&str, Does)] = &[
    ("-s", Asks("date -s sets the system clock")),
    ("--set", Asks("date --set sets the system clock")),
    ("-f", ReadsFile), ("--file", ReadsFile), ("-r", ReadsFile), ("--reference", ReadsFile),
];

#[rustfmt::skip]
const PRINTF: &[(&str, Does)] = &[("-v", Asks("printf -v assigns a shell variable"))];

/// make runs the makefile's recipes, which the user's rule for `make test` means; these
/// make it run other code.
#[rustfmt::skip]
const MAKE: &[(&str, Does)] = &[
    ("--eval", Asks("make --eval evaluates make code, which can run any command")),
    ("-E", Asks("make -E evaluates make code, which can run any command")),
    ("-f", Asks("make -f reads another makefile, which can run any command")),
    ("--file", Asks("make --file reads another makefile, which can run any command")),
    ("--makefile", Asks("make --makefile reads another makefile, which can run any command")),
    ("-C", Asks("make -C runs another directory's makefile")),
    ("--directory", Asks("make --directory runs another directory's makefile")),
    ("-I", Asks("make -I includes makefiles from another directory")),
    ("--include-dir", Asks("make --include-dir includes makefiles from another directory")),
    ("=", Asks("a variable assignment on make's command line (NAME=value) overrides the \
                makefile's variables (SHELL, CC…), which can run any command")),
];

/// The programs the defaults know: one table of options each.
#[rustfmt::skip]
const PROGRAMS: &[Program] = &[
    Program { name: "git", reads: Reads::Subcommands(GIT_READS, "reads the repository"), options: GIT },
    Program { name: "ls", reads: ONLY_READS, options: NOTHING },
    Program { name: "rg", reads: ONLY_READS, options: RG },
    Program { name: "grep", reads: ONLY_READS, options: GREP },
    Program { name: "cat", reads: ONLY_READS, options: NOTHING },
    Program { name: "head", reads: ONLY_READS, options: NOTHING },
    Program { name: "tail", reads: ONLY_READS, options: NOTHING },
    Program { name: "wc", reads: ONLY_READS, options: WC },
    Program { name: "pwd", reads: ONLY_READS, options: NOTHING },
    Program { name: "date", reads: ONLY_READS, options: DATE },
    Program { name: "echo", reads: ONLY_READS, options: NOTHING },
    Program { name: "printf", reads: ONLY_READS, options: PRINTF },
    Program { name: "true", reads: ONLY_READS, options: NOTHING },
    Program { name: "false", reads: ONLY_READS, options: NOTHING },
    Program { name: "file", reads: ONLY_READS, options: FILE },
    Program { name: "stat", reads: ONLY_READS, options: NOTHING },
    Program { name: "du", reads: ONLY_READS, options: DU },
    Program { name: "df", reads: ONLY_READS, options: NOTHING },
    Program { name: "which", reads: ONLY_READS, options: NOTHING },
    Program { name: "basename", reads: ONLY_READS, options: NOTHING },
    Program { name: "dirname", reads: ONLY_READS, options: NOTHING },
    Program { name: "uname", reads: ONLY_READS, options: NOTHING },
    Program { name: "whoami", reads: ONLY_READS, options: NOTHING },
    Program { name: "sort", reads: ONLY_READS, options: SORT },
    Program { name: "find", reads: ONLY_READS, options: FIND },
    Program { name: "make", reads: Reads::No, options: MAKE },
    Program { name: "gmake", reads: Reads::No, options: MAKE },
];

/// Known destructive forms: denied whatever the user's rules allow.
#[rustfmt::skip]
const DENIES: &[Row] = &[
    (&["rm"], &["-r", "-R", "--recursive"], "rm -r deletes whole directory trees"),
    (&["sudo"], &[], "runs as another user"),
    (&["doas"], &[], "runs as another user"),
    (&["su"], &[], "runs as another user"),
    (&["pkexec"], &[], "runs as another user"),
    (&["dd"], &[], "dd writes raw devices and files"),
    (&["mkfs*"], &[], "makes a file system, erasing a device"),
    (&["mkswap"], &[], "erases a device"),
    (&["wipefs"], &[], "erases a device"),
    (&["fdisk"], &[], "changes partitions"),
    (&["sfdisk"], &[], "changes partitions"),
    (&["parted"], &[], "changes partitions"),
    (&["shred"], &[], "destroys files beyond recovery"),
    (&["chmod"], &["-R", "--recursive"], "changes permissions of whole trees"),
    (&["chown"], &["-R", "--recursive"], "changes owners of whole trees"),
    (&["chgrp"], &["-R", "--recursive"], "changes groups of whole trees"),
    (&["shutdown"], &[], "stops the machine"),
    (&["reboot"], &[], "stops the machine"),
    (&["poweroff"], &[], "stops the machine"),
    (&["halt"], &[], "stops the machine"),
    (&["git", "push"], &["--force", "-f", "--force-with-lease", "--mirror", "--delete", "-d", "+", ":"],
     "git push --force rewrites the remote's history"),
    (&["git", "reset"], &["--hard"], "git reset --hard throws away uncommitted work"),
    (&["git", "clean"], &["-f", "--force"], "git clean -f deletes untracked files"),
    (&["git", "checkout"], &["-f", "--force"], "git checkout -f throws away uncommitted work"),
    (&["git", "filter-branch"], &[], "rewrites the repository's history"),
    (&["crontab"], &["-r"], "crontab -r deletes every scheduled job"),
    (&["kill"], &["-1"], "kill -1 signals every process"),
    (&["killall"], &[], "kills processes by name"),
    (&["pkill"], &[], "kills processes by name"),
    (&["eval"], &[], "runs a shell string, which cannot be judged word by word"),
];

/// Shells: one given a string with `-c` runs what no rule can judge.
const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh",
];

impl Default for CommandRules {
    /// The defaults: read-only commands allowed, known destructive forms denied, the
    /// options that make a program write or run something asking, the rest asks.
    fn default() -> CommandRules {
        use CommandDecision::{Allow, Ask, Deny};
        let d = CommandRule::default;
        let mut rules = Vec::new();
        for program in PROGRAMS {
            let asking: Vec<&str> = program
                .options
                .iter()
                .filter(|(_, does)| matches!(does, Asks(_)))
                .map(|(option, _)| *option)
                .collect();
            match program.reads {
                Reads::Only(reason) => {
                    rules.push(d(Allow, &[program.name], &[], &asking, reason));
                }
                Reads::Subcommands(subcommands, reason) => {
                    for sub in subcommands {
                        rules.push(d(Allow, &[program.name, sub], &[], &asking, reason));
                    }
                }
                Reads::No => {}
            }
            for (option, does) in program.options {
                if let Asks(reason) = does {
                    rules.push(d(Ask, &[program.name], &[option], &[], reason));
                }
            }
        }
        for interpreter in INTERPRETERS {
            let options = ["-c", "-e", "--eval", "-r"];
            rules.push(d(
                Ask,
                &[interpreter],
                &options,
                &[],
                "runs code given on the command line",
            ));
        }
        for (prefix, options, reason) in DENIES {
            rules.push(d(Deny, prefix, options, &[], reason));
        }
        for shell in SHELLS {
            let reason = "runs a shell string, which cannot be judged word by word";
            rules.push(d(Deny, &[shell], &["-c"], &[], reason));
        }
        CommandRules { rules }
    }
}

impl CommandRules {
    /// The defaults and `user`'s rules on top.
    pub fn with_user(user: Vec<CommandRule>) -> CommandRules {
        let mut rules = CommandRules::default();
        rules.rules.extend(user);
        rules
    }

    /// The lines rules allow exactly (what the shell tool's configuration must list as its
    /// exact forms for them to run).
    pub fn exact_allowed_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .rules
            .iter()
            .filter_map(|r| match &r.pattern {
                Pattern::Exact(line) if self.exact_allowed(line) => Some(line.clone()),
                _ => None,
            })
            .collect();
        lines.dedup();
        lines
    }

    /// Whether `line` is one a rule allows as an exact form (run with `/bin/sh -c` when it
    /// is not a plain command).
    pub fn exact_allowed(&self, line: &str) -> bool {
        self.exact(line) == Some(CommandDecision::Allow)
    }

    /// The strictest decision of the exact-form rules for `line`, if any names it.
    fn exact(&self, line: &str) -> Option<CommandDecision> {
        let line = line.trim();
        self.rules
            .iter()
            .filter(|r| matches!(&r.pattern, Pattern::Exact(l) if l == line))
            .map(|r| r.decision)
            .max()
    }

    fn exact_reason(&self, line: &str, decision: CommandDecision) -> String {
        let line = line.trim();
        self.rules
            .iter()
            .find(|r| {
                r.decision == decision && matches!(&r.pattern, Pattern::Exact(l) if l == line)
            })
            .map_or_else(String::new, |r| {
                format!("your rule for exactly this line: {}", r.reason)
            })
    }

    /// Judge `line`: every part passes the rules, the strictest part decides.
    ///
    /// A part is judged in this order: a deny rule (the defaults' or the user's, also for
    /// a command a wrapper runs), a pipe into an interpreter and a word naming a protected
    /// file deny; a user's ask asks; a user's allow allows the argv it names exactly, or,
    /// when it ends with `*`, its words followed by arguments that raise none of the
    /// defaults' asks and pass the path checks; then the defaults: git's options before
    /// the subcommand ask, the asking options of the programs' tables ask, a read-only
    /// program is allowed when no argument names a path outside the working directory, and
    /// the rest asks.
    pub fn judge(&self, line: &str) -> Judgement {
        let exact = self.exact(line);
        let command = match parse(line) {
            Ok(c) => c,
            Err(refusal) => {
                return match exact {
                    Some(decision) => Judgement {
                        decision,
                        parts: Vec::new(),
                        reason: self.exact_reason(line, decision),
                    },
                    None => Judgement {
                        decision: CommandDecision::Deny,
                        parts: Vec::new(),
                        reason: format!("{refusal} (or a rule must allow exactly this line)"),
                    },
                };
            }
        };
        let mut parts: Vec<PartJudgement> = command
            .parts
            .iter()
            .enumerate()
            .map(|(i, argv)| {
                let piped_into = i > 0 && command.joins[i - 1] == Join::Pipe;
                self.judge_part(argv, piped_into)
            })
            .collect();
        // An exact allow or ask of the whole line stands for the user's allow or ask of each
        // part: it loosens asks, never a default deny.
        if let Some(decision) = exact {
            let reason = self.exact_reason(line, decision);
            for part in &mut parts {
                let loosens = decision == CommandDecision::Allow
                    && part.decision == CommandDecision::Ask
                    && !part.reason.starts_with(USER_ASK);
                if loosens || (decision > part.decision) {
                    part.decision = decision;
                    part.reason = reason.clone();
                }
            }
        }
        let decision = parts
            .iter()
            .map(|p| p.decision)
            .max()
            .unwrap_or(CommandDecision::Ask);
        let home = std::env::var("HOME").ok();
        let mut reasons: Vec<String> = Vec::new();
        for part in parts.iter().filter(|p| p.decision == decision) {
            let reason = format!("{}: {}", shown(&part.argv, home.as_deref()), part.reason);
            if !reasons.contains(&reason) {
                reasons.push(reason);
            }
        }
        Judgement {
            decision,
            parts,
            reason: reasons.join("; "),
        }
    }

    /// Judge one plain command. `piped_into`: another command's output is its input.
    fn judge_part(&self, argv: &[String], piped_into: bool) -> PartJudgement {
        let verdict = |decision, reason: String| PartJudgement {
            argv: argv.to_vec(),
            decision,
            reason,
        };
        if let Some(reason) = self.deny_reason(argv) {
            return verdict(CommandDecision::Deny, reason);
        }
        let program = argv.first().map_or("", |p| file_name(p));
        let runs_interpreter = INTERPRETERS.contains(&program)
            || (WRAPPERS.contains(&program)
                && argv[1..]
                    .iter()
                    .any(|a| INTERPRETERS.contains(&file_name(a))));
        if piped_into && runs_interpreter {
            return verdict(
                CommandDecision::Deny,
                format!("a pipe into {program} runs whatever the command before it prints"),
            );
        }
        if argv
            .iter()
            .any(|a| path_candidates(a).into_iter().any(names_protected))
        {
            return verdict(CommandDecision::Deny, PROTECTED_REASON.to_owned());
        }
        let holding = |source: RuleSource, decision: CommandDecision| {
            self.rules
                .iter()
                .find(|r| r.source == source && r.decision == decision && r.matches(argv))
        };
        if let Some(rule) = holding(RuleSource::User, CommandDecision::Ask) {
            return verdict(CommandDecision::Ask, format!("{USER_ASK}{}", rule.reason));
        }
        // The user's allow naming the most words leaves the fewest arguments to judge.
        let user_allow = self
            .rules
            .iter()
            .filter(|r| {
                r.source == RuleSource::User
                    && r.decision == CommandDecision::Allow
                    && r.matches(argv)
            })
            .max_by_key(|r| r.named());
        if let Some(rule) = user_allow {
            if let Some(reason) = self.added_ask(argv, rule.named()) {
                return verdict(
                    CommandDecision::Ask,
                    format!(
                        "{reason} (an argument after the words your rule names: {})",
                        rule.reason
                    ),
                );
            }
            return verdict(
                CommandDecision::Allow,
                format!("your rule: {}", rule.reason),
            );
        }
        if let Some(reason) = git_global_ask(argv, 1) {
            return verdict(CommandDecision::Ask, reason);
        }
        if let Some(rule) = holding(RuleSource::Default, CommandDecision::Ask) {
            return verdict(CommandDecision::Ask, rule.reason.clone());
        }
        if let Some(rule) = holding(RuleSource::Default, CommandDecision::Allow) {
            // The defaults allow reading where the command runs, not anywhere.
            if leaves_directory(argv, 1) {
                return verdict(CommandDecision::Ask, OUTSIDE_REASON.to_owned());
            }
            return verdict(CommandDecision::Allow, rule.reason.clone());
        }
        verdict(
            CommandDecision::Ask,
            "no rule allows it: it may change things".to_owned(),
        )
    }

    /// Why the defaults ask about an argument of `argv` at `from` or later (after the words
    /// of a user's allow), if they do: it is one of git's options before the subcommand, a
    /// default ask rule holds through it (for `argv` or for a command a wrapper runs), or it
    /// names a path outside the working directory.
    fn added_ask(&self, argv: &[String], from: usize) -> Option<String> {
        if let Some(reason) = git_global_ask(argv, from) {
            return Some(reason);
        }
        let wrapper = WRAPPERS.contains(&argv.first().map_or("", |p| file_name(p)));
        let starts = if wrapper { 0..argv.len() } else { 0..1 };
        for at in starts {
            let words = &argv[at..];
            for rule in self
                .rules
                .iter()
                .filter(|r| r.source == RuleSource::Default && r.decision == CommandDecision::Ask)
            {
                let Some(hits) = rule.hits(words) else {
                    continue;
                };
                let added = if rule.with_any.is_empty() {
                    at + rule.named() > from
                } else {
                    hits.iter().any(|hit| at + hit >= from)
                };
                if added {
                    return Some(rule.reason.clone());
                }
            }
            if let Some(reason) = git_global_ask(words, from.saturating_sub(at).max(1)) {
                return Some(reason);
            }
        }
        leaves_directory(argv, from).then(|| OUTSIDE_REASON.to_owned())
    }

    /// Why a deny rule holds for `argv` or for a command it wraps (`env`, `xargs`, `find
    /// -exec`…), if one does.
    fn deny_reason(&self, argv: &[String]) -> Option<String> {
        let denies = |words: &[String]| {
            let plain = git_without_global_options(words);
            let words = plain.as_deref().unwrap_or(words);
            self.rules
                .iter()
                .find(|r| r.decision == CommandDecision::Deny && r.matches(words))
                .map(|r| r.reason.clone())
        };
        if let Some(reason) = denies(argv) {
            return Some(reason);
        }
        let wrapper = argv.first().map_or("", |p| file_name(p));
        if !WRAPPERS.contains(&wrapper) {
            return None;
        }
        // Every later word may start the wrapped command (and wrappers nest): cheaper to
        // try them all than to know each wrapper's options, and erring towards deny.
        (1..argv.len())
            .find_map(|at| denies(&argv[at..]))
            .map(|reason| format!("{reason} (run by {wrapper})"))
    }
}

/// `argv` as the user reads it: the home directory a leading `~` expanded to is `~` again
/// (a reason never shows where the home directory is).
fn shown(argv: &[String], home: Option<&str>) -> String {
    let home = home.filter(|h| !h.is_empty() && *h != "/");
    argv.iter()
        .map(|word| match home {
            Some(h) if word == h => "~".to_owned(),
            Some(h) if word.starts_with(h) && word[h.len()..].starts_with('/') => {
                format!("~{}", &word[h.len()..])
            }
            _ => word.clone(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Git's options before the subcommand (`-C DIR`, `-c NAME=VALUE`, `--git-dir=…`,
/// `--no-pager`…) that would hide the subcommand from a rule, if `argv` is a git command
/// with some: `git -C x push -f` is judged as `git push -f`.
fn git_without_global_options(argv: &[String]) -> Option<Vec<String>> {
    if argv.first().map(|p| file_name(p)) != Some("git") {
        return None;
    }
    let mut at = 1;
    while let Some(word) = argv.get(at).filter(|w| w.starts_with('-')) {
        let takes_value = [
            "-C",
            "-c",
            "--git-dir",
            "--work-tree",
            "--namespace",
            "--config-env",
        ]
        .contains(&word.as_str());
        at += if takes_value { 2 } else { 1 };
    }
    (at > 1).then(|| {
        std::iter::once(argv[0].clone())
            .chain(argv.iter().skip(at).cloned())
            .collect()
    })
}

/// Why git's options before the subcommand at `from` or later ask, if `argv` is a git
/// command with some: they point git at other directories or configuration, which can run
/// programs. The options are named, never their values.
fn git_global_ask(argv: &[String], from: usize) -> Option<String> {
    if argv.first().map(|p| file_name(p)) != Some("git") {
        return None;
    }
    let global: Vec<&str> = argv[1..]
        .iter()
        .enumerate()
        .take_while(|(_, w)| w.starts_with('-'))
        .filter(|(i, _)| i + 1 >= from)
        .map(|(_, w)| w.split_once('=').map_or(w.as_str(), |(name, _)| name))
        .collect();
    if global.is_empty() {
        return None;
    }
    let config = global
        .iter()
        .any(|o| *o == "-c" || o.starts_with("--config-env"));
    Some(if config {
        "git -c sets configuration that can run programs".to_owned()
    } else {
        format!(
            "git {} points git at other directories or programs",
            global.join(" ")
        )
    })
}

/// The prefix of the reason of a part a user's ask rule holds for.
const USER_ASK: &str = "your rule asks: ";

/// Why a command naming a protected file is denied (never the file).
const PROTECTED_REASON: &str = "an argument names a protected file (keys and credentials, Emacs \
                                init files, .git internals, skill files, system password files)";

/// Why a read-only command reaching out of the working directory asks (never the path).
const OUTSIDE_REASON: &str = "an argument names a path outside the working directory (absolute, \
                              starting with ~ or going up with ..)";

/// The texts of `arg` a program may take as a path: the word itself, what follows each `=`
/// (`--file=F`, `NAME=F`), and for a short option (`-fF`, `-rfF`) every suffix after its
/// first letter, since any of them may be where an attached value starts.
fn path_candidates(arg: &str) -> Vec<&str> {
    let mut texts = vec![arg];
    texts.extend(arg.match_indices('=').map(|(at, _)| &arg[at + 1..]));
    if arg.starts_with('-') && !arg.starts_with("--") {
        texts.extend(arg.char_indices().skip(2).map(|(at, _)| &arg[at..]));
    }
    texts
}

/// Whether `text` names a protected file (see [`crate::notes::paths::PROTECTED`]).
fn names_protected(text: &str) -> bool {
    crate::notes::paths::names_protected(std::path::Path::new(text))
}

/// Whether `text` is a path that may lead out of the working directory: absolute, starting
/// with `~` (a literal one, quoted) or with a `..` component.
fn leads_out(text: &str) -> bool {
    text.starts_with('/') || text.starts_with('~') || text.split('/').any(|c| c == "..")
}

/// Whether an argument of `argv` at `from` or later names a path that may lead out of the
/// working directory: the argument, a value in it (see [`path_candidates`]), or the value of
/// one of the program's file options (its table's [`Does::ReadsFile`] options).
fn leaves_directory(argv: &[String], from: usize) -> bool {
    let Some(args) = argv.get(from..) else {
        return false;
    };
    if args
        .iter()
        .any(|a| path_candidates(a).into_iter().any(leads_out))
    {
        return true;
    }
    let program = argv.first().map_or("", |p| file_name(p));
    PROGRAMS
        .iter()
        .filter(|p| p.name == program)
        .flat_map(|p| p.options)
        .filter(|(_, does)| matches!(does, ReadsFile))
        .any(|(option, _)| option_values(option, args).into_iter().any(leads_out))
}

// ---------------------------------------------------------------------------------------------
// The gate.

impl GateRules {
    /// The rules `run_command` calls are judged by, as gate rules: attached when the tool is
    /// offered (attached without it, they judge nothing).
    pub fn commands(rules: CommandRules) -> GateRules {
        GateRules {
            source: "command rules".into(),
            gates: vec![Box::new(CommandGate { rules })],
        }
    }
}

/// The name of the shell tool.
pub const RUN_COMMAND: &str = "run_command";

/// Judges `run_command` calls by the [`CommandRules`]: allowed commands run, denied ones are
/// refused with the rule's reason, the rest ask — every time: an approval "for this
/// conversation" of one command is not one of the next. Other actions pass.
pub struct CommandGate {
    pub rules: CommandRules,
}

impl Gate for CommandGate {
    fn name(&self) -> &str {
        "commands"
    }

    fn check(&self, action: &Action, _: &Context) -> Result<Decision, String> {
        let Action::Tool { name, args } = action else {
            return Ok(Decision::Allow);
        };
        if name != RUN_COMMAND {
            return Ok(Decision::Allow);
        }
        let args = crate::sexp::json::to_json(args.value());
        let Some(line) = args["command"].as_str() else {
            return Ok(Decision::Deny(
                "run_command needs a command (a string)".to_owned(),
            ));
        };
        let judgement = self.rules.judge(line);
        // A directory the command asks to write in is the user's to grant: the sandbox
        // lets it write there only after this question was answered yes.
        let writes = args["writes"]
            .as_str()
            .map(str::trim)
            .filter(|w| !w.is_empty());
        Ok(match (judgement.decision, writes) {
            (CommandDecision::Deny, _) => {
                Decision::Deny(format!("run_command: {}", judgement.reason))
            }
            (_, Some(dir)) => Decision::Ask(format!(
                "run_command: {}; it would write in {dir}",
                judgement.reason
            )),
            (CommandDecision::Allow, None) => Decision::Allow,
            (CommandDecision::Ask, None) => {
                Decision::Ask(format!("run_command: {}", judgement.reason))
            }
        })
    }
}

#[cfg(test)]
mod tests;
