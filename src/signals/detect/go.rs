//! Go: `go test` with its coverage profile, and golangci-lint (its major version read).

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::Check;
use crate::signals::report::ReportFormat;

use super::{check, on_path, source};

pub(super) const GO_COVER_PATH: &str = ".itergate-cover.out";

/// A Go module: `go test -json` with a coverage profile, `go vet`, and staticcheck or
/// golangci-lint when installed.
pub(super) fn go(root: &Path, checks: &mut BTreeMap<String, Check>, notes: &mut Vec<String>) {
    checks.insert(
        "tests".into(),
        Check {
            report: vec![
                source(ReportFormat::GoTestJson, None),
                source(ReportFormat::GoCover, Some(GO_COVER_PATH)),
            ],
            ..check(
                &format!("go test -json -coverprofile={GO_COVER_PATH} ./..."),
                ReportFormat::GoTestJson,
                None,
            )
        },
    );
    checks.insert(
        "vet".into(),
        check("go vet ./... 2>&1", ReportFormat::GoVet, None),
    );
    let configured = GOLANGCI_CONFIGS.iter().any(|f| root.join(f).is_file());
    let golangci = on_path("golangci-lint").then(golangci_major).flatten();
    match golangci {
        // The project's own linter set-up, or the only linter installed.
        Some(major) if configured || !on_path("staticcheck") => {
            let run = if major >= 2 {
                "golangci-lint run --output.checkstyle.path=stdout --show-stats=false ./..."
            } else {
                "golangci-lint run --out-format=checkstyle ./..."
            };
            checks.insert("lint".into(), check(run, ReportFormat::Checkstyle, None));
        }
        _ if on_path("staticcheck") => {
            checks.insert(
                "lint".into(),
                check("staticcheck -f sarif ./...", ReportFormat::Sarif, None),
            );
            if configured {
                notes.push("lint: the project configures golangci-lint, which is not on PATH (staticcheck runs instead); install it (https://golangci-lint.run/welcome/install/), then run `itergate init --force`".into());
            }
        }
        _ => notes.push(
            "lint: neither golangci-lint nor staticcheck is on PATH (only `go vet` runs); `go install honnef.co/go/tools/cmd/staticcheck@latest`, then run `itergate init --force`"
                .into(),
        ),
    }
}

/// golangci-lint's configuration files.
pub(super) const GOLANGCI_CONFIGS: [&str; 4] = [
    ".golangci.yml",
    ".golangci.yaml",
    ".golangci.toml",
    ".golangci.json",
];

/// The major version of the golangci-lint on PATH (`golangci-lint has version 2.1.6 …`):
/// its flags for the output format changed in 2.
pub(super) fn golangci_major() -> Option<u32> {
    let out = std::process::Command::new("golangci-lint")
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.split("version ").nth(1)?.trim_start_matches('v');
    version.split('.').next()?.parse().ok()
}
