//! The `pirn` binary: a thin entry over the library. The command line is
//! [`cli`]; everything it starts lives in the `pirn` crate.

mod cli;

fn main() {
    cli::main()
}
