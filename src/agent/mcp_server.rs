//! org-agent as an MCP server (`org-agent-mcp-server-mode`): Streamable HTTP on loopback,
//! every request carrying the bearer token written beside the store (`mcp-server.json`,
//! mode 0600), so only the user's own programs reach it.
//!
//! Outside agents see the notes only as the notes layer shows them: the read tools are the
//! agent's own (`query_notes`, `read_node`, `search_notes`, `list_files`, `scan_notes`) over
//! [`Notes`], and their results pass the secret gate before they leave. The edit verbs are
//! offered too, but an edit from outside never runs unasked: it is judged by the gates the
//! chat uses (the default policy, the user's permissions, the skills' tables, and everything
//! from outside counting as untrusted), a denial is said to the client, and anything else
//! waits in the approvals queue under the client's name, for the user to decide in Emacs.
//! Reads run on workers; the main thread only ever runs an edit the user approved.

use super::approvals::{Proposal, State as ProposalState};
use super::equipment::Equipment;
use super::event::{Event, RunUpdate};
use super::runtime::Runtime;
use crate::gates::audit::AuditLog;
use crate::gates::permissions::Permissions;
use crate::gates::{Context, Outcome};
use crate::llm::cascade::{Cascade, Policy};
use crate::llm::completion::ToolCall;
use crate::secrets::SecretGate;
use crate::tools::emacs as emacs_tools;
use crate::tools::Registry;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::tower::StreamableHttpService;
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The largest request body accepted.
pub const MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;
/// The file beside the store that tells clients where the server is and its token.
pub const SERVER_FILE: &str = "mcp-server.json";

/// What the user's settings give the server.
pub struct ServerSettings {
    pub permissions: Arc<Permissions>,
    pub audit_file: Option<PathBuf>,
    /// The embedding server, when search by meaning is set up: `semantic_search` is offered.
    pub embedding: Option<crate::llm::embeddings::EmbeddingBackend>,
    /// The clients whose edits Emacs asks about as they arrive.
    pub ask: AskClients,
    /// How long such a client's call waits for the user's answer before it is told the edit
    /// waits in the queue.
    pub ask_wait: std::time::Duration,
}

/// Which clients' edits Emacs asks about at once (`org-agent-mcp-server-ask-clients`), their
/// calls waiting for the answer; the others' wait in the approvals queue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum AskClients {
    #[default]
    None,
    All,
    /// By the names clients give themselves.
    Named(Vec<String>),
}

impl AskClients {
    /// `(CLIENTS . SECONDS)` as Elisp gives them: CLIENTS nil, t or a list of names; how long
    /// a call waits for the answer.
    pub fn from_sexp(v: &crate::sexp::Value) -> Result<(AskClients, std::time::Duration), String> {
        let wrong = || {
            "org-agent-mcp-server-ask-clients is t, nil or a list of client names, and \
             org-agent-mcp-server-ask-seconds a number of seconds"
                .to_string()
        };
        let (clients, seconds) = match v {
            crate::sexp::Value::Cons(cell) => (cell.car(), cell.cdr()),
            _ => return Err(wrong()),
        };
        let seconds = seconds
            .as_u64()
            .filter(|&s| s <= 86_400)
            .ok_or_else(wrong)?;
        let clients = if crate::sexp::is_nil(clients) {
            AskClients::None
        } else if clients.as_symbol() == Some("t") {
            AskClients::All
        } else {
            let names = crate::sexp::list_items(clients)
                .ok()
                .and_then(|items| {
                    items
                        .iter()
                        .map(|i| i.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()
                })
                .ok_or_else(wrong)?;
            AskClients::Named(names)
        };
        Ok((clients, std::time::Duration::from_secs(seconds)))
    }

    pub fn asks(&self, client: &str) -> bool {
        match self {
            AskClients::None => false,
            AskClients::All => true,
            AskClients::Named(names) => names.iter().any(|n| n == client),
        }
    }
}

/// The server while `org-agent-mcp-server-mode` is on (one per Emacs, as the runtime).
static SERVING: parking_lot::Mutex<Option<Serving>> = parking_lot::Mutex::new(None);

/// A running server.
pub struct Serving {
    pub url: String,
    pub token: String,
    pub file: PathBuf,
    cancel: CancellationToken,
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.cancel.cancel();
        let _ = std::fs::remove_file(&self.file);
    }
}

#[derive(Clone)]
struct NotesServer {
    rt: &'static Runtime,
    settings: Arc<ServerSettings>,
}

fn text_result(ok: bool, text: String) -> CallToolResult {
    let content = vec![ContentBlock::text(text)];
    if ok {
        CallToolResult::success(content)
    } else {
        CallToolResult::error(content)
    }
}

/// The read tools outside agents get: the agent's own over the notes layer, built once.
fn read_tools() -> &'static Registry {
    static TOOLS: std::sync::LazyLock<Registry> = std::sync::LazyLock::new(Registry::for_aliases);
    &TOOLS
}

fn to_tool(declaration: &Value) -> Option<Tool> {
    let f = &declaration["function"];
    let name = f["name"].as_str()?.to_string();
    let description = f["description"].as_str().unwrap_or("").to_string();
    let schema = f["parameters"].as_object()?.clone();
    Some(Tool::new(name, description, Arc::new(schema)))
}

impl NotesServer {
    fn client_name(ctx: &RequestContext<RoleServer>) -> String {
        ctx.peer
            .peer_info()
            .map(|info| info.client_info.name.clone())
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| "an MCP client".into())
    }

    /// Read tools: on a blocking worker, over the notes as shown, secrets withheld.
    async fn read(&self, name: String, args: Value) -> CallToolResult {
        let notes = self.rt.notes();
        let run = move || read_tools().call(&notes, &name, &args);
        match tokio::task::spawn_blocking(run).await {
            Ok(Ok(text)) => text_result(true, SecretGate::shared().redact(&text).text.into_owned()),
            Ok(Err(e)) => text_result(
                false,
                SecretGate::shared()
                    .redact(&e.to_string())
                    .text
                    .into_owned(),
            ),
            Err(_) => text_result(false, "the tool failed unexpectedly".into()),
        }
    }

    /// Search by meaning, secrets withheld from what it lists.
    async fn search(&self, args: Value) -> CallToolResult {
        let semantic = match self.rt.semantic(self.settings.embedding.clone()) {
            Ok(Some(s)) => s,
            Ok(None) => return text_result(false, "search by meaning is not set up".into()),
            Err(e) => return text_result(false, e),
        };
        let cancel = crate::llm::http::CancelToken::new();
        match semantic.tool_call(&self.rt.notes(), &args, &cancel).await {
            Ok(text) => text_result(true, SecretGate::shared().redact(&text).text.into_owned()),
            Err(e) => text_result(false, e),
        }
    }

    /// An edit: judged by the gates; never run from here. For a client Emacs asks about,
    /// the call waits for the user's answer.
    async fn propose(&self, client: &str, name: &str, args: Value) -> CallToolResult {
        let proposal = match self.queue(client, name, args) {
            Ok(id) => id,
            Err(refused) => return refused,
        };
        if self.settings.ask.asks(client) {
            if let Some(answered) = self.answer(proposal).await {
                return answered;
            }
        }
        text_result(
            true,
            format!(
                "Proposal #{proposal} waits in the user's approvals queue; the user decides \
                 in Emacs (M-x org-agent-approvals). It has not run."
            ),
        )
    }

    /// The user's answer about `proposal`, once Emacs (which asks at once) has it; `None`
    /// when they did not answer in time (it stays queued).
    async fn answer(&self, proposal: u64) -> Option<CallToolResult> {
        let deadline = tokio::time::Instant::now() + self.settings.ask_wait;
        let mut settlings = self.rt.approvals().watch_settled();
        loop {
            let settled = self.rt.approvals().get(proposal)?;
            match settled.state {
                ProposalState::Pending => {}
                ProposalState::Approved => {
                    return Some(text_result(
                        true,
                        format!(
                            "The user approved proposal #{proposal} and it ran: {}",
                            settled.outcome.unwrap_or_default()
                        ),
                    ))
                }
                ProposalState::Denied => {
                    return Some(text_result(
                        false,
                        format!("The user denied proposal #{proposal}; it did not run."),
                    ))
                }
            }
            match tokio::time::timeout_at(deadline, settlings.changed()).await {
                Ok(Ok(())) => {}
                // Out of time, or the queue is gone with its store.
                Ok(Err(_)) | Err(_) => return None,
            }
        }
    }

    /// Judge an edit by the gates and queue it for the user: its proposal's id, or the
    /// refusal to send.
    fn queue(&self, client: &str, name: &str, args: Value) -> Result<u64, CallToolResult> {
        let mut eq = Equipment::with(
            Cascade::new(Vec::new(), self.rt.health().clone(), Policy::default()),
            self.rt.notes(),
        );
        eq.edit_tools = true;
        eq.background = true;
        eq.audit = self.settings.audit_file.clone().map(AuditLog::new);
        eq.set_permissions(self.settings.permissions.clone());
        if let Err(e) = eq.attach_skills(self.rt.skills()) {
            return Err(text_result(false, format!("the skills do not load: {e}")));
        }
        let call = ToolCall {
            id: "mcp".into(),
            name: name.to_string(),
            arguments: args,
            signature: None,
        };
        let base = Context::default();
        let action = eq
            .action(&call, &base)
            .map_err(|why| text_result(false, why))?;
        let mut ctx = eq.gate_context(&base);
        // Whatever comes from outside is untrusted: every edit it asks for is asked.
        ctx.untrusted_read
            .push(format!("a request of the MCP client {client}"));
        let verdict = eq.gates.decide(action.clone(), &ctx);
        let _ = eq.audit(|log, now| log.append(&action, &verdict, now));
        let (action, reasons) = match verdict.outcome {
            Outcome::Deny { reasons } => {
                return Err(text_result(
                    false,
                    format!("denied: {}", reasons.join("; ")),
                ))
            }
            Outcome::Allow(a) => (a, vec![format!("asked by the MCP client {client}")]),
            Outcome::Ask { action, reasons } => (action, reasons),
        };
        let printed = action.to_sexp();
        let proposal = self.rt.approvals().push(Proposal {
            id: 0,
            state: ProposalState::Pending,
            skill: format!("mcp:{client}"),
            tool: name.to_string(),
            action: crate::sexp::print(printed.value()),
            reasons,
            provenance: format!("the MCP client {client}"),
            created: super::runs::now_secs(),
            diff: None,
            outcome: None,
        });
        self.rt.push(Event::SkillRun {
            request: 0,
            skill: format!("mcp:{client}"),
            update: RunUpdate::Queued {
                proposal,
                tool: name.to_string(),
                action: printed,
            },
        });
        Ok(proposal)
    }
}

impl ServerHandler for NotesServer {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_protocol_version(crate::mcp::PROTOCOL_REVISION)
            .with_server_info(Implementation::new("org-agent", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "The user's Org notes, as org-agent shows them: private notes never appear and \
                 secrets are withheld. Read with query_notes, search_notes, read_node, \
                 list_files and scan_notes. Edits are proposals: each waits for the user's \
                 approval in Emacs.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools: Vec<Tool> = read_tools()
            .function_schemas()
            .iter()
            .filter_map(to_tool)
            .collect();
        if self.settings.embedding.is_some() {
            tools.extend(to_tool(&super::semantic::tool_declaration()));
        }
        tools.extend(emacs_tools::edit_schemas().iter().filter_map(to_tool));
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let args = Value::Object(request.arguments.unwrap_or_default());
        let result = if read_tools().get(&name).is_some() {
            self.read(name, args).await
        } else if name == super::semantic::SEMANTIC_TOOL && self.settings.embedding.is_some() {
            self.search(args).await
        } else if emacs_tools::is_edit(&name) {
            let client = Self::client_name(&context);
            self.propose(&client, &name, args).await
        } else {
            return Err(ErrorData::invalid_params(
                format!("no tool named {name}"),
                None,
            ));
        };
        Ok(CallToolResponse::Complete(result))
    }
}

/// A fresh token: 32 bytes from the operating system, as hex.
fn new_token() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).map_err(|e| format!("no random token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether `header` is `Bearer TOKEN`, compared in constant time.
fn authorized(header: Option<&http::HeaderValue>, token: &str) -> bool {
    let Some(given) = header
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
    else {
        return false;
    };
    let (a, b) = (given.as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

fn write_server_file(path: &std::path::Path, url: &str, token: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let text = serde_json::json!({"url": url, "token": token}).to_string();
    let tmp = path.with_extension("json.tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

impl Runtime {
    /// Serve MCP on 127.0.0.1:`port` (0: any free port), writing where and the token to
    /// `mcp-server.json` in `state_dir`. A server already running is stopped first.
    pub fn mcp_serve(
        &'static self,
        port: u16,
        state_dir: PathBuf,
        settings: ServerSettings,
    ) -> Result<(String, PathBuf), String> {
        self.mcp_stop_serving();
        // A plain bind (no waiting); tokio takes the socket over on a worker.
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let url = format!("http://127.0.0.1:{port}/mcp");
        let token = new_token()?;
        std::fs::create_dir_all(&state_dir).map_err(|e| format!("{}: {e}", state_dir.display()))?;
        let file = state_dir.join(SERVER_FILE);
        write_server_file(&file, &url, &token)?;
        let cancel = CancellationToken::new();
        let mut config = StreamableHttpServerConfig::default();
        config.cancellation_token = cancel.child_token();
        config.max_request_body_bytes = MAX_REQUEST_BYTES;
        config.legacy_session_mode = true;
        let handler = NotesServer {
            rt: self,
            settings: Arc::new(settings),
        };
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let stop = cancel.clone();
        let expected = token.clone();
        self.spawn_future(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            loop {
                let stream = tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => {
                            // Responses go out in pieces (headers, events): without this,
                            // Nagle and the peer's delayed ACK add 40 ms to each.
                            let _ = stream.set_nodelay(true);
                            stream
                        }
                        Err(_) => continue,
                    },
                    _ = stop.cancelled() => break,
                };
                let service = service.clone();
                let token = expected.clone();
                let stop = stop.clone();
                tokio::spawn(async move {
                    let serve = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let mut service = service.clone();
                        let ok = authorized(req.headers().get(http::header::AUTHORIZATION), &token);
                        async move {
                            if !ok {
                                let body = Full::new(Bytes::from_static(
                                    b"{\"error\":\"this server needs Authorization: Bearer TOKEN, the token in mcp-server.json\"}",
                                ))
                                .map_err(|never| match never {})
                                .boxed();
                                let mut response = http::Response::new(body);
                                *response.status_mut() = http::StatusCode::UNAUTHORIZED;
                                return Ok::<_, std::convert::Infallible>(response);
                            }
                            tower_service::Service::call(&mut service, req).await
                        }
                    });
                    let conn = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), serve);
                    tokio::select! {
                        _ = conn => {}
                        _ = stop.cancelled() => {}
                    }
                });
            }
        });
        *SERVING.lock() = Some(Serving {
            url: url.clone(),
            token,
            file: file.clone(),
            cancel,
        });
        Ok((url, file))
    }

    /// Stop serving MCP (the token file goes with it).
    pub fn mcp_stop_serving(&self) {
        let old = SERVING.lock().take();
        drop(old);
    }

    /// Where the MCP server listens, while it runs.
    pub fn mcp_serving(&self) -> Option<String> {
        SERVING.lock().as_ref().map(|s| s.url.clone())
    }
}
