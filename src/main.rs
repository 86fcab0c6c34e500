//! The `retrystorm` binary: a thin wrapper over [`retrystorm::cli`].

fn main() {
    if let Err(e) = retrystorm::cli::main_with_args(std::env::args_os()) {
        eprintln!("error: {e}");
        std::process::exit(e.exit_code());
    }
}
