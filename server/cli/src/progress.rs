//! Progress display: an indicatif line on a terminal, plain lines every few seconds otherwise
//! (CI logs stay readable).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use flymc_core::explore::Progress;

pub struct Reporter {
    bar: Option<ProgressBar>,
    last_line: Instant,
    every: Duration,
}

impl Reporter {
    pub fn new(label: &str) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {prefix} {msg}").expect("static template"),
            );
            bar.set_prefix(label.to_string());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Reporter {
            bar,
            last_line: Instant::now(),
            every: Duration::from_secs(5),
        }
    }

    pub fn update(&mut self, p: &Progress) {
        let line = format!(
            "paths {} | queue {} | unique states {} | {:.1} paths/s",
            p.paths,
            p.queue,
            p.unique_states,
            p.paths_per_sec()
        );
        match &self.bar {
            Some(bar) => bar.set_message(line),
            None => {
                if self.last_line.elapsed() >= self.every {
                    self.last_line = Instant::now();
                    eprintln!("progress: {line}");
                }
            }
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
