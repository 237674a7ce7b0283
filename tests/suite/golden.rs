//! Golden transcripts (filled in below).
