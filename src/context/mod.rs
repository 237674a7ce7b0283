//! The context window: how large it is, how full a request would be, and
//! how much room an answer gets.
//!
//! Owns: the token estimate ([`Budget`]: the server's own `prompt_tokens` of
//! the previous call plus [`BYTES_PER_TOKEN`] bytes per token for what was
//! added since), the limits derived from a window ([`prompt_limit`],
//! [`answer_room`], [`tool_result_cap`]), and the window probe
//! ([`probe::probe_window`]). Pruning and compaction of the conversation
//! itself live in `conversation` (the edits) and `agent::fit` (the policy).
//!
//! The estimate's error: code and English run 3.5–4.5 bytes per token with
//! the tokenizers of the models pirn meets (Qwen, Llama, GPT); counting 3
//! over-estimates new text by 15–50 %, so pirn prunes a little early rather
//! than overflow. After each call the server's count replaces the estimate
//! for everything sent so far, so the error never accumulates.

pub mod instructions;
pub mod probe;
pub mod workspace;

/// Bytes counted per token for text the server has not counted yet
/// (conservative; see the module doc).
pub const BYTES_PER_TOKEN: u64 = 3;
/// Share of the window a prompt plus its answer may fill (the rest absorbs
/// the estimate's error and the chat template's tokens).
pub const FILL_PERCENT: u64 = 90;
/// Model answers (with their tool results) kept whole by pruning and compaction.
pub const KEEP_TURNS: usize = 2;
/// Tokens of room an answer always gets when the window is known.
pub const MIN_ANSWER_TOKENS: u64 = 256;

/// Token accounting of one session's conversation.
#[derive(Debug, Default, Clone)]
pub struct Budget {
    /// The window learned from the server (a context error), in tokens.
    pub learned_window: Option<u32>,
    /// The server refused `response_format` (HTTP 400 naming it): structured
    /// answers are asked for in words only, for the rest of the session.
    pub no_response_format: bool,
    /// `(prompt_tokens, bytes)`: what the server counted for the last
    /// request and how many bytes that request carried.
    last: Option<(u64, usize)>,
}

impl Budget {
    /// Estimated prompt tokens of a request carrying `bytes` bytes.
    pub fn estimate(&self, bytes: usize) -> u64 {
        match self.last {
            Some((tokens, sent)) if sent > 0 && bytes >= sent => {
                tokens.saturating_add(((bytes - sent) as u64).div_ceil(BYTES_PER_TOKEN))
            }
            // Less than was counted (after pruning): the same ratio.
            Some((tokens, sent)) if sent > 0 => (tokens as u128 * bytes as u128).div_ceil(sent as u128) as u64,
            _ => (bytes as u64).div_ceil(BYTES_PER_TOKEN),
        }
    }

    /// Records the server's count for a request of `bytes` bytes.
    pub fn record(&mut self, prompt_tokens: u64, bytes: usize) {
        if prompt_tokens > 0 && bytes > 0 {
            self.last = Some((prompt_tokens, bytes));
        }
    }

    /// Learns a window from the server; the smallest one heard wins.
    pub fn learn_window(&mut self, window: u32) {
        self.learned_window = Some(self.learned_window.map_or(window, |w| w.min(window)));
    }
}

/// Most prompt tokens a request may carry in a window of `window` tokens,
/// leaving room for an answer of up to `max_tokens` (at most a quarter of
/// the window is reserved for it).
pub fn prompt_limit(window: u32, max_tokens: u32) -> u64 {
    let w = u64::from(window);
    let reserve = u64::from(max_tokens).min(w / 4).max(MIN_ANSWER_TOKENS.min(w / 4));
    (w * FILL_PERCENT / 100).saturating_sub(reserve)
}

/// `max_tokens` for a request of `prompt` estimated tokens: the configured
/// value, never more than the room left in the window (at least
/// [`MIN_ANSWER_TOKENS`]).
pub fn answer_room(window: Option<u32>, prompt: u64, max_tokens: u32) -> u32 {
    let Some(w) = window else { return max_tokens };
    let room = (u64::from(w) * FILL_PERCENT / 100).saturating_sub(prompt).max(MIN_ANSWER_TOKENS);
    u32::try_from(room).unwrap_or(u32::MAX).min(max_tokens)
}

/// Most bytes one tool result may put into a conversation with this window:
/// a quarter of the window, and never more than `default` (the cap for an
/// unknown window).
pub fn tool_result_cap(window: Option<u32>, default: usize) -> usize {
    match window {
        Some(w) => (u64::from(w) * BYTES_PER_TOKEN / 4).clamp(1024, default as u64) as usize,
        None => default,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_follows_the_server_count() {
        let mut b = Budget::default();
        assert_eq!(b.estimate(3000), 1000);
        b.record(800, 4000);
        assert_eq!(b.estimate(4000), 800);
        assert_eq!(b.estimate(4300), 900, "new bytes at 3 per token");
        assert_eq!(b.estimate(2000), 400, "after pruning: the server's ratio");
        b.learn_window(16384);
        b.learn_window(8192);
        b.learn_window(32768);
        assert_eq!(b.learned_window, Some(8192));
    }

    #[test]
    fn limits_leave_room_for_an_answer() {
        assert_eq!(prompt_limit(8192, 4096), 7372 - 2048);
        assert_eq!(prompt_limit(128_000, 4096), 115_200 - 4096);
        assert_eq!(answer_room(Some(8192), 6000, 4096), 1372);
        assert_eq!(answer_room(Some(8192), 8000, 4096), 256);
        assert_eq!(answer_room(None, 8000, 4096), 4096);
        assert_eq!(tool_result_cap(Some(8192), 48 * 1024), 6144);
        assert_eq!(tool_result_cap(Some(1_000_000), 48 * 1024), 48 * 1024);
        assert_eq!(tool_result_cap(None, 48 * 1024), 48 * 1024);
    }
}
