//! One session: its configuration, its conversation, the FIFO queue of
//! sends, the one send that runs at a time, status and cancellation.
//!
//! Owns: the session API every transport drives ([`Session::open`],
//! [`Session::send`], [`Session::status`], [`Session::cancel`],
//! [`Session::handle`], [`Session::drain`], [`Session::shutdown`],
//! [`Session::end`]) and the
//! rule that every accepted send gets exactly one `result` (finished,
//! failed, cancelled while running or while queued, or timed out in the
//! queue). The handle is [`api`]'s, the state its handles and runner share
//! [`shared`]'s, the queue's rules are in [`queue`], the runner task in
//! [`runner`]; opening, rewinding and ending add their own `impl Session`
//! blocks ([`open`], [`rewind`], [`end`]). This file only declares and
//! re-exports them.
//!
//! Output goes to an [`Outbox`]; the transport's single writer serialises it
//! and assigns `event_seq`. Nothing here does I/O but the model call and the
//! tools, through `agent`.

mod api;
mod end;
pub mod fork;
mod open;
mod open_error;
mod persist;
pub mod queue;
mod rewind;
mod runner;
mod shared;

pub use end::Ending;
pub use open::ClientSide;
pub use open_error::{OpenError, ResumeError};

pub use crate::agent::{OUTBOX_CAPACITY, Outbox};
pub use api::Session;
pub use queue::SendRejected;
