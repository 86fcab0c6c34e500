//! The `retrystorm` binary: a thin wrapper over [`retrystorm::cli`].

fn main() {
    quiet_on_closed_stdout();
    if let Err(e) = retrystorm::cli::main_with_args(std::env::args_os()) {
        eprintln!("error: {e}");
        std::process::exit(e.exit_code());
    }
}

/// `retrystorm validate X | head -1` closes stdout early; Rust ignores SIGPIPE, so `print!`
/// panics ("failed printing to stdout"). That is no bug of ours: end quietly with the status a
/// shell reports for a process stopped by SIGPIPE (128 + 13), as C tools do. Every other panic
/// keeps the default report.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}
