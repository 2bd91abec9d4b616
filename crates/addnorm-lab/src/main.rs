//! The `addnorm` command line: `cargo run --release -- <command>`.

fn main() {
    std::process::exit(addnorm_lab::cli::main());
}
