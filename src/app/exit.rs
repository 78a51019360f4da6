//! The one table of exit statuses: every command returns through it, and `--help` and the
//! docs print it from here.

use crate::engine::Recommendation;

/// What an exit status means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Done; with `--exit-code` (and for `loop`): accepted.
    Success,
    /// Any other failure (an internal error, a refusal the repository's state caused).
    Failure,
    /// A usage, configuration or input error.
    Usage,
    /// A check could not run: nothing was recorded.
    CheckCouldNotRun,
    /// With `--exit-code`: the work needs another iteration.
    Iterate,
    /// With `--exit-code`, and `loop`'s stop short of an accept: a person is needed (an
    /// escalation, or a budget that ran out).
    Escalate,
    /// With `--exit-code`, and `loop`: the work should be abandoned.
    Abort,
    /// A signal stopped it (128 + the signal: 130 for Ctrl-C).
    Interrupted(i32),
}

impl ExitStatus {
    /// Every status, in the order `--help` lists them.
    pub const ALL: [ExitStatus; 8] = [
        ExitStatus::Success,
        ExitStatus::Failure,
        ExitStatus::Usage,
        ExitStatus::CheckCouldNotRun,
        ExitStatus::Iterate,
        ExitStatus::Escalate,
        ExitStatus::Abort,
        ExitStatus::Interrupted(2),
    ];

    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Usage => 2,
            ExitStatus::CheckCouldNotRun => 3,
            ExitStatus::Iterate => 10,
            ExitStatus::Escalate => 20,
            ExitStatus::Abort => 30,
            ExitStatus::Interrupted(signal) => u8::try_from(128 + signal).unwrap_or(130),
        }
    }

    /// The status a recommendation exits with (`--exit-code`, `loop`).
    pub fn of(recommendation: Recommendation) -> ExitStatus {
        match recommendation {
            Recommendation::Accept => ExitStatus::Success,
            Recommendation::Iterate => ExitStatus::Iterate,
            Recommendation::Escalate => ExitStatus::Escalate,
            Recommendation::Abort => ExitStatus::Abort,
        }
    }

    /// What it means, in Markdown (the docs' table; `--help` drops the backticks).
    fn meaning(self) -> &'static str {
        match self {
            ExitStatus::Success => "success (with `--exit-code` and for `loop`: accepted)",
            ExitStatus::Failure => {
                "any other failure (an internal error, a refusal, a push the gate blocked)"
            }
            ExitStatus::Usage => {
                "a usage, configuration or input error (with the file, line and column)"
            }
            ExitStatus::CheckCouldNotRun => "a check could not run (nothing was recorded)",
            ExitStatus::Iterate => "with `--exit-code`: iterate",
            ExitStatus::Escalate => {
                "with `--exit-code`: escalate; `loop`: stopped for a person (an escalation, a budget)"
            }
            ExitStatus::Abort => "with `--exit-code`, and `loop`: abort",
            ExitStatus::Interrupted(_) => "signal N stopped it (130: Ctrl-C)",
        }
    }

    /// The status as the tables show it (`128+N` for a signal).
    fn shown(self) -> String {
        match self {
            ExitStatus::Interrupted(_) => "128+N".to_string(),
            other => other.code().to_string(),
        }
    }
}

/// The table as `--help` prints it.
pub fn table() -> String {
    let mut out = String::from("Exit status:\n");
    for status in ExitStatus::ALL {
        let meaning = status.meaning().replace('`', "");
        out.push_str(&format!("  {:>5}  {meaning}\n", status.shown()));
    }
    out
}

/// The table as `docs/src/reference/exit-codes.md` has it (a test keeps the page equal).
pub fn markdown() -> String {
    let mut out = String::from("| status | meaning |\n| --- | --- |\n");
    for status in ExitStatus::ALL {
        out.push_str(&format!("| {} | {} |\n", status.shown(), status.meaning()));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_exit_codes_page_has_the_table() {
        let page = include_str!("../../docs/src/reference/exit-codes.md");
        assert!(
            page.contains(&super::markdown()),
            "docs/src/reference/exit-codes.md differs from app/exit.rs; its table is:\n{}",
            super::markdown()
        );
    }
}
