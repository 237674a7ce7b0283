//! The integration suite: one binary, many modules (see suite/mod.rs).
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

mod suite;
