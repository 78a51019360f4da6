//! The progress line on a terminal while checks run.

use std::io::IsTerminal;

use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use crate::signals::observation::{CheckError, CheckResult};

use super::Progress;

pub(super) struct Display {
    bars: Option<MultiProgress>,
    quiet: bool,
    label: String,
}

impl Display {
    pub(super) fn new(progress: Progress, label: Option<&str>) -> Display {
        let quiet = progress == Progress::Quiet;
        let bars = (!quiet && std::io::stderr().is_terminal()).then(MultiProgress::new);
        Display {
            bars,
            quiet,
            label: label.map(|l| format!(" ({l})")).unwrap_or_default(),
        }
    }

    pub(super) fn start(&self, name: &str) -> Option<ProgressBar> {
        match &self.bars {
            Some(m) => {
                let bar = m.add(ProgressBar::new_spinner());
                if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
                    bar.set_style(style);
                }
                bar.set_message(format!("check {name}{}", self.label));
                bar.enable_steady_tick(Duration::from_millis(120));
                Some(bar)
            }
            None => {
                if !self.quiet {
                    eprintln!("itergate: check {name}{}: running", self.label);
                }
                None
            }
        }
    }

    pub(super) fn finish(
        &self,
        bar: Option<ProgressBar>,
        name: &str,
        result: &Result<CheckResult, CheckError>,
        elapsed: Duration,
    ) {
        let verdict = match result {
            Err(error) => format!("could not run: {}", error.message),
            Ok(CheckResult::Exited { exit_code: 0, .. }) => "passed".into(),
            Ok(CheckResult::Exited { exit_code, .. }) => {
                format!("failed (exit status {exit_code})")
            }
            Ok(CheckResult::Report { .. }) => "report read".into(),
            Ok(CheckResult::BuildFailed { diagnostics, .. }) => {
                format!("build failed ({} errors)", diagnostics.len())
            }
            Ok(CheckResult::TimedOut { seconds, .. }) => format!("timed out after {seconds}s"),
            Ok(CheckResult::TrackedFilesChanged { files, .. }) => {
                format!("changed {} tracked file(s)", files.len())
            }
            Ok(CheckResult::NotWritten { path, said, .. }) => {
                let said = said.as_ref().map(|s| format!(": {s}")).unwrap_or_default();
                format!("report read; {path} was not written (unmeasured this time){said}")
            }
        };
        let line = format!(
            "check {name}{}: {verdict} in {:.1}s",
            self.label,
            elapsed.as_secs_f64()
        );
        match bar {
            Some(b) => b.finish_with_message(line),
            None if !self.quiet => eprintln!("itergate: {line}"),
            None => {}
        }
    }
}
