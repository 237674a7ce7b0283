//! [`Completion`]: one complete model answer as the stream assembled it
//! (text, tool calls, usage, finish reason), and [`ToolCall`].

use crate::wire::Usage;

/// One complete model answer, assembled from the stream.
#[derive(Debug, Default, Clone)]
pub struct Completion {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    pub finish_reason: Option<String>,
    /// Set when the stream was ended because the answer ran away repeating
    /// itself ([`super::runaway`]); `finish_reason` is then `length` and the last
    /// tool call's arguments (or the text) are cut mid-repeat.
    pub runaway: Option<super::runaway::Runaway>,
}

impl Completion {
    /// pirn's estimate of the completion's tokens when the provider reports
    /// no usage: its text and tool calls at four bytes a token.
    pub fn estimated_tokens(&self) -> u64 {
        let bytes = self.text.len() + self.tool_calls.iter().map(|c| c.name.len() + c.arguments.len()).sum::<usize>();
        (bytes as u64).div_ceil(4)
    }
}

/// A tool call requested by the model; `arguments` is the raw JSON text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}
