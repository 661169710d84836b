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
//! paths only), deny known destructive forms, and ask for everything else. User rules (from
//! `org-agent-permissions`) come on top: a user's deny or ask always holds, and a user's allow
//! may loosen a default *ask* but never a default *deny*: a destructive form stays denied
//! whatever a broad allow such as `(allow run_command "git")` says, so one careless rule
//! cannot open `git push --force` or `rm -rf`.

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
    /// A plain command whose argv starts with these words. The first word of a *default*
    /// deny rule matches the program's file name wherever it lives (`/usr/bin/sudo`), and a
    /// trailing `*` there matches a name prefix (`mkfs*`); allow rules match the word as
    /// written, so `./ls` is not `ls`.
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
}

impl CommandRule {
    /// A user's rule for `line`: a plain command becomes an argv prefix, anything else (a
    /// line of several commands, a refused construct) an exact form.
    pub fn user(decision: CommandDecision, line: &str, reason: impl Into<String>) -> CommandRule {
        let pattern = match parse(line) {
            Ok(c) if c.parts.len() == 1 => Pattern::Prefix(c.parts.into_iter().flatten().collect()),
            _ => Pattern::Exact(line.trim().to_owned()),
        };
        CommandRule {
            decision,
            pattern,
            reason: reason.into(),
            source: RuleSource::User,
            with_any: Vec::new(),
            without: Vec::new(),
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
        }
    }

    /// Whether this rule holds for the plain command `argv`.
    pub(super) fn matches(&self, argv: &[String]) -> bool {
        let Pattern::Prefix(prefix) = &self.pattern else {
            return false;
        };
        let Some((program, rest)) = prefix.split_first() else {
            return false;
        };
        let Some(first) = argv.first() else {
            return false;
        };
        let by_name = self.decision == CommandDecision::Deny;
        let name = if by_name { file_name(first) } else { first };
        let program_matches = match program.strip_suffix('*') {
            Some(stem) if by_name => name.starts_with(stem),
            _ => name == program,
        };
        if !program_matches || argv.len() < prefix.len() || argv[1..prefix.len()] != *rest {
            return false;
        }
        let args = &argv[prefix.len()..];
        let has = |options: &[String]| {
            options
                .iter()
                .any(|o| args.iter().any(|a| option_matches(o, a)))
        };
        (self.with_any.is_empty() || has(&self.with_any)) && !has(&self.without)
    }
}

/// The last component of a program's path.
fn file_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// Whether the argument `arg` is the option `option`:
/// - `-x` (one letter) is also found in a cluster of short options (`-rf`, `-xdf`);
/// - `--long` also as `--long=value` and as any abbreviation of at least one letter
///   (`--har` for `--hard`: git and GNU tools accept unambiguous abbreviations, and taking
///   every abbreviation is the cautious reading);
/// - `-long` (find's) as itself or `-long=…`;
/// - `+` and `:` are any argument starting with them (git's forced refspec `+main`, and
///   `:main`, which deletes the remote branch).
pub fn option_matches(option: &str, arg: &str) -> bool {
    if option == "+" || option == ":" {
        return arg.len() > 1 && arg.starts_with(option);
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
            return arg.len() > 1
                && arg.starts_with('-')
                && !arg.starts_with("--")
                && arg[1..].contains(short);
        }
        return arg == option || arg.split_once('=').is_some_and(|(name, _)| name == option);
    }
    arg == option
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

/// File names no command may name: credentials and keys.
const PROTECTED: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".netrc",
    ".authinfo",
    ".authinfo.gpg",
    ".pgpass",
    ".git-credentials",
    ".docker",
    ".kube",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    "id_dsa",
];

/// System files no command may name.
const PROTECTED_PATHS: &[&str] = &["/etc/shadow", "/etc/gshadow", "/etc/sudoers"];

/// A default rule: the argv prefix, the options it holds with (allow: without), the reason.
type Row = (
    &'static [&'static str],
    &'static [&'static str],
    &'static str,
);

/// Git subcommands that only read the repository, unless given one of [`GIT_WRITES`].
const GIT_READS: &[&str] = &[
    "status", "log", "diff", "show", "blame", "shortlog", "describe", "ls-files",
];

/// Options that make git's reading subcommands write a file or run a program.
const GIT_WRITES: &[&str] = &["--output", "--exec-path", "--ext-diff", "--textconv"];

/// Programs that only read, unless given one of their options listed here.
#[rustfmt::skip]
const READ_ONLY: &[(&str, &[&str])] = &[
    ("ls", &[]), ("rg", &["--pre", "--search-zip", "-z"]), ("grep", &[]), ("cat", &[]),
    ("head", &[]), ("tail", &[]), ("wc", &[]), ("pwd", &[]), ("date", &["-s", "--set"]),
    ("echo", &[]), ("printf", &["-v"]), ("true", &[]), ("false", &[]), ("file", &[]),
    ("stat", &[]), ("du", &[]), ("df", &[]), ("which", &[]), ("basename", &[]),
    ("dirname", &[]), ("uname", &[]), ("whoami", &[]),
    ("sort", &["-o", "--output", "--compress-program"]),
    ("find", &["-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0",
               "-fprintf", "-fls"]),
];

/// Default asks with a reason (a user's allow may loosen these).
#[rustfmt::skip]
const ASKS: &[Row] = &[
    (&["git"], &["--output"], "writes its output to a file"),
    (&["rg"], &["--pre"], "rg --pre runs a program on every file"),
    (&["find"], &["-exec", "-execdir", "-ok", "-okdir"], "find -exec runs a program on every file"),
    (&["find"], &["-delete"], "find -delete deletes files"),
    (&["sort"], &["-o", "--output"], "writes its output to a file"),
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
    /// The defaults: read-only commands allowed, known destructive forms denied, the rest
    /// asks.
    fn default() -> CommandRules {
        use CommandDecision::{Allow, Ask, Deny};
        let d = CommandRule::default;
        let mut rules = Vec::new();
        for sub in GIT_READS {
            rules.push(d(
                Allow,
                &["git", sub],
                &[],
                GIT_WRITES,
                "reads the repository",
            ));
        }
        for (program, without) in READ_ONLY {
            rules.push(d(Allow, &[program], &[], without, "only reads"));
        }
        for (prefix, options, reason) in ASKS {
            rules.push(d(Ask, prefix, options, &[], reason));
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
        let mut reasons: Vec<String> = Vec::new();
        for part in parts.iter().filter(|p| p.decision == decision) {
            let reason = format!("{}: {}", part.argv.join(" "), part.reason);
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
        if let Some(arg) = argv.iter().find(|a| names_protected(a)) {
            return verdict(
                CommandDecision::Deny,
                format!("{arg} names a protected file (keys and credentials)"),
            );
        }
        let holding = |source: RuleSource, decision: CommandDecision| {
            self.rules
                .iter()
                .find(|r| r.source == source && r.decision == decision && r.matches(argv))
        };
        if let Some(rule) = holding(RuleSource::User, CommandDecision::Ask) {
            return verdict(CommandDecision::Ask, format!("{USER_ASK}{}", rule.reason));
        }
        if let Some(rule) = holding(RuleSource::User, CommandDecision::Allow) {
            return verdict(
                CommandDecision::Allow,
                format!("your rule: {}", rule.reason),
            );
        }
        let global = git_global_options(argv);
        if !global.is_empty() {
            let config = global
                .iter()
                .any(|o| *o == "-c" || o.starts_with("--config-env"));
            return verdict(
                CommandDecision::Ask,
                if config {
                    "git -c sets configuration that can run programs".to_owned()
                } else {
                    format!(
                        "git {} points git at other directories or programs",
                        global.join(" ")
                    )
                },
            );
        }
        if let Some(rule) = holding(RuleSource::Default, CommandDecision::Ask) {
            return verdict(CommandDecision::Ask, rule.reason.clone());
        }
        if let Some(rule) = holding(RuleSource::Default, CommandDecision::Allow) {
            // The defaults allow reading where the command runs, not anywhere.
            if let Some(arg) = argv[1..].iter().find(|a| leaves_directory(a)) {
                return verdict(
                    CommandDecision::Ask,
                    format!("{arg} names a path outside the working directory"),
                );
            }
            return verdict(CommandDecision::Allow, rule.reason.clone());
        }
        verdict(
            CommandDecision::Ask,
            "no rule allows it: it may change things".to_owned(),
        )
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

/// Git's options before the subcommand, if any: they point git at other directories or
/// configuration, which can run programs.
fn git_global_options(argv: &[String]) -> Vec<&str> {
    if argv.first().map(String::as_str) != Some("git") {
        return Vec::new();
    }
    argv[1..]
        .iter()
        .take_while(|w| w.starts_with('-'))
        .map(String::as_str)
        .collect()
}

/// The prefix of the reason of a part a user's ask rule holds for.
const USER_ASK: &str = "your rule asks: ";

/// Whether `arg` (or the value of `--option=arg`) names a protected file.
fn names_protected(arg: &str) -> bool {
    let value = arg.split_once('=').map_or(arg, |(_, v)| v);
    [arg, value].iter().any(|a| {
        PROTECTED_PATHS.contains(a)
            || a.split('/').any(|component| {
                PROTECTED.contains(&component) || component.starts_with(".authinfo")
            })
    })
}

/// Whether `arg` (or the value of `--option=arg`) names a path that is not under the working
/// directory: absolute, or with a `..` component.
fn leaves_directory(arg: &str) -> bool {
    let value = arg.split_once('=').map_or(arg, |(_, v)| v);
    [arg, value]
        .iter()
        .any(|a| a.starts_with('/') || a.split('/').any(|c| c == ".."))
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
        Ok(match judgement.decision {
            CommandDecision::Allow => Decision::Allow,
            CommandDecision::Ask => Decision::Ask(format!("run_command: {}", judgement.reason)),
            CommandDecision::Deny => Decision::Deny(format!("run_command: {}", judgement.reason)),
        })
    }
}

#[cfg(test)]
mod tests;
