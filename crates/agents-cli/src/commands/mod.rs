//! One module per command; [`run`] dispatches.

mod config;
mod context;
mod feedback;
mod index;
mod knowledge;
mod loadout;
mod mcp;
mod orchestrate;
mod plan;
mod project;
mod project_context;
mod query;
mod uko;
mod watch;

use crate::cli::{Cli, Command};
use crate::settings::Settings;

pub fn run(cli: Cli) -> anyhow::Result<()> {
    let settings = Settings::resolve(&cli.global)?;
    match cli.command {
        Command::Query(args) => query::query(&settings, *args),
        Command::Index(args) => index::index(&settings, args),
        Command::Status(args) => index::status(&settings, args),
        Command::Project(cmd) => project::run(&settings, cmd),
        Command::Config(cmd) => config::run(&settings, cmd),
        Command::Uko(cmd) => uko::run(&settings, cmd),
        Command::Plan(cmd) => plan::run(&settings, cmd),
        Command::Context(cmd) => context::run(&settings, cmd),
        Command::Strategies { path } => query::strategies(&settings, &path),
        Command::Mcp { no_watch, allow_root } => mcp::serve(settings, !no_watch, &allow_root),
        Command::Serve(args) => mcp::http::serve(
            settings,
            mcp::http::ServeOptions {
                bind: args.bind,
                token_file: args.token_file,
                print_token: args.print_token,
                watch: !args.no_watch,
                allow_roots: args.allow_root,
            },
        ),
        Command::Watch { path, debounce_ms } => watch::watch(settings, &path, debounce_ms),
        Command::Knowledge(args) => knowledge::run(&settings, args),
        Command::Orchestrate(args) => orchestrate::run(&settings, args),
    }
}
