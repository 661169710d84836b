//! The servers the user lists, in the format of mcp.el's `mcp-hub-servers`:
//!
//! ```elisp
//! (("filesystem" . (:command "npx" :args ("-y" "@modelcontextprotocol/server-filesystem" "~/notes")))
//!  ("github" . (:url "https://api.example.com/mcp" :headers (:Authorization "Bearer …"))))
//! ```
//!
//! `:env` is a plist (`(:KEY "VALUE" …)`) or an alist; so are `:headers` (Emacs has already
//! looked up the values that name an auth-source entry, and made both alists of strings:
//! keywords reach the module lowercased, and environment variables' names have a case). org-agent's own keys: `:timeout`
//! (seconds to start, default 30) and `:call-timeout` (seconds per call, default 120). Keys
//! it does not know (mcp.el's `:roots`, say) are ignored, so a list made for mcp.el works as
//! it is.

use crate::sexp::{self, Value};
use std::time::Duration;
use thiserror::Error;

/// How long a server may take to start and list its tools, unless it says otherwise.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one call may take, unless the server's entry says otherwise.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// What is wrong with the list.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("org-agent-mcp-servers must be a list of (NAME . PLIST) entries, not {0}")]
    NotAList(String),
    #[error(
        "an entry of org-agent-mcp-servers must be (NAME . PLIST) with a string NAME, not {0}"
    )]
    BadEntry(String),
    #[error("MCP server {server}: {message}")]
    Server { server: String, message: String },
}

/// How org-agent reaches one server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A command whose stdin and stdout speak the protocol.
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// One server of the list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerSpec {
    /// The name as the user wrote it.
    pub name: String,
    /// The name as it prefixes tool names: letters, digits, `_` and `-` only.
    pub prefix: String,
    pub transport: Transport,
    pub start_timeout: Duration,
    pub call_timeout: Duration,
}

/// Read the list (nil is an empty one). Two servers whose names make the same prefix are an
/// error: their tools would take each other's names.
pub fn parse_servers(value: &Value) -> Result<Vec<ServerSpec>, ConfigError> {
    if sexp::is_nil(value) {
        return Ok(Vec::new());
    }
    let entries = sexp::list_items(value).map_err(|v| ConfigError::NotAList(sexp::print(v)))?;
    let mut out: Vec<ServerSpec> = Vec::new();
    for entry in entries {
        let spec = parse_entry(entry)?;
        if let Some(other) = out.iter().find(|s| s.prefix == spec.prefix) {
            return Err(ConfigError::Server {
                server: spec.name.clone(),
                message: format!(
                    "its tools would be named like those of {:?} ({}__…); rename one",
                    other.name, spec.prefix
                ),
            });
        }
        out.push(spec);
    }
    Ok(out)
}

fn parse_entry(entry: &Value) -> Result<ServerSpec, ConfigError> {
    let Value::Cons(cons) = entry else {
        return Err(ConfigError::BadEntry(sexp::print(entry)));
    };
    let Value::String(name) = cons.car() else {
        return Err(ConfigError::BadEntry(sexp::print(entry)));
    };
    let name = name.to_string();
    let bad = |message: String| ConfigError::Server {
        server: name.clone(),
        message,
    };
    if name.trim().is_empty() {
        return Err(bad("the name is empty".into()));
    }
    let plist = cons.cdr();
    let string = |key: &str| -> Result<Option<String>, ConfigError> {
        match sexp::plist_get(plist, key) {
            None => Ok(None),
            Some(v) if sexp::is_nil(v) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.to_string())),
            Some(other) => Err(bad(format!(
                ":{key} must be a string, not {}",
                sexp::print(other)
            ))),
        }
    };
    let seconds = |key: &str, default: Duration| -> Result<Duration, ConfigError> {
        match sexp::plist_get(plist, key) {
            None => Ok(default),
            Some(v) if sexp::is_nil(v) => Ok(default),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(s) if s > 0.0 && s <= 86_400.0 => Ok(Duration::from_secs_f64(s)),
                _ => Err(bad(format!(
                    ":{key} must be a number of seconds, more than 0"
                ))),
            },
            Some(other) => Err(bad(format!(
                ":{key} must be a number of seconds, not {}",
                sexp::print(other)
            ))),
        }
    };
    let transport = match (string("command")?, string("url")?) {
        (Some(_), Some(_)) => return Err(bad("give :command or :url, not both".into())),
        (None, None) => return Err(bad("give :command (a program) or :url".into())),
        (Some(command), None) => {
            if command.trim().is_empty() {
                return Err(bad(":command is empty".into()));
            }
            let args = match sexp::plist_get(plist, "args") {
                None => Vec::new(),
                Some(v) if sexp::is_nil(v) => Vec::new(),
                Some(v) => sexp::list_items(v)
                    .ok()
                    .and_then(|items| {
                        items
                            .into_iter()
                            .map(|i| i.as_str().map(str::to_owned))
                            .collect::<Option<Vec<_>>>()
                    })
                    .ok_or_else(|| {
                        bad(format!(
                            ":args must be a list of strings, not {}",
                            sexp::print(v)
                        ))
                    })?,
            };
            Transport::Stdio {
                command,
                args,
                env: pairs(plist, "env").map_err(bad)?,
            }
        }
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(bad(format!(
                    ":url must be an http:// or https:// address, not {url:?}"
                )));
            }
            Transport::Http {
                url,
                headers: pairs(plist, "headers").map_err(bad)?,
            }
        }
    };
    let start_timeout = seconds("timeout", START_TIMEOUT)?;
    let call_timeout = seconds("call-timeout", CALL_TIMEOUT)?;
    Ok(ServerSpec {
        prefix: prefix_of(&name),
        name: name.clone(),
        transport,
        start_timeout,
        call_timeout,
    })
}

/// `:env` or `:headers`: a plist `(:KEY "V" …)` or an alist `(("KEY" . "V") …)`.
fn pairs(plist: &Value, key: &str) -> Result<Vec<(String, String)>, String> {
    let Some(v) = sexp::plist_get(plist, key) else {
        return Ok(Vec::new());
    };
    if sexp::is_nil(v) {
        return Ok(Vec::new());
    }
    let bad = || {
        format!(
            ":{key} must be a plist (:NAME \"VALUE\" …) or an alist ((\"NAME\" . \"VALUE\") …) of strings, not {}",
            sexp::print(v)
        )
    };
    let items = sexp::list_items(v).map_err(|_| bad())?;
    let name_of = |v: &Value| match v {
        Value::Keyword(k) => Some(k.to_string()),
        Value::String(s) | Value::Symbol(s) => Some(s.to_string()),
        _ => None,
    };
    let mut out = Vec::new();
    if items.first().is_some_and(|i| matches!(i, Value::Cons(_))) {
        for item in items {
            let Value::Cons(c) = item else {
                return Err(bad());
            };
            let (Some(k), Some(val)) = (name_of(c.car()), c.cdr().as_str()) else {
                return Err(bad());
            };
            out.push((k, val.to_string()));
        }
    } else {
        if items.len() % 2 != 0 {
            return Err(bad());
        }
        for pair in items.chunks(2) {
            let (Some(k), Some(val)) = (name_of(pair[0]), pair[1].as_str()) else {
                return Err(bad());
            };
            out.push((k, val.to_string()));
        }
    }
    Ok(out)
}

/// A server's name as it prefixes its tools' names: what providers accept in a tool name
/// (`[A-Za-z0-9_-]`), each other character `_`, and no run of two `_` (the separator).
pub fn prefix_of(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim().chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' {
            c
        } else {
            '_'
        };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    let out = out.trim_matches('_').to_string();
    if out.is_empty() {
        "mcp".into()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Value {
        sexp::clone_value(sexp::read(text).expect("reads").value())
    }

    #[test]
    fn an_mcp_el_list_reads_as_it_is() {
        let servers = parse_servers(&read(
            r#"(("filesystem" . (:command "npx" :args ("-y" "server-filesystem" "/tmp") :env (("DEBUG" . "1")) :roots ("x")))
                ("remote api" :url "https://example.com/mcp" :headers (("Authorization" . "Bearer t"))))"#,
        ))
        .expect("parses");
        assert_eq!(servers.len(), 2);
        assert_eq!(servers[0].prefix, "filesystem");
        assert_eq!(
            servers[0].transport,
            Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "server-filesystem".into(), "/tmp".into()],
                env: vec![("DEBUG".into(), "1".into())],
            }
        );
        assert_eq!(servers[1].prefix, "remote_api");
        assert_eq!(
            servers[1].transport,
            Transport::Http {
                url: "https://example.com/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer t".into())],
            }
        );
        assert_eq!(servers[0].start_timeout, START_TIMEOUT);
    }

    #[test]
    fn mistakes_are_named() {
        let err = |text: &str| parse_servers(&read(text)).expect_err("refused").to_string();
        assert!(err(r#"(("a" :command "x" :url "http://y"))"#).contains("not both"));
        assert!(err(r#"(("a" :args ("x")))"#).contains("give :command"));
        assert!(err(r#"(("a" :url "ftp://y"))"#).contains("http://"));
        assert!(err(r#"(("a" :command "x" :args "y"))"#).contains(":args must be a list"));
        assert!(err(r#"(("a" :command "x" :env (:K 1)))"#).contains(":env must be"));
        assert!(err(r#"(("a" :command "x" :timeout -1))"#).contains(":timeout"));
        assert!(err(r#"(("a b" :command "x") ("a_b" :command "y"))"#).contains("rename one"));
        assert!(err(r#"(foo)"#).contains("(NAME . PLIST)"));
        assert!(parse_servers(&read("nil")).expect("empty").is_empty());
    }

    #[test]
    fn prefixes_never_hold_the_separator() {
        assert_eq!(prefix_of("my__server"), "my_server");
        assert_eq!(prefix_of("ä/b c"), "b_c");
        assert_eq!(prefix_of("***"), "mcp");
        assert!(!prefix_of("a___b").contains("__"));
    }
}
