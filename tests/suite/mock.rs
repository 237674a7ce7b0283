//! A mock OpenAI-compatible chat-completions server on 127.0.0.1.
//!
//! Real HTTP/1.1 over TCP, real SSE with chunked transfer encoding. Each
//! request takes the next scripted [`Reply`]; every request body is recorded.
//! When the script is exhausted it answers 500 so a test that calls the model
//! more often than it planned fails loudly.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};

use super::mock_reply::send;
pub use super::mock_reply::{MockCall, Reply};
use super::mock_wire::{chunk, end_sse, read_request, respond_status, start_sse};

/// What the mock answers pirn's summariser (compaction requests).
pub const SUMMARY: &str = "The agent read several files for the task; nothing was changed yet.";

/// The content of the last tool message of a request body (what the model
/// read last of its calls' results).
pub fn last_tool_text(body: &Value) -> String {
    let msgs = body["messages"].as_array().unwrap();
    msgs.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_owned()
}

/// A recorded request.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    #[allow(dead_code)]
    pub authorization: Option<String>,
    pub body: Value,
    /// Refused as larger than the mock's context window (no reply used).
    #[allow(dead_code)]
    pub refused: bool,
    /// The mock's token count of the request (bytes of messages and tools / 4).
    #[allow(dead_code)]
    pub tokens: u64,
}

/// The running server. Dropping it stops accepting.
pub struct MockServer {
    pub addr: SocketAddr,
    script: Arc<Mutex<Script>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    /// pirn's reading calls (answered without the script, kept apart).
    readings: Arc<Mutex<Vec<Value>>>,
    task: tokio::task::JoinHandle<()>,
}

/// The replies still to give. When `cycle` is set each reply goes back to
/// the end of the queue once used and requests are not recorded (benchmarks).
#[derive(Default)]
struct Script {
    replies: VecDeque<Reply>,
    cycle: bool,
    /// A hard context window in tokens: larger requests get llama.cpp's 400
    /// `exceed_context_size_error`, and usage reports the mock's count.
    window: Option<u64>,
    /// Answer `GET /props` with the window (as llama.cpp does).
    props: bool,
    /// Usage reports the mock's own prompt count (set with a window).
    count: bool,
    /// The text pirn's reading of a request (its `Asked` gate) is answered
    /// with (`None`: `{"changes_files": true}` when the reply served last
    /// calls `write_file` or `edit_file`, else false: the scripted model
    /// reads the request as its own script acts on it).
    reading: Option<String>,
    /// The reply served last calls `write_file` or `edit_file`.
    last_wrote: bool,
    /// The text pirn's reading of an answer (its `Claimed` gate) is
    /// answered with (`None`: `{"reports_change": false}`).
    claim: Option<String>,
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockServer {
    pub async fn start(script: Vec<Reply>) -> MockServer {
        Self::start_with(script, false).await
    }

    /// A server that answers requests with `script` round-robin, forever.
    #[allow(dead_code)]
    pub async fn start_cycling(script: Vec<Reply>) -> MockServer {
        Self::start_with(script, true).await
    }

    /// A server with a hard context window of `window` tokens, which it
    /// reports on `GET /props` when `props` is set.
    #[allow(dead_code)]
    pub async fn start_windowed(script: Vec<Reply>, window: u64, props: bool) -> MockServer {
        let server = Self::start_with(script, false).await;
        server.configure(Some(window), props, true);
        server
    }

    /// Sets the window (`None`: no limit), `/props`, and whether usage
    /// reports the mock's own count (for the benchmark's cycling server).
    pub fn configure(&self, window: Option<u64>, props: bool, count: bool) {
        let mut s = self.script.lock().unwrap();
        s.window = window;
        s.props = props;
        s.count = count;
    }

    async fn start_with(script: Vec<Reply>, cycle: bool) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind mock");
        let addr = listener.local_addr().expect("addr");
        let script = Arc::new(Mutex::new(Script { replies: VecDeque::from(script), cycle, ..Script::default() }));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let readings = Arc::new(Mutex::new(Vec::new()));
        let (s, r, g) = (script.clone(), requests.clone(), readings.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (s, r, g) = (s.clone(), r.clone(), g.clone());
                tokio::spawn(async move {
                    let _ = serve(stream, s, r, g).await;
                });
            }
        });
        MockServer { addr, script, requests, readings, task }
    }

    /// The base URL to give pirn (`PIRN_BASE_URL`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// The bodies of pirn's reading calls (see `reads_change`).
    #[allow(dead_code)]
    pub fn readings(&self) -> Vec<Value> {
        self.readings.lock().unwrap().clone()
    }

    /// Answer pirn's reading calls with `{"changes_files": change}`
    /// (default: whether the reply served last writes a file).
    #[allow(dead_code)]
    pub fn reads_change(&self, change: bool) {
        self.reading_reply(&format!("{{\"changes_files\": {change}}}"));
    }

    /// Answers pirn's reading calls with `text` as it is (garbage included).
    #[allow(dead_code)]
    pub fn reading_reply(&self, text: &str) {
        self.script.lock().unwrap().reading = Some(text.to_owned());
    }

    /// Answer pirn's readings of an answer with `{"reports_change": claims}`
    /// (default false); they are among [`Self::readings`].
    #[allow(dead_code)]
    pub fn claims(&self, claims: bool) {
        self.script.lock().unwrap().claim = Some(format!("{{\"reports_change\": {claims}}}"));
    }

    pub fn push(&self, reply: Reply) {
        self.script.lock().unwrap().replies.push_back(reply);
    }
}

async fn serve(
    mut stream: TcpStream,
    script: Arc<Mutex<Script>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    readings: Arc<Mutex<Vec<Value>>>,
) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let Some((path, authorization, body)) = read_request(&mut stream).await? else {
        return Ok(());
    };
    // Only chat completions are scripted; a probe of another path (pirn
    // asks for /props and /models) gets what a real server would say.
    if !path.ends_with("/chat/completions") {
        let props = {
            let s = script.lock().unwrap();
            s.window.filter(|_| s.props && path.ends_with("/props"))
        };
        return match props {
            Some(w) => {
                let body = json!({"default_generation_settings": {"n_ctx": w}}).to_string();
                respond_status(&mut stream, 200, &body, None).await
            }
            None => respond_status(&mut stream, 404, r#"{"error":{"message":"File Not Found"}}"#, None).await,
        };
    }
    // pirn's readings of a request or an answer get the configured answer,
    // kept apart.
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    let (request, answer) = (system.starts_with("You sort requests"), system.starts_with("You check the final reply"));
    if request || answer {
        let text = {
            let s = script.lock().unwrap();
            let configured = if request { s.reading.clone() } else { s.claim.clone() };
            configured.unwrap_or_else(|| match request {
                true => format!("{{\"changes_files\": {}}}", s.last_wrote),
                false => r#"{"reports_change": false}"#.to_owned(),
            })
        };
        readings.lock().unwrap().push(body);
        start_sse(&mut stream).await?;
        let delta = json!({"choices": [{"index": 0, "delta": {"content": text}}]});
        let done = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
        chunk(&mut stream, format!("data: {delta}\n\ndata: {done}\n\ndata: [DONE]\n\n").as_bytes()).await?;
        return end_sse(&mut stream).await;
    }
    let tokens = ((body["messages"].to_string().len() + body["tools"].to_string().len()) / 4) as u64;
    let (reply, window, refused, count) = {
        let mut script = script.lock().unwrap();
        let window = script.window;
        let count = script.count;
        let refused = window.is_some_and(|w| tokens > w);
        // pirn's summariser (compaction) gets a summary without using the script.
        let summary = body["messages"][0]["content"].as_str().is_some_and(|c| c.starts_with("You condense"));
        let reply = if refused {
            None
        } else if summary {
            Some(Reply::text(&[SUMMARY]))
        } else {
            script.replies.pop_front()
        };
        if !summary && let Some(r) = &reply {
            script.last_wrote = matches!(r, Reply::ToolCalls { calls, .. }
                if calls.iter().any(|c| c.name == "write_file" || c.name == "edit_file"));
        }
        if script.cycle {
            script.replies.extend(reply.clone());
        } else {
            requests.lock().unwrap().push(Recorded { path, authorization, body, refused, tokens });
        }
        (reply, window, refused, count)
    };
    if refused {
        let body = json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": tokens, "n_ctx": window}});
        return respond_status(&mut stream, 400, &body.to_string(), None).await;
    }
    // With a window, usage reports the mock's own prompt count.
    let counted = |u: Option<[u64; 2]>| if count { Some([tokens, u.map_or(5, |u| u[1])]) } else { u };
    let Some(reply) = reply else {
        return respond_status(&mut stream, 500, r#"{"error":{"message":"mock: no scripted reply left"}}"#, None).await;
    };
    send(&mut stream, reply, counted).await
}
