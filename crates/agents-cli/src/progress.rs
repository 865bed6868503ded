//! Progress bars on a terminal (indicatif), silent when piped or quiet.

use std::io::IsTerminal;
use std::time::Duration;

use agents_acms::indexing::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar on stderr implementing the indexer's [`Progress`].
pub struct Bar {
    bar: ProgressBar,
}

impl Bar {
    /// A bar that draws only when stderr is a terminal and output is for humans.
    pub fn new(enabled: bool) -> Bar {
        let target = if enabled && std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Bar { bar: ProgressBar::with_draw_target(None, target) }
    }
}

impl Progress for Bar {
    fn start(&self, phase: &str, total: u64) {
        if total == 0 {
            self.bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("valid template"));
            self.bar.enable_steady_tick(Duration::from_millis(100));
        } else {
            self.bar.disable_steady_tick();
            self.bar.set_style(
                ProgressStyle::with_template("{msg:>9} [{bar:30}] {pos}/{len} files ({per_sec}, {eta} left)")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            self.bar.set_length(total);
            self.bar.set_position(0);
        }
        self.bar.set_message(phase.to_string());
    }

    fn advance(&self, n: u64) {
        self.bar.inc(n);
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
