//! `agents`: the one binary of the context and knowledge engine.
//!
//! Commands are thin: resolve settings once ([`settings`]), open the
//! [`agents_engine::Engine`], call a library, print through [`output`].
//! Exit codes: 0 success, 1 failure, 2 bad usage or bad input.

mod cli;
mod commands;
mod exit;
mod output;
mod progress;
mod settings;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc: indexing allocates a token at a time on several threads, and
/// glibc's allocator spent a fifth of a first text-index sync on its locks.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { exit::USAGE } else { exit::SUCCESS };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    init_tracing(cli.global.verbose, cli.global.quiet);
    match commands::run(cli) {
        Ok(()) => ExitCode::from(exit::SUCCESS),
        Err(err) => {
            eprintln!("error: {}", exit::render(&err));
            ExitCode::from(exit::code_for(&err))
        }
    }
}

fn init_tracing(verbose: u8, quiet: bool) {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENTS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).init();
}
