//! What the checks run: a change that edits the script a check runs is told so (the
//! judge's own script changed), and `setup:` commands prepare every checkout first.

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

/// The check needs `gen/data.txt`, which no commit holds: `setup:` makes it in every
/// checkout, the base's scratch worktree included; a setup that fails records nothing.
#[test]
fn setup_commands_run_in_every_checkout_before_the_checks() {
    let repo = TestRepo::new();
    let check = "#!/bin/sh\nmkdir -p out\nif [ -f gen/data.txt ]; then r='<testcase classname=\"s\" name=\"t0\"/>'; else r='<testcase classname=\"s\" name=\"t0\"><failure message=\"no data\"/></testcase>'; fi\necho \"<testsuite name=\\\"s\\\">$r</testsuite>\" > out/junit.xml\n";
    write_script(&repo.path.join("check.sh"), check);
    repo.write(
        ".itergate.yml",
        "setup:\n  - mkdir -p gen && echo data > gen/data.txt\nchecks:\n  tests:\n    run: ./check.sh\n    report: { format: junit, path: out/junit.xml }\nhook:\n  base: main\n",
    );
    repo.write(".gitignore", "out/\ngen/\n");
    repo.commit_file("lib.txt", "one\n", "base");
    repo.git(&["checkout", "--quiet", "-b", "feature"]);
    repo.commit_file("lib.txt", "two\n", "work");
    let run = |dir: &std::path::Path| {
        std::process::Command::new(BIN)
            .args(["run", "--exit-code"])
            .current_dir(dir)
            .env("NO_COLOR", "1")
            .env_remove("ITERGATE_SKIP")
            .output()
            .expect("itergate runs")
    };
    let out = run(&repo.path);
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("setup `mkdir -p gen"), "{text}");
    assert!(text.contains("Tests Passing: 100%"), "{text}");

    // A setup that fails: the checks cannot run.
    repo.git(&["checkout", "--quiet", "main"]);
    repo.write(
        ".itergate.yml",
        "setup:\n  - exit 4\nchecks:\n  tests:\n    run: ./check.sh\n    report: { format: junit, path: out/junit.xml }\nhook:\n  base: main\n",
    );
    repo.git(&["commit", "--quiet", "-am", "a broken setup"]);
    repo.git(&["checkout", "--quiet", "feature"]);
    repo.git(&["rebase", "--quiet", "main"]);
    let out = run(&repo.path);
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("setup `exit 4` failed"), "{text}");
}

/// A `coverage` check whose command turns the data the `tests` check writes into its
/// report: without `needs` it starts before the tests wrote the data (the error says why
/// and what to write); with `needs: [tests]` it starts after them.
/// A command that fails before writing any of its two reports is one error, its output
/// shown once, both reports named.
#[test]
fn a_check_that_wrote_none_of_its_reports_is_one_error() {
    let repo = TestRepo::new();
    repo.write(
        ".itergate.yml",
        "checks:\n  tests:\n    run: \"echo 'BUILD FAILURE: bad configuration' >&2; exit 1\"\n    report:\n      - { format: junit, path: out/junit.xml }\n      - { format: lcov, path: out/lcov.info }\nhook:\n  base: main\n",
    );
    repo.commit_file("lib.txt", "one\n", "base");
    let out = std::process::Command::new(BIN)
        .args(["run", "--exit-code"])
        .current_dir(&repo.path)
        .env("NO_COLOR", "1")
        .output()
        .expect("itergate runs");
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{text}");
    let errors: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("itergate: error:"))
        .collect();
    insta::with_settings!({ filters => crate::redact::filters() }, {
        insta::assert_snapshot!(errors.join("\n"), @r"itergate: error: check `tests` (`echo 'BUILD FAILURE: bad configuration' >&2; exit 1`) could not run: it exited with status 1 and wrote no report: the report /tmp/itergate-wt-[pid]-[short-sha]/out/junit.xml was not written; the report /tmp/itergate-wt-[pid]-[short-sha]/out/lcov.info was not written");
    });
    assert_eq!(text.matches("\n    BUILD FAILURE").count(), 1, "{text}");
}

#[test]
fn a_check_that_reads_anothers_report_waits_for_it_with_needs() {
    let repo = TestRepo::new();
    let tests = "#!/bin/sh\nsleep 1\nmkdir -p out\necho '<testsuite name=\"s\"><testcase classname=\"s\" name=\"t0\"/></testsuite>' > out/junit.xml\nprintf 'TN:\\nSF:lib.txt\\nDA:1,1\\nend_of_record\\n' > out/raw.info\n";
    write_script(&repo.path.join("tests.sh"), tests);
    let config = |needs: &str| {
        format!(
            "checks:\n  tests:\n    run: ./tests.sh\n    report: {{ format: junit, path: out/junit.xml }}\n  coverage:\n    run: \"cp out/raw.info out/lcov.info\"\n    report: {{ format: lcov, path: out/lcov.info }}\n{needs}hook:\n  base: main\n"
        )
    };
    repo.write(".itergate.yml", &config(""));
    repo.write(".gitignore", "out/\n");
    repo.commit_file("lib.txt", "one\n", "base");
    let run = |dir: &std::path::Path| {
        std::process::Command::new(BIN)
            .args(["run", "--exit-code"])
            .current_dir(dir)
            .env("NO_COLOR", "1")
            .output()
            .expect("itergate runs")
    };
    let out = run(&repo.path);
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("checks run concurrently"), "{text}");
    assert!(text.contains("needs: [that check]"), "{text}");

    repo.write(".itergate.yml", &config("    needs: [tests]\n"));
    repo.git(&["commit", "--quiet", "-am", "coverage needs the tests"]);
    let out = run(&repo.path);
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(!text.contains("was not written"), "{text}");
    assert!(text.contains("check coverage: report read"), "{text}");
}

/// `--jobs N` bounds the check commands running at once, the base's and HEAD's together.
#[test]
fn jobs_bounds_the_check_commands_running_at_once() {
    let check = |name: &str| {
        format!("#!/bin/sh\necho start >> \"$JOBLOG\"\nsleep 0.3\necho end >> \"$JOBLOG\"\nmkdir -p out\necho '<testsuite name=\"s\"><testcase classname=\"s\" name=\"{name}\"/></testsuite>' > out/{name}.xml\n")
    };
    let overlapped = |jobs: &str| {
        let repo = TestRepo::new();
        write_script(&repo.path.join("a.sh"), &check("a"));
        write_script(&repo.path.join("b.sh"), &check("b"));
        repo.write(
            ".itergate.yml",
            "checks:\n  a:\n    run: ./a.sh\n    report: { format: junit, path: out/a.xml }\n  b:\n    run: ./b.sh\n    report: { format: junit, path: out/b.xml }\nhook:\n  base: main\n",
        );
        repo.write(".gitignore", "out/\n");
        repo.commit_file("lib.txt", "one\n", "base");
        repo.git(&["checkout", "--quiet", "-b", "feature"]);
        repo.commit_file("lib.txt", "two\n", "work");
        let log = repo.path.join(".git/job.log");
        let out = std::process::Command::new(BIN)
            .args(["run", "--jobs", jobs])
            .current_dir(&repo.path)
            .env("NO_COLOR", "1")
            .env("JOBLOG", &log)
            .output()
            .expect("itergate runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<String> = std::fs::read_to_string(&log)
            .expect("the checks ran")
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(
            lines.len(),
            8,
            "two checks on the base and on HEAD: {lines:?}"
        );
        lines.windows(2).any(|w| w[0] == "start" && w[1] == "start")
    };
    assert!(!overlapped("1"), "one at a time");
    assert!(overlapped("4"), "four at once");
}

/// CI observes the base branch and pushes its notes; a fresh clone that fetches them, and
/// whose base configuration trusts them (`scoring.trust_fetched_base`), checks only HEAD.
/// Without that key a fetched note is never a reason to skip the base's checks.
#[test]
fn a_base_observed_by_ci_is_taken_from_fetched_notes_only_when_the_base_trusts_them() {
    let check = "#!/bin/sh\necho run >> \"$RUNLOG\"\nmkdir -p out\nif grep -q bad lib.txt; then r='<testcase classname=\"s\" name=\"t0\"><failure message=\"bad\"/></testcase>'; else r='<testcase classname=\"s\" name=\"t0\"/>'; fi\necho \"<testsuite name=\\\"s\\\">$r</testsuite>\" > out/junit.xml\n";
    let runs_in_a_fresh_clone = |trust: bool| {
        let ci = TestRepo::new();
        write_script(&ci.path.join("check.sh"), check);
        ci.write(
            ".itergate.yml",
            &format!("checks:\n  tests:\n    run: ./check.sh\n    report: {{ format: junit, path: out/junit.xml }}\nscoring:\n  trust_fetched_base: {trust}\n"),
        );
        ci.write(".gitignore", "out/\n");
        ci.commit_file("lib.txt", "good\n", "base");
        ci.commit_file("lib.txt", "good\ngood\n", "more");
        let remote = ci.add_bare_remote();
        ci.git(&["push", "--quiet", "origin", "main"]);
        let log = ci.sibling("runs.log");
        let itergate = |dir: &std::path::Path, args: &[&str]| {
            let out = std::process::Command::new(BIN)
                .args(args)
                .current_dir(dir)
                .env("NO_COLOR", "1")
                .env("RUNLOG", &log)
                .output()
                .expect("itergate runs");
            let said = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            (out.status.code(), said)
        };
        // CI on the base branch: the tip is observed, and the notes are pushed.
        let (code, said) = itergate(&ci.path, &["run"]);
        assert_eq!(code, Some(0), "{said}");
        let (code, said) = itergate(&ci.path, &["notes", "push", "origin"]);
        assert_eq!(code, Some(0), "{said}");
        let clone = ci.sibling("clone");
        gitrepo::git(
            ci.root.path(),
            &["clone", "--quiet", remote.to_str().expect("utf-8"), "clone"],
        );
        gitrepo::git(&clone, &["config", "user.name", "Newcomer"]);
        gitrepo::git(&clone, &["config", "user.email", "new@example.com"]);
        let (code, said) = itergate(&clone, &["notes", "fetch", "origin"]);
        assert_eq!(code, Some(0), "{said}");
        std::fs::write(&log, "").expect("reset the log");
        gitrepo::git(&clone, &["checkout", "--quiet", "-b", "work"]);
        std::fs::write(clone.join("lib.txt"), "bad\n").expect("write");
        gitrepo::git(&clone, &["commit", "--quiet", "-am", "break it"]);
        let (code, said) = itergate(&clone, &["run", "--exit-code"]);
        assert_eq!(code, Some(10), "a new failure either way: {said}");
        assert!(said.contains("s::t0"), "{said}");
        let runs = std::fs::read_to_string(&log).expect("log").lines().count();
        (runs, said)
    };
    let (runs, said) = runs_in_a_fresh_clone(true);
    assert_eq!(runs, 1, "only HEAD was checked: {said}");
    assert!(said.contains("comes from the fetched notes"), "{said}");
    let (runs, said) = runs_in_a_fresh_clone(false);
    assert_eq!(runs, 2, "the base was checked here too: {said}");
}

/// A build that fails before its tests (Maven under a licence check: its errors on stdout,
/// only colour resets on stderr) is said to have failed first, with its own last lines.
#[test]
fn a_check_that_fails_without_a_report_shows_its_own_error_not_colour_codes() {
    let repo = TestRepo::new();
    let check = "#!/bin/sh\necho '[INFO] BUILD FAILURE'\necho '[ERROR] Failed to execute goal org.apache.rat:apache-rat-plugin:0.16.1:check (rat-check) on project cli: Too many files with unapproved license: 1'\nprintf '\\033[0m\\033[0m' >&2\nexit 1\n";
    write_script(&repo.path.join("check.sh"), check);
    repo.write(
        ".itergate.yml",
        "checks:\n  tests:\n    run: ./check.sh\n    report: { format: junit, path: 'target/surefire-reports/TEST-*.xml' }\nhook:\n  base: main\n",
    );
    repo.commit_file("lib.txt", "one\n", "base");
    repo.git(&["checkout", "--quiet", "-b", "feature"]);
    repo.commit_file("lib.txt", "two\n", "work");
    let out = std::process::Command::new(BIN)
        .args(["run"])
        .current_dir(&repo.path)
        .env("NO_COLOR", "1")
        .env_remove("ITERGATE_SKIP")
        .output()
        .expect("itergate runs");
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(
        text.contains("it exited with status 1 and wrote no report"),
        "{text}"
    );
    assert!(
        text.contains("Too many files with unapproved license"),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'), "{text}");
}

/// A run can be followed through its log: every line says which command wrote it, and a
/// check's lines say which check, in which tree.
#[test]
fn log_lines_name_their_command_and_their_check() {
    let repo = TestRepo::new();
    write_script(&repo.path.join("check.sh"), CHECK);
    repo.write(
        ".itergate.yml",
        "checks:\n  tests:\n    run: ./check.sh\n    report: { format: junit, path: out/junit.xml }\nhook:\n  base: main\n",
    );
    repo.write(".gitignore", "out/\n");
    repo.commit_file("lib.txt", "one\n", "base");
    repo.git(&["checkout", "--quiet", "-b", "feature"]);
    repo.commit_file("lib.txt", "two\n", "work");
    let out = std::process::Command::new(BIN)
        .args(["run"])
        .current_dir(&repo.path)
        .env("NO_COLOR", "1")
        .env("ITERGATE_LOG", "itergate=debug")
        .env_remove("ITERGATE_SKIP")
        .output()
        .expect("itergate runs");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    let done: Vec<&str> = text.lines().filter(|l| l.contains("check done")).collect();
    assert!(
        done.iter()
            .any(|l| l.contains("command{name=\"run\"}:check{name=tests tree=\"HEAD\"}")),
        "{text}"
    );
    assert!(
        done.iter()
            .any(|l| l.contains("check{name=tests tree=\"base ")),
        "the base's run too: {text}"
    );
    assert!(!text.contains('\u{1b}'), "no colour in a pipe: {text}");
}

/// A Python check that cannot import its runner names the interpreter it ran and the
/// project's virtual environment that was not active.
#[test]
fn a_missing_python_module_names_the_interpreter_and_the_inactive_venv() {
    let repo = TestRepo::new();
    repo.write(
        ".itergate.yml",
        "checks:\n  tests:\n    run: python3 -m no_such_runner_here --junitxml=out/junit.xml\n    report: { format: junit, path: out/junit.xml }\nhook:\n  base: main\n",
    );
    repo.write(".gitignore", "out/\n.venv/\n");
    repo.commit_file("lib.py", "x = 1\n", "base");
    let venv = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip", ".venv"])
        .current_dir(&repo.path)
        .status()
        .expect("python3 runs");
    assert!(venv.success());
    let out = std::process::Command::new(BIN)
        .args(["run", "--exit-code"])
        .current_dir(&repo.path)
        .env("NO_COLOR", "1")
        .env_remove("VIRTUAL_ENV")
        .output()
        .expect("itergate runs");
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(
        text.contains("A Python module is missing for check `tests`: `python3` is /"),
        "{text}"
    );
    assert!(
        text.contains("/.venv is not active: activate it (`. ")
            && text.contains("/.venv/bin/activate`) before running itergate"),
        "{text}"
    );
    assert!(!text.contains("needs: [that check]"), "{text}");
}
