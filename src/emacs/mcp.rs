//! The functions of MCP, both ways: the servers org-agent uses (`org-agent-mcp-servers`,
//! `M-x org-agent-mcp`) and the server it offers (`org-agent-mcp-server-mode`).

use super::{config_fail, fail, lisp_sexp, runtime};
use crate::agent::mcp_server::{AskClients, ServerSettings};
use crate::mcp::client::Status;
use crate::sexp::{Sexp, Value as SexpValue};
use ::emacs::{defun, Env, IntoLisp, Result, Value};
use std::sync::Arc;

fn status_plist(s: &Status) -> SexpValue {
    let strings = |v: &[String]| {
        SexpValue::list(
            v.iter()
                .map(|t| SexpValue::string(t.as_str()))
                .collect::<Vec<_>>(),
        )
    };
    SexpValue::list(vec![
        SexpValue::keyword("name"),
        SexpValue::string(s.name.as_str()),
        SexpValue::keyword("state"),
        SexpValue::symbol(s.state.name()),
        SexpValue::keyword("message"),
        match &s.message {
            Some(m) => SexpValue::string(m.as_str()),
            None => SexpValue::Nil,
        },
        SexpValue::keyword("tools"),
        strings(&s.tools),
        SexpValue::keyword("skipped"),
        strings(&s.skipped),
        SexpValue::keyword("calls"),
        SexpValue::from(s.calls),
        SexpValue::keyword("failures"),
        SexpValue::from(s.failures),
    ])
}

/// Take SERVERS, the value of `org-agent-mcp-servers' (header values already looked up),
/// as the servers every chat turn offers the tools of.  Servers no longer listed stop;
/// the others keep running.  Signal `org-agent-config-error' when the list is wrong.
#[defun]
fn mcp_configure(env: &Env, servers: Value) -> Result<()> {
    let servers = lisp_sexp::from_lisp(env, servers)?;
    match crate::mcp::config::parse_servers(servers.value()) {
        Ok(specs) => {
            runtime(env)?.mcp().configure(specs);
            Ok(())
        }
        Err(e) => config_fail(env, e),
    }
}

/// Return each configured MCP server's state as a plist (:name :state :message :tools
/// :skipped :calls :failures); :state is `stopped', `starting', `running' or `failed'.
#[defun]
fn mcp_status<'e>(env: &'e Env) -> Result<Value<'e>> {
    let items: Vec<SexpValue> = runtime(env)?
        .mcp()
        .statuses()
        .iter()
        .map(status_plist)
        .collect();
    lisp_sexp::to_lisp(env, &SexpValue::list(items))
}

/// Stop and start the MCP server NAME again, on a worker.  Return a request id at once;
/// an `mcp' event follows whose :value is the server's state plist (or a `failed' event).
#[defun]
fn mcp_restart(env: &Env, name: String) -> Result<i64> {
    let rt = runtime(env)?;
    Ok(rt.mcp_async(move |rt| async move {
        rt.mcp()
            .restart(&name)
            .await
            .map(|s| Sexp::from(status_plist(&s)))
    }) as i64)
}

/// List the resources of the MCP server NAME, on a worker.  Return a request id; the
/// `mcp' event's :value is a list of (URI NAME DESCRIPTION MIME-TYPE).
#[defun]
fn mcp_resources(env: &Env, name: String) -> Result<i64> {
    let rt = runtime(env)?;
    Ok(rt.mcp_async(move |rt| async move {
        let listed = rt.mcp().resources(&name).await?;
        let items = listed
            .iter()
            .map(|r| {
                SexpValue::list(
                    r.iter()
                        .map(|f| SexpValue::string(f.as_str()))
                        .collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>();
        Ok(Sexp::from(SexpValue::list(items)))
    }) as i64)
}

/// Read the resource URI of the MCP server NAME, on a worker.  Return a request id; the
/// `mcp' event's :value is its text.
#[defun]
fn mcp_read_resource(env: &Env, name: String, uri: String) -> Result<i64> {
    let rt = runtime(env)?;
    Ok(rt.mcp_async(move |rt| async move {
        let text = rt.mcp().read_resource(&name, &uri).await?;
        Ok(Sexp::from(SexpValue::string(text)))
    }) as i64)
}

/// List the prompts of the MCP server NAME, on a worker.  Return a request id; the `mcp'
/// event's :value is a list of (NAME DESCRIPTION ARGUMENT-NAMES).
#[defun]
fn mcp_prompts(env: &Env, name: String) -> Result<i64> {
    let rt = runtime(env)?;
    Ok(rt.mcp_async(move |rt| async move {
        let listed = rt.mcp().prompts(&name).await?;
        let items = listed
            .into_iter()
            .map(|(n, d, args)| {
                SexpValue::list(vec![
                    SexpValue::string(n),
                    SexpValue::string(d),
                    SexpValue::list(args.into_iter().map(SexpValue::string).collect::<Vec<_>>()),
                ])
            })
            .collect::<Vec<_>>();
        Ok(Sexp::from(SexpValue::list(items)))
    }) as i64)
}

/// Get the prompt PROMPT of the MCP server NAME with ARGS, an alist of (NAME . VALUE)
/// strings, on a worker.  Return a request id; the `mcp' event's :value is its text.
#[defun]
fn mcp_get_prompt(env: &Env, name: String, prompt: String, args: Value) -> Result<i64> {
    let args = lisp_sexp::from_lisp(env, args)?;
    let mut map = serde_json::Map::new();
    if let Ok(items) = crate::sexp::list_items(args.value()) {
        for item in items {
            if let SexpValue::Cons(c) = item {
                if let (Some(k), Some(v)) = (c.car().as_str(), c.cdr().as_str()) {
                    map.insert(k.to_string(), serde_json::Value::String(v.to_string()));
                }
            }
        }
    }
    let rt = runtime(env)?;
    Ok(rt.mcp_async(move |rt| async move {
        let text = rt.mcp().prompt(&name, &prompt, map).await?;
        Ok(Sexp::from(SexpValue::string(text)))
    }) as i64)
}

/// Serve MCP on 127.0.0.1:PORT (0: any free port) and write its address and token to
/// mcp-server.json (mode 0600) in STATE-DIRECTORY.  Edits outside agents ask for are judged
/// under PERMISSIONS (`org-agent-permissions') and audited to AUDIT-FILE (or nil); with
/// EMBEDDING, an embedding backend plist, `semantic_search' is offered.  ASK is (CLIENTS .
/// SECONDS): the edits of the clients CLIENTS names (t: all) are asked about in Emacs at once,
/// their calls waiting up to SECONDS for the answer.  Return (URL . FILE).
#[defun]
fn mcp_serve<'e>(
    env: &'e Env,
    port: i64,
    state_directory: String,
    permissions: Value,
    audit_file: Option<String>,
    embedding: Value,
    ask: Value,
) -> Result<Value<'e>> {
    let Ok(port) = u16::try_from(port) else {
        return config_fail(env, format!("{port} is not a port (0 to 65535)"));
    };
    let rules = lisp_sexp::from_lisp(env, permissions)?;
    let permissions = match crate::gates::permissions::Permissions::from_sexp(rules.value()) {
        Ok(p) => Arc::new(p),
        Err(e) => return config_fail(env, e.to_string()),
    };
    let embedding = lisp_sexp::from_lisp(env, embedding)?;
    let embedding = if crate::sexp::is_nil(embedding.value()) {
        None
    } else {
        match crate::llm::embeddings::EmbeddingBackend::from_sexp(embedding.value()) {
            Ok(b) => Some(b),
            Err(e) => return config_fail(env, e.to_string()),
        }
    };
    let ask = lisp_sexp::from_lisp(env, ask)?;
    let (ask, ask_wait) = match AskClients::from_sexp(ask.value()) {
        Ok(read) => read,
        Err(e) => return config_fail(env, e),
    };
    let settings = ServerSettings {
        permissions,
        audit_file: audit_file.map(Into::into),
        embedding,
        ask,
        ask_wait,
    };
    match runtime(env)?.mcp_serve(port, state_directory.into(), settings) {
        Ok((url, file)) => env.cons(url, file.to_string_lossy().into_owned()),
        Err(message) => fail(env, message),
    }
}

/// Stop serving MCP; the token file goes.
#[defun]
fn mcp_stop_serving(env: &Env) -> Result<()> {
    runtime(env)?.mcp_stop_serving();
    Ok(())
}

/// Return the URL the MCP server listens on, or nil when it is off.
#[defun]
fn mcp_serving<'e>(env: &'e Env) -> Result<Value<'e>> {
    match runtime(env)?.mcp_serving() {
        Some(url) => url.into_lisp(env),
        None => ().into_lisp(env),
    }
}
