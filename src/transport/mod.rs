//! Front-ends over the session API. Each one reads requests its own way and
//! hands responses to a single writer; none holds agent logic.

pub mod http;
pub mod hub;
pub mod pipe_writer;
pub mod run;
pub mod stdio;
pub mod writer;
