//! The HTTP API's OpenAPI 3.1 document, generated from the route handlers'
//! `#[utoipa::path]` attributes and the body types of [`crate::wire::http`],
//! served at `GET /openapi.json` and committed as `protocol/openapi.json`
//! (a test fails when the two differ: `UPDATE_SCHEMAS=1 cargo test`
//! rewrites the file).
//!
//! Owns: what no handler attribute says: the bearer security scheme and
//! who needs it, the answers every route may give before its handler runs
//! (401 without the token, 403 for a foreign Host or Origin, 413, 415), and
//! `/mcp`, which the MCP SDK serves rather than a handler of ours.

use std::sync::OnceLock;

use axum::http::{Method, header};
use axum::response::IntoResponse;
use utoipa::openapi::path::{HttpMethod, OperationBuilder, PathItem};
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi as Document, RefOr};
use utoipa::{Modify, OpenApi};

use super::facades::{console, inbox, shell, webkit};
use super::routing::group;
use super::{events, history, sends, sessions, ws};
use crate::wire::http::{ErrorBody, Ok, console as c, inbox as i, mcp, sessions as s, webkit as w};

/// The document's description: who is trusted and the limits every route shares.
const DESCRIPTION: &str = "The HTTP face of pirn: the sessions of the heddle headless protocol \
(request.schema.json, response.schema.json) over HTTP, SSE and WebSocket, with the webhook inbox, \
agent-webkit 1.0, ACECode's consoles, muti's shell and an MCP server. Loopback by default. When the \
daemon has a token (required off loopback) every request but GET /health and POST /webhook/{token} \
needs it: `Authorization: Bearer <token>` (or ACECode's `X-ACECode-Token`, or `?token=` on a \
WebSocket upgrade). A Host or Origin that is not the daemon's own (or allowed by --allow-host, \
--allow-origin) gets 403; a body over 10 MiB 413; a POST body that is not JSON 415. Every error body \
is ErrorBody ({error, message}) but the webhook's, which keeps stringd's {error}. In a group of hosts \
(--advertise-url, one Postgres) any host answers for any session: a request for a session another host \
runs is forwarded to it, and one whose host does not answer is taken over once that host's lease lapses \
(503 OWNER_UNREACHABLE when it still cannot be served; an upgrade answers 503 at once).";

/// The API, as utoipa derives it.
#[derive(OpenApi)]
#[openapi(
    info(title = "pirn serve", description = DESCRIPTION),
    paths(
        sessions::health, sessions::shutdown, openapi_json, group::hosts,
        sessions::list_sessions, sessions::create_session, sessions::fork_session, sessions::session_status, sessions::delete_session,
        sends::create_send, events::events, history::messages, sends::cancel, sends::compact, sends::rewind, sends::steer, sends::permission,
        ws::websocket,
        inbox::show, inbox::rotate, inbox::post, inbox::list, inbox::ack, inbox::stream,
        webkit::create, webkit::stream, webkit::input, webkit::delete,
        shell::shell, console::health, console::list, console::create, console::delete, console::resize,
        console::title, console::websocket,
    ),
    components(schemas(
        ErrorBody, Ok, s::History, s::HistoryEvent, i::StreamReady, i::StreamPing, i::InboxEvent,
        c::ConsoleControl, w::SessionReady, w::MessageDelta, w::MessageComplete, w::ToolUse, w::ToolResult,
        w::PermissionRequest, w::WebkitError, w::WebkitResult, w::WebkitDone, mcp::RunOutput,
    )),
    modifiers(&SharedSchemas),
    tags(
        (name = "daemon", description = "The daemon itself"),
        (name = "sessions", description = "pirn sessions: the stdio protocol's init, send, cancel and events over HTTP"),
        (name = "inbox", description = "The webhook inbox, after stringd's local webhook"),
        (name = "agent-webkit", description = "agent-webkit 1.0, served as it is (agent-webkit-wire-protocol.md)"),
        (name = "console", description = "ACECode's console PTYs and muti's shell (with --terminals)"),
        (name = "mcp", description = "pirn as an MCP server (Streamable HTTP)"),
    )
)]
pub struct ApiDoc;

/// `GET /openapi.json`: this document.
#[utoipa::path(get, path = "/openapi.json", operation_id = "openapi", tag = "daemon", summary = "This API's OpenAPI 3.1 document",
    responses((status = 200, description = "the document (also protocol/openapi.json)", content_type = "application/json", body = Object)))]
pub async fn openapi_json() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], document_json())
}

/// The document as pretty JSON with a final newline, exactly as committed
/// in `protocol/openapi.json`; built on first use.
pub fn document_json() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| ApiDoc::openapi().to_pretty_json().map(|j| j + "\n").unwrap_or_default())
}

/// What every route shares, and `/mcp`.
struct SharedSchemas;

impl Modify for SharedSchemas {
    fn modify(&self, doc: &mut Document) {
        let components = doc.components.get_or_insert_with(Default::default);
        let bearer = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .description(Some("The daemon's token (--token or PIRN_TOKEN); needed only when it has one"))
            .build();
        components.add_security_scheme("bearer", SecurityScheme::Http(bearer));
        // The token is needed when the daemon has one: the bearer scheme, or nothing.
        doc.security =
            Some(vec![SecurityRequirement::new("bearer", Vec::<String>::new()), SecurityRequirement::default()]);
        // pirn's package names no license; an empty one is not a license.
        doc.info.license = None;
        add_mcp(doc);
        for (path, item) in doc.paths.paths.iter_mut() {
            // The routes a group host serves, forwards or takes over.
            for (method, op) in operations(item) {
                if group::session_of(&method, path).is_some() {
                    add_answer(&mut op.responses.responses, "409", GROUP_409);
                    add_answer(&mut op.responses.responses, "503", GROUP_503);
                }
            }
            for (_, op) in operations(item) {
                let open = op.security.as_ref().is_some_and(|s| s.iter().all(is_empty));
                let responses = &mut op.responses.responses;
                if !open {
                    responses.entry("401".into()).or_insert_with(|| error("UNAUTHORIZED: missing or wrong token"));
                }
                responses.entry("403".into()).or_insert_with(|| {
                    error("FORBIDDEN_HOST or FORBIDDEN_ORIGIN: a Host or Origin not the daemon's own")
                });
            }
        }
    }
}

/// True for the empty requirement `{}` (no credentials).
fn is_empty(r: &SecurityRequirement) -> bool {
    serde_json::to_value(r).is_ok_and(|v| v.as_object().is_some_and(serde_json::Map::is_empty))
}

/// A group host's 409 on a session route (`--advertise-url`).
const GROUP_409: &str = "SESSION_OWNED: a request a peer forwarded here finds the session held by another \
host; SESSION_BUSY: the session's creation is not in the log yet";
/// A group host's 503 on a session route.
const GROUP_503: &str =
    "OWNER_UNREACHABLE: the host holding the session does not answer; STORE_UNAVAILABLE: the store does not answer";

/// The operations of `item`, with their methods.
fn operations(item: &mut PathItem) -> impl Iterator<Item = (Method, &mut utoipa::openapi::path::Operation)> {
    [
        (Method::GET, &mut item.get),
        (Method::POST, &mut item.post),
        (Method::PUT, &mut item.put),
        (Method::DELETE, &mut item.delete),
        (Method::PATCH, &mut item.patch),
    ]
    .into_iter()
    .filter_map(|(m, op)| op.as_mut().map(|op| (m, op)))
}

/// Adds `what` to the error answer `status` (a new [`ErrorBody`] answer
/// when the route has none).
fn add_answer(responses: &mut std::collections::BTreeMap<String, RefOr<Response>>, status: &str, what: &str) {
    match responses.get_mut(status) {
        Some(RefOr::T(r)) => r.description = format!("{}; in a group of hosts, {what}", r.description),
        Some(RefOr::Ref(_)) => {}
        None => {
            responses.insert(status.into(), error(what));
        }
    }
}

/// An error answer whose body is [`ErrorBody`].
fn error(description: &str) -> RefOr<Response> {
    let content = ContentBuilder::new().schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name("ErrorBody"))));
    ResponseBuilder::new().description(description).content("application/json", content.build()).build().into()
}

/// `/mcp`: the MCP SDK's Streamable HTTP endpoint (JSON-RPC 2.0).
fn add_mcp(doc: &mut Document) {
    let op = |id: &str, summary: &str, responses: &[(&str, &str)]| {
        let mut b = OperationBuilder::new().operation_id(Some(id)).summary(Some(summary)).tag("mcp");
        for (status, description) in responses {
            b = b.response(*status, ResponseBuilder::new().description(*description).build());
        }
        b.build()
    };
    let post = op(
        "mcp_post",
        "MCP Streamable HTTP endpoint (JSON-RPC 2.0: initialize, tools/list, tools/call, notifications). Tools: \
         pirn_run {prompt, cwd?, tools?, model?} runs one send in a fresh session and returns its answer \
         (structuredContent: RunOutput; the streamed text as notifications/progress when the call has a \
         progress token; notifications/cancelled cancels the send); pirn_send {session_id, message} continues \
         a session. Served by the official Rust SDK (rmcp).",
        &[
            (
                "200",
                "a JSON-RPC response, as JSON or as an SSE stream carrying progress notifications then the response",
            ),
            ("202", "a notification or response accepted"),
        ],
    );
    let get = op(
        "mcp_stream",
        "MCP Streamable HTTP: the server-to-client SSE stream of an MCP session (Mcp-Session-Id header)",
        &[("200", "text/event-stream")],
    );
    let delete = op(
        "mcp_delete",
        "MCP Streamable HTTP: end the MCP session named by the Mcp-Session-Id header",
        &[("202", "ended")],
    );
    let mut item = PathItem::new(HttpMethod::Post, post);
    item.get = Some(get);
    item.delete = Some(delete);
    doc.paths.paths.insert("/mcp".into(), item);
}
