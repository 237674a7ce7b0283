//! `read_file {file_path, offset?, limit?}`: numbered lines of a text file.
//!
//! Owns: paging (`offset` is the 1-based first line, `limit` the line count,
//! default 2000; a file of at most [`WHOLE_FILE_BYTES`] read from line 1 is
//! shown whole, whatever the limit), cutting over-long lines, refusing binary and oversized
//! files with a message that says what they are.

use std::io::{BufRead, BufReader, Read};

use schemars::JsonSchema;
use serde::Deserialize;

use super::context::ToolContext;
use super::error::{ToolError, failed};

/// Lines returned when `limit` is absent.
pub const DEFAULT_LIMIT: usize = 2000;
/// Files up to this size (bytes) read from line 1 are shown whole: a small
/// model that asks for `limit: 1` of a 6-line file needs the rest next, and
/// asking again and again is how it loops.
pub const WHOLE_FILE_BYTES: u64 = 8 * 1024;
/// Characters kept of one line.
pub const MAX_LINE_CHARS: usize = 2000;
/// Files larger than this (bytes) are refused.
pub const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;

/// Arguments as the model sends them (their schema is the tool's `parameters`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args {
    /// Path of the file, relative to the workspace or absolute.
    pub file_path: String,
    /// First line to read (1-based). Default 1.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub offset: Option<usize>,
    /// Number of lines to read. Default 2000.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<usize>,
}

/// What the model is told the tool does.
pub const DESCRIPTION: &str = "Read a text file from the workspace. Returns numbered lines (`N\\tline`). Use offset (1-based line) and limit to page through long files.";

/// Reads the file. Errors (to the model): outside the workspace, missing,
/// a directory, binary, larger than [`MAX_FILE_BYTES`], unreadable.
pub fn run(args: Args, ctx: &ToolContext) -> Result<String, ToolError> {
    let target = ctx.resolve(&args.file_path)?;
    let path = target.path().to_path_buf();
    let shown = ctx.display(&path);
    let (len, mut reader): (u64, Box<dyn BufRead>) = match open(ctx, &target) {
        Ok(opened) => opened,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return failed(format!("{shown}: no such file. {}", ctx.nearby(&path)));
        }
        Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => {
            return failed(format!("{shown} is a directory; use glob to list files"));
        }
        Err(e) => return failed(format!("{shown}: cannot open: {e}")),
    };
    if len > MAX_FILE_BYTES {
        return failed(format!(
            "{shown} is {len} bytes, over the {MAX_FILE_BYTES} byte limit of read_file; use grep to find what you need in it"
        ));
    }
    match reader.fill_buf() {
        Ok(head) if head[..head.len().min(8192)].contains(&0) || infer::get(head).is_some_and(|k| !is_text(k)) => {
            let kind = match infer::get(head) {
                Some(k) => format!("{} ({})", k.mime_type(), k.extension()),
                None => "binary data".to_owned(),
            };
            return failed(format!("{shown} is a binary file: {kind}, {} bytes; read_file only reads text", len));
        }
        Ok(_) => {}
        Err(e) => return failed(format!("{shown}: cannot read: {e}")),
    }
    let offset = args.offset.unwrap_or(1).max(1);
    ctx.mark_read(&target);
    let mut limit =
        if offset == 1 && len <= WHOLE_FILE_BYTES { usize::MAX } else { args.limit.unwrap_or(DEFAULT_LIMIT).max(1) };
    let mut capped = false;
    let mut out = String::new();
    let mut line_no = 0usize;
    let mut shown_lines = 0usize;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.by_ref().take(MAX_FILE_BYTES).read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                return failed(format!("{shown}: read failed at line {}: {e}", line_no + 1));
            }
        }
        line_no += 1;
        if ctx.cancel.is_cancelled() {
            return failed("cancelled");
        }
        if line_no < offset || shown_lines >= limit {
            continue;
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim_end_matches(['\n', '\r']);
        // Past the result cap (smaller on a small context window) the page
        // ends here; the note below says where to read on.
        if shown_lines > 0 && out.len() + text.len() + 16 > ctx.result_cap.saturating_sub(200) {
            limit = shown_lines;
            capped = true;
            continue;
        }
        out.push_str(&format!("{line_no:>6}\t"));
        match text.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => {
                out.push_str(&text[..cut]);
                out.push_str(&format!(" [... line cut at {MAX_LINE_CHARS} of {} characters]", text.chars().count()));
            }
            None => out.push_str(text),
        }
        out.push('\n');
        shown_lines += 1;
    }
    let total = line_no;
    if total == 0 {
        return Ok(format!("{shown} is empty"));
    }
    if offset > total {
        return failed(format!("{shown} has {total} lines; offset {offset} is past the end"));
    }
    let last = offset + shown_lines - 1;
    if last < total {
        let why = if capped { " (cut to the size a result may have)" } else { "" };
        out.push_str(&format!("[showing lines {offset}-{last} of {total}{why}; read on with offset={}]\n", last + 1));
    }
    Ok(out)
}

/// Types `infer` recognises that are still text (XML, HTML, shell scripts…).
fn is_text(kind: infer::Type) -> bool {
    kind.mime_type().starts_with("text/") || matches!(kind.extension(), "xml" | "html" | "sh" | "json" | "svg")
}

/// The file's length in bytes and a reader of it: the client's text when
/// it reads files ([`super::client_files`]), else the file beneath the
/// workspace root. `IsADirectory` for a directory.
fn open(ctx: &ToolContext, target: &super::confine::Confined) -> std::io::Result<(u64, Box<dyn BufRead>)> {
    if target.is_dir() {
        return Err(std::io::Error::new(std::io::ErrorKind::IsADirectory, "a directory"));
    }
    if let Some(client) = ctx.client_files.as_ref().filter(|c| c.reads()) {
        let text = client.read(target.path())?;
        return Ok((text.len() as u64, Box::new(std::io::Cursor::new(text.into_bytes()))));
    }
    let file = target.open_read()?;
    let len = file.metadata()?.len();
    Ok((len, Box::new(BufReader::with_capacity(64 * 1024, file))))
}
