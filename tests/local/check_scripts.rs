//! A change that edits the script a check runs is told so: the judge's own script changed.

use crate::gitrepo;

use gitrepo::{write_script, TestRepo};

const BIN: &str = env!("CARGO_BIN_EXE_itergate");

const CHECK: &str = "#!/bin/sh\nmkdir -p out\necho '<testsuite name=\"s\"><testcase classname=\"s\" name=\"t0\"/></testsuite>' > out/junit.xml\n";

#[test]
fn editing_the_script_a_check_runs_is_an_integrity_warning() {
    let repo = TestRepo::new();
    write_script(&repo.path.join("check.sh"), CHECK);
    repo.write(
        ".itergate.yml",
        "checks:\n  tests:\n    run: ./check.sh\n    report: { format: junit, path: out/junit.xml }\nhook:\n  base: main\n",
    );
    repo.write(".gitignore", "out/\n");
    repo.commit_file("lib.txt", "one\n", "base");
    repo.git(&["checkout", "--quiet", "-b", "feature"]);
    write_script(&repo.path.join("check.sh"), &format!("{CHECK}# quicker\n"));
    repo.git(&["add", "check.sh"]);
    repo.git(&["commit", "--quiet", "-m", "speed up the check"]);
    let out = std::process::Command::new(BIN)
        .args(["run", "--exit-code"])
        .current_dir(&repo.path)
        .env("NO_COLOR", "1")
        .env_remove("ITERGATE_SKIP")
        .output()
        .expect("itergate runs");
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "{text}");
    assert!(
        text.contains("WARNING the change edited `check.sh`, which check `tests` runs"),
        "{text}"
    );
}
