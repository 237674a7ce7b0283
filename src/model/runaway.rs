//! A runaway answer: a model caught in a loop writes the same few bytes
//! again and again, in its text or inside a tool call's arguments, until
//! `max_tokens`. A small local model at temperature 0 does this (seen on
//! Exercism's atbash-cipher: a test file whose one string repeated
//! `"zruogvqf "` for 4,096 tokens, eleven minutes on two cores, then
//! rejected by the server as unparsable JSON).
//!
//! Owns: the one fact read ([`tail_repeat`]: the last [`MIN_BYTES`] bytes
//! of a string are one unit of at most [`MAX_UNIT`] bytes repeated
//! verbatim, the last [`SHORT_MIN_BYTES`] bytes one unit of at most
//! [`SHORT_UNIT`] bytes, or the last [`LONG_MIN_BYTES`] bytes one unit of
//! at most [`LONG_UNIT`] bytes) and the [`Runaway`] a stream ended there
//! reports.
//! It reads bytes, not words: the same for any language and any file. What follows
//! is the agent's (`agent::turn`): nothing of the answer runs, and the
//! model is told why.
//!
//! Why three lengths: what a runaway costs is tokens, and a short unit costs
//! about a token per repeat or more (llama.cpp streamed a tool call's
//! arguments about one byte per token: Exercism's atbash-cipher again, in
//! the eval's Exercism tune sample, `"zvqf"` repeated in a test file for
//! 2,361 tokens, 340 s of a 726 s task, before the 2 KB rule stopped it). A unit of at most
//! [`SHORT_UNIT`] bytes is stopped after [`SHORT_MIN_BYTES`] bytes (at
//! least 32 repeats of it, 128 of a four-byte unit). And a unit longer
//! than [`MAX_UNIT`]: a model sent back with a note can go round whole
//! sentences (seen on tune_2, a question sent back with a note: about 190 bytes of
//! the system prompt's rules, again and again for 4,096 tokens, five minutes
//! here); a unit of at most [`LONG_UNIT`] bytes is stopped after
//! [`LONG_MIN_BYTES`] bytes (8 repeats of the longest).
//!
//! The cost of a false positive: a legitimate answer or file holding more
//! than 2 KB of one unit of up to 128 bytes repeated verbatim (say 400
//! identical short lines), more than 4 KB of one unit of up to 512 bytes
//! (8 identical blocks of code), or more than 512 bytes of one unit of up to 16
//! bytes (a literal list of 200 zeros, 32 identical 16-byte lines, a 512-
//! character rule of `=`), is stopped as a runaway. Such content is
//! written with a loop, not spelled out, and the model is told what was
//! stopped.

/// Shortest repeated tail that counts, in bytes (about 500 tokens).
pub const MIN_BYTES: usize = 2048;
/// Longest unit looked for, in bytes. With [`MIN_BYTES`] this means at
/// least 16 repeats of the unit.
pub const MAX_UNIT: usize = 128;
/// Shortest repeated tail of a short unit that counts, in bytes.
pub const SHORT_MIN_BYTES: usize = 512;
/// Longest unit [`SHORT_MIN_BYTES`] applies to, in bytes.
pub const SHORT_UNIT: usize = 16;
/// Shortest repeated tail of a long unit that counts, in bytes (about
/// 1,000 tokens).
pub const LONG_MIN_BYTES: usize = 4096;
/// Longest unit [`LONG_MIN_BYTES`] applies to, in bytes: at least 8
/// repeats of it.
pub const LONG_UNIT: usize = 512;
/// Bytes an answer grows between two looks at its tail.
pub const LOOK_EVERY: usize = 256;

/// Where and what an answer kept repeating when its stream was ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runaway {
    /// The repeated unit, as text (a unit cut inside a UTF-8 character
    /// shows U+FFFD there).
    pub unit: String,
    /// Whole repeats of the unit at the end of the answer.
    pub repeats: usize,
    /// The tool call whose arguments repeat (its name); `None` for the text.
    pub in_call: Option<String>,
}

impl Runaway {
    /// Reads the tail of `s`: a [`Runaway`] when it repeats (see
    /// [`tail_repeat`]), `in_call` naming where `s` came from.
    pub fn of(s: &str, in_call: Option<&str>) -> Option<Runaway> {
        let (unit, start) = tail_repeat(s.as_bytes())?;
        let bytes = &s.as_bytes()[start..start + unit];
        Some(Runaway {
            unit: String::from_utf8_lossy(bytes).into_owned(),
            repeats: (s.len() - start) / unit,
            in_call: in_call.map(str::to_owned),
        })
    }

    /// One line for the model and the host: what repeated, how often, where.
    pub fn describe(&self) -> String {
        let place = match &self.in_call {
            Some(name) => format!("the arguments of the {name} call"),
            None => "the text".to_owned(),
        };
        format!("{place} repeated {:?} {} times in a row", self.unit, self.repeats)
    }
}

/// When the last [`SHORT_MIN_BYTES`] bytes of `s` are one unit of at most
/// [`SHORT_UNIT`] bytes repeated, the last [`MIN_BYTES`] one unit of at
/// most [`MAX_UNIT`] bytes, or the last [`LONG_MIN_BYTES`] one unit of at
/// most [`LONG_UNIT`] bytes: the shortest such unit's length, and where the
/// repetition begins (it may start before the tail that was compared).
pub fn tail_repeat(s: &[u8]) -> Option<(usize, usize)> {
    let n = s.len();
    // The shortest period first; compared from the end, where a loop is.
    let period = |tail: usize, max: usize| {
        let from = n.checked_sub(tail)?;
        (1..=max).find(|&p| (from + p..n).rev().all(|i| s[i] == s[i - p])).map(|p| (p, from))
    };
    let (unit, from) = period(SHORT_MIN_BYTES, SHORT_UNIT)
        .or_else(|| period(MIN_BYTES, MAX_UNIT))
        .or_else(|| period(LONG_MIN_BYTES, LONG_UNIT))?;
    let mut start = from;
    while start > 0 && s[start - 1] == s[start - 1 + unit] {
        start -= 1;
    }
    Some((unit, start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_tail_is_found_with_its_unit_and_start() {
        let s = format!(r#"{{"content": "assert encode('x') == '{}"#, "zruogvqf ".repeat(400));
        let r = Runaway::of(&s, Some("write_file")).expect("a runaway");
        // The shortest unit; the tail aligns it to where the repetition ends.
        assert_eq!(r.unit.len(), 9);
        assert!("zruogvqf zruogvqf ".contains(&r.unit), "{r:?}");
        assert!(r.repeats >= 399, "{r:?}");
        assert!(r.describe().starts_with("the arguments of the write_file call repeated"), "{}", r.describe());
        // A unit of up to SHORT_UNIT bytes is stopped after SHORT_MIN_BYTES.
        assert_eq!(tail_repeat("zruogvqf ".repeat(57).as_bytes()), Some((9, 0)));
        assert_eq!(tail_repeat("zruogvqf ".repeat(56).as_bytes()), None, "504 bytes: not yet");
    }

    #[test]
    fn a_short_unit_is_stopped_sooner_than_a_long_one() {
        // Seen on atbash-cipher (Exercism tune sample): a four-byte unit in a test file.
        let head = r#"{"file_path": "atbash_cipher_test.py", "content": "assert encode('x') == '"#;
        let s = format!("{head}{}", "zvqf".repeat(SHORT_MIN_BYTES / 4));
        let r = Runaway::of(&s, Some("write_file")).expect("a runaway after 512 bytes");
        assert_eq!((r.unit.as_str(), r.repeats), ("zvqf", 128), "{r:?}");
        assert_eq!(tail_repeat(format!("{head}{}", "zvqf".repeat(127)).as_bytes()), None);
        // A 17-byte unit needs the long rule's MIN_BYTES.
        let line = "    x = f(1, 2)\n\n";
        assert_eq!(line.len(), SHORT_UNIT + 1);
        assert_eq!(tail_repeat(line.repeat(MIN_BYTES / line.len()).as_bytes()), None);
        assert!(tail_repeat(line.repeat(MIN_BYTES / line.len() + 2).as_bytes()).is_some());
        // A literal 16 x 16 matrix of zeros is not a runaway: its unit is a row.
        let rows: String = (0..16).map(|_| format!("    [{}0],\n", "0, ".repeat(15))).collect();
        assert_eq!(tail_repeat(rows.as_bytes()), None);
    }

    #[test]
    fn prose_going_round_in_long_sentences_is_stopped() {
        // Seen on tune_2 (a question sent back with a note): the
        // system prompt's sentences, about 190 bytes a round, for 4,096
        // tokens.
        let round = "If you have any questions, ask. If you need help, call the next tool you need. If you have \
                     any changes, make them now with edit_file or write_file. Otherwise call the next tool you \
                     need. ";
        assert!(round.len() > MAX_UNIT && round.len() <= LONG_UNIT);
        let text = format!(
            "The answer is 3 milliseconds.To count lines, use grep. {}",
            round.repeat(LONG_MIN_BYTES / round.len() + 1)
        );
        let r = Runaway::of(&text, None).expect("a runaway");
        assert_eq!(r.unit.len(), round.len(), "{r:?}");
        assert!(r.repeats > LONG_MIN_BYTES / round.len(), "{r:?}");
        assert_eq!(Runaway::of(&round.repeat(LONG_MIN_BYTES / round.len()), None), None, "not before LONG_MIN_BYTES");
    }

    #[test]
    fn ordinary_code_and_long_units_are_not_runaways() {
        let code: String = (0..400).map(|i| format!("    assert f({i}) == {}\n", i * 2)).collect();
        assert!(code.len() > MIN_BYTES);
        assert_eq!(Runaway::of(&code, None), None);
        // A unit longer than MAX_UNIT, repeated, counts only once it fills
        // LONG_MIN_BYTES.
        let long = format!("{}\n", "x".repeat(MAX_UNIT)).chars().rev().collect::<String>();
        let unit = format!("{long}y");
        assert_eq!(tail_repeat(unit.repeat(LONG_MIN_BYTES / unit.len()).as_bytes()), None);
        assert_eq!(tail_repeat(unit.repeat(40).as_bytes()), Some((unit.len(), 0)));
        assert_eq!(tail_repeat(format!("{}z", "y".repeat(LONG_UNIT)).repeat(9).as_bytes()), None, "513 bytes");
        // One byte repeated is.
        assert_eq!(tail_repeat(format!("ok {}", "=".repeat(MIN_BYTES)).as_bytes()), Some((1, 3)));
    }
}
