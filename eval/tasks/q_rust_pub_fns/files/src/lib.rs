pub mod geometry;
mod util;
