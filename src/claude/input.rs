//! Claude Code's stream-json input: stdin's lines framed and parsed.
//!
//! Owns: [`Input`] (one line, parsed, or why it cannot be) and [`read_stdin`],
//! which frames stdin with the 10 MiB bound and sends each line on. A
//! control request whose body cannot be read keeps its `request_id`, so
//! it is answered with an error instead of left to the SDK's timeout.

use tokio::sync::mpsc;

use super::wire::In;
use crate::wire::MAX_LINE_BYTES;

/// One line of stdin, parsed.
pub(super) enum Input {
    Line(Box<In>),
    /// Not a message pirn understands (the reason).
    Bad(String),
    /// A control request whose body pirn cannot read: answered with an
    /// error (an SDK would otherwise wait for its timeout).
    BadControl {
        request_id: String,
        why: String,
    },
    /// `--input-format text`: the prompt.
    Prompt(String),
}

/// Reads stdin's lines into `tx` until EOF (or a read error). A line is
/// bounded at [`MAX_LINE_BYTES`], as the JSONL worker bounds its requests:
/// a longer one, or one that is not UTF-8, is discarded and reported as a
/// bad line, and reading goes on.
pub(super) async fn read_stdin(tx: mpsc::Sender<Input>) {
    use crate::transport::lines::{Frame, LineFramer};
    use tokio::io::AsyncReadExt;
    let mut stdin = tokio::io::stdin();
    let mut framer = LineFramer::default();
    let mut eof = false;
    while !eof {
        eof = matches!(stdin.read_buf(framer.buffer()).await, Ok(0) | Err(_));
        while let Some(frame) = framer.next_frame(eof) {
            let input = match frame {
                Frame::Line(line) if line.trim().is_empty() => continue,
                Frame::Line(line) => match serde_json::from_str::<In>(&line) {
                    Ok(m) => Input::Line(Box::new(m)),
                    Err(e) => {
                        let value: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
                        match value["request_id"].as_str().filter(|_| value["type"] == "control_request") {
                            Some(id) => Input::BadControl { request_id: id.to_owned(), why: e.to_string() },
                            None => Input::Bad(format!("{e}: {}", line.chars().take(200).collect::<String>())),
                        }
                    }
                },
                Frame::TooLong => Input::Bad(format!("a line longer than {MAX_LINE_BYTES} bytes; discarded")),
                Frame::NotUtf8(e) => Input::Bad(format!("a line that is not valid UTF-8 ({e}); discarded")),
            };
            if tx.send(input).await.is_err() {
                return;
            }
        }
    }
}
