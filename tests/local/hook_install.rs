//! The pre-push hook against real repositories and real `git push`es to a local bare
//! remote: where the hook goes (hooks dir, `core.hooksPath`, linked worktrees), chaining a
//! foreign hook with the same stdin, the ways to skip it, uninstalling, and classifying
//! pushed updates. `ITERGATE_BIN` points the hook at a stub that records what it was given.

use crate::gitrepo;

use std::path::{Path, PathBuf};
use std::process::Output;

use gitrepo::{git, git_cmd, mode, write_script, TestRepo};
use itergate::hook::{
    self, classify, install_with, parse_push_lines, uninstall, HookError, InstallOptions, PushKind,
    PushUpdate,
};

/// A repository with one commit, a bare `origin`, a stub itergate and a log directory.
struct Setup {
    repo: TestRepo,
    remote: PathBuf,
    stub: PathBuf,
    log: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let repo = TestRepo::new();
        repo.commit_file("a.txt", "a\n", "first");
        let remote = repo.add_bare_remote();
        let log = repo.sibling("log");
        std::fs::create_dir(&log).expect("log dir");
        let stub = repo.sibling("itergate-stub");
        write_script(&stub, &recorder("itergate", &log, 0));
        Setup {
            repo,
            remote,
            stub,
            log,
        }
    }

    fn hooks(&self) -> PathBuf {
        self.repo.path.join(".git/hooks")
    }

    fn install(&self) -> hook::InstallReport {
        install_with(&self.repo.path, &InstallOptions::default()).expect("install")
    }

    /// `git push` from `dir` with the stub as itergate, plus `env`.
    fn push_from(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = git_cmd(dir);
        command
            .env_remove("ITERGATE_SKIP")
            .env("ITERGATE_BIN", &self.stub)
            .envs(env.iter().copied())
            .arg("push")
            .args(args);
        command.output().expect("git push runs")
    }

    fn push(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.push_from(&self.repo.path, args, env)
    }

    fn read_log(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.log.join(name)).ok()
    }

    fn remote_main(&self) -> Option<String> {
        let out = git_cmd(&self.remote)
            .args(["rev-parse", "--verify", "--quiet", "refs/heads/main"])
            .output()
            .expect("git runs");
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }
}

/// A hook body that appends `name` to `order`, keeps its args and stdin, and exits `code`.
fn recorder(name: &str, log: &Path, code: i32) -> String {
    let log = log.display();
    format!(
        "#!/bin/sh\necho {name} >>'{log}/order'\nprintf '%s\\n' \"$@\" >'{log}/{name}-args'\n\
         cat >'{log}/{name}-stdin'\nexit {code}\n"
    )
}

fn assert_pushed(output: &Output) {
    assert!(
        output.status.success(),
        "push failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn install_writes_an_executable_hook_in_the_hooks_dir() {
    let s = Setup::new();
    std::fs::create_dir(s.repo.path.join("sub")).expect("subdir");
    let report = install_with(&s.repo.path.join("sub"), &InstallOptions::default())
        .expect("install from a subdirectory");
    let hook = s.hooks().join("pre-push");
    assert_eq!(report.outcome, hook::InstallOutcome::Installed);
    assert_eq!(report.hook.canonicalize().ok(), hook.canonicalize().ok());
    assert_eq!(report.chained, None);
    assert_eq!(mode(&hook) & 0o111, 0o111, "executable");
    let content = std::fs::read_to_string(&hook).expect("hook");
    assert!(content.starts_with("#!/bin/sh\n"), "{content}");
    assert!(content.contains(hook::HOOK_MARKER), "{content}");
    assert!(report.to_string().contains("installed the pre-push hook"));

    assert_pushed(&s.push(&["origin", "main"], &[]));
    let stdin = s.read_log("itergate-stdin").expect("itergate ran");
    let updates = parse_push_lines(&stdin).expect("git's own pre-push input parses");
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].kind, PushKind::NewBranch);
    assert_eq!(updates[0].local_oid, s.repo.head());
    let args = s.read_log("itergate-args").expect("args");
    assert_eq!(
        args,
        format!("hook\npre-push\norigin\n{}\n", s.remote.display())
    );
}

#[test]
fn relative_hooks_path_is_taken_from_the_work_tree_root() {
    let s = Setup::new();
    s.repo.git(&["config", "core.hooksPath", ".githooks"]);
    std::fs::create_dir(s.repo.path.join("sub")).expect("subdir");
    let report =
        install_with(&s.repo.path.join("sub"), &InstallOptions::default()).expect("install");
    let hook = s.repo.path.join(".githooks/pre-push");
    assert_eq!(report.hook, hook);
    assert!(hook.exists());
    assert!(!s.hooks().join("pre-push").exists());
    assert_pushed(&s.push(&["origin", "main"], &[]));
    assert_eq!(s.read_log("order").as_deref(), Some("itergate\n"));
}

#[test]
fn a_linked_worktree_installs_into_the_common_hooks_dir() {
    let s = Setup::new();
    let wt = s.repo.sibling("wt");
    s.repo.git(&[
        "worktree",
        "add",
        "--quiet",
        "-b",
        "topic",
        wt.to_str().expect("utf-8"),
    ]);
    let report = install_with(&wt, &InstallOptions::default()).expect("install");
    let hook = s.hooks().join("pre-push");
    assert_eq!(report.hook.canonicalize().ok(), hook.canonicalize().ok());
    assert_pushed(&s.push_from(&wt, &["origin", "topic"], &[]));
    let stdin = s.read_log("itergate-stdin").expect("itergate ran");
    assert!(stdin.starts_with("refs/heads/topic "), "{stdin}");
}

#[test]
fn installing_twice_changes_nothing() {
    let s = Setup::new();
    let foreign = s.hooks().join("pre-push");
    write_script(&foreign, &recorder("foreign", &s.log, 0));
    s.install();
    let hook_before = std::fs::read(&foreign).expect("hook");
    let chained = s.hooks().join(hook::CHAINED_HOOK_NAME);
    let chained_before = std::fs::read(&chained).expect("chained");
    let mtime = std::fs::metadata(&foreign)
        .and_then(|m| m.modified())
        .expect("mtime");

    let again = s.install();
    assert_eq!(again.outcome, hook::InstallOutcome::AlreadyInstalled);
    assert_eq!(again.chained, None);
    assert_eq!(std::fs::read(&foreign).expect("hook"), hook_before);
    assert_eq!(std::fs::read(&chained).expect("chained"), chained_before);
    let mtime_after = std::fs::metadata(&foreign)
        .and_then(|m| m.modified())
        .expect("mtime");
    assert_eq!(mtime_after, mtime, "not rewritten");

    let other_binary = InstallOptions {
        force: false,
        binary: Some(s.stub.clone()),
    };
    let updated = install_with(&s.repo.path, &other_binary).expect("install");
    assert_eq!(updated.outcome, hook::InstallOutcome::Updated);
    assert_eq!(std::fs::read(&chained).expect("chained"), chained_before);
}

#[test]
fn a_foreign_hook_is_chained_and_sees_the_same_stdin_first() {
    let s = Setup::new();
    let hook = s.hooks().join("pre-push");
    write_script(&hook, &recorder("foreign", &s.log, 0));
    gitrepo::set_mode(&hook, 0o750);
    let original = std::fs::read(&hook).expect("foreign hook");

    let report = s.install();
    let chained = s.hooks().join(hook::CHAINED_HOOK_NAME);
    assert_eq!(report.chained.as_deref(), Some(chained.as_path()));
    assert!(
        report.to_string().contains("kept the existing hook"),
        "{report}"
    );
    assert_eq!(std::fs::read(&chained).expect("chained"), original);
    assert_eq!(mode(&chained), 0o750, "mode kept");

    assert_pushed(&s.push(&["origin", "main"], &[]));
    assert_eq!(s.read_log("order").as_deref(), Some("foreign\nitergate\n"));
    let foreign_stdin = s.read_log("foreign-stdin").expect("foreign ran");
    assert!(!foreign_stdin.is_empty());
    assert_eq!(s.read_log("itergate-stdin"), Some(foreign_stdin));
    let foreign_args = s.read_log("foreign-args").expect("args");
    assert_eq!(foreign_args, format!("origin\n{}\n", s.remote.display()));
}

#[test]
fn a_failing_foreign_hook_blocks_the_push_before_itergate_runs() {
    let s = Setup::new();
    write_script(&s.hooks().join("pre-push"), &recorder("foreign", &s.log, 1));
    s.install();
    let output = s.push(&["origin", "main"], &[]);
    assert!(!output.status.success(), "push must be refused");
    assert_eq!(s.remote_main(), None, "remote ref unchanged");
    assert_eq!(s.read_log("order").as_deref(), Some("foreign\n"));
    assert_eq!(s.read_log("itergate-args"), None, "itergate not run");
}

#[test]
fn itergate_failing_blocks_the_push() {
    let s = Setup::new();
    write_script(&s.stub, &recorder("itergate", &s.log, 3));
    s.install();
    let output = s.push(&["origin", "main"], &[]);
    assert!(!output.status.success());
    assert_eq!(s.remote_main(), None);
}

#[test]
fn itergate_skip_skips_itergate_but_not_a_chained_hook() {
    let s = Setup::new();
    s.install();
    assert_pushed(&s.push(&["origin", "main"], &[("ITERGATE_SKIP", "1")]));
    assert_eq!(s.read_log("order"), None, "nothing ran");
    assert_eq!(s.remote_main(), Some(s.repo.head()));

    s.repo.commit_file("a.txt", "b\n", "second");
    write_script(
        &s.hooks().join(hook::CHAINED_HOOK_NAME),
        &recorder("foreign", &s.log, 0),
    );
    assert_pushed(&s.push(&["origin", "main"], &[("ITERGATE_SKIP", "1")]));
    assert_eq!(s.read_log("order").as_deref(), Some("foreign\n"));
    let stdin = s.read_log("foreign-stdin").expect("foreign got stdin");
    assert_eq!(
        parse_push_lines(&stdin).expect("parses")[0].kind,
        PushKind::Update
    );
}

#[test]
fn no_verify_skips_every_hook() {
    let s = Setup::new();
    write_script(&s.hooks().join("pre-push"), &recorder("foreign", &s.log, 1));
    s.install();
    assert_pushed(&s.push(&["--no-verify", "origin", "main"], &[]));
    assert_eq!(s.read_log("order"), None);
    assert_eq!(s.remote_main(), Some(s.repo.head()));
}

#[test]
fn the_installing_binary_is_baked_in_and_a_missing_one_is_reported() {
    let s = Setup::new();
    let baked = InstallOptions {
        force: false,
        binary: Some(s.stub.clone()),
    };
    install_with(&s.repo.path, &baked).expect("install");
    let mut push = git_cmd(&s.repo.path);
    push.env_remove("ITERGATE_BIN")
        .args(["push", "origin", "main"]);
    assert_pushed(&push.output().expect("push"));
    assert_eq!(s.read_log("order").as_deref(), Some("itergate\n"));

    s.repo.commit_file("a.txt", "b\n", "second");
    let missing = InstallOptions {
        force: false,
        binary: Some(s.repo.sibling("no-such-itergate")),
    };
    install_with(&s.repo.path, &missing).expect("install");
    let mut push = git_cmd(&s.repo.path);
    push.env_remove("ITERGATE_BIN")
        .env("PATH", "/usr/bin:/bin")
        .args(["push", "origin", "main"]);
    let output = push.output().expect("push");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("itergate: cannot run 'itergate'"),
        "{stderr}"
    );
}

#[test]
fn uninstall_restores_the_foreign_hook_byte_for_byte() {
    let s = Setup::new();
    let hook = s.hooks().join("pre-push");
    write_script(&hook, "#!/bin/sh\n# someone else's hook\r\nexit 0\n");
    gitrepo::set_mode(&hook, 0o700);
    let original = std::fs::read(&hook).expect("hook");
    s.install();
    let report = uninstall(&s.repo.path).expect("uninstall");
    assert!(
        matches!(report, hook::UninstallReport::Restored { .. }),
        "{report:?}"
    );
    assert_eq!(std::fs::read(&hook).expect("restored"), original);
    assert_eq!(mode(&hook), 0o700);
    assert!(!s.hooks().join(hook::CHAINED_HOOK_NAME).exists());

    let refused = uninstall(&s.repo.path).expect_err("not ours");
    assert!(
        matches!(refused, HookError::ForeignHook { .. }),
        "{refused}"
    );
    assert!(refused.to_string().contains("not installed by itergate"));
    assert_eq!(std::fs::read(&hook).expect("still there"), original);
}

#[test]
fn uninstall_without_a_chained_hook_removes_ours() {
    let s = Setup::new();
    s.install();
    let report = uninstall(&s.repo.path).expect("uninstall");
    assert!(
        matches!(report, hook::UninstallReport::Removed { .. }),
        "{report:?}"
    );
    assert!(!s.hooks().join("pre-push").exists());
    let again = uninstall(&s.repo.path).expect("uninstall");
    assert!(
        matches!(again, hook::UninstallReport::NotInstalled { .. }),
        "{again:?}"
    );
}

#[test]
fn a_taken_chained_slot_is_refused_unless_forced() {
    let s = Setup::new();
    let hook = s.hooks().join("pre-push");
    let chained = s.hooks().join(hook::CHAINED_HOOK_NAME);
    write_script(&hook, "#!/bin/sh\n# current\n");
    write_script(&chained, "#!/bin/sh\n# left over\n");
    let error = install_with(&s.repo.path, &InstallOptions::default()).expect_err("refused");
    assert!(
        matches!(error, HookError::ChainedSlotTaken { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("--force"), "{error}");
    assert_eq!(
        std::fs::read_to_string(&hook).expect("hook"),
        "#!/bin/sh\n# current\n"
    );

    let forced = InstallOptions {
        force: true,
        binary: None,
    };
    let report = install_with(&s.repo.path, &forced).expect("forced");
    let backup = report.backup.clone().expect("old chained hook kept");
    assert_eq!(
        std::fs::read_to_string(&backup).expect("backup"),
        "#!/bin/sh\n# left over\n"
    );
    assert_eq!(
        std::fs::read_to_string(&chained).expect("chained"),
        "#!/bin/sh\n# current\n"
    );
    assert!(hook::is_ours(&std::fs::read(&hook).expect("ours")));
}

#[test]
fn classify_tells_fast_forwards_from_force_pushes() {
    let repo = TestRepo::new();
    let c1 = repo.commit_file("a.txt", "1\n", "one");
    let c2 = repo.commit_file("a.txt", "2\n", "two");
    repo.git(&["checkout", "--quiet", "-b", "rewrite", &c1]);
    let c3 = repo.commit_file("a.txt", "3\n", "three");
    let r = itergate::git::open(&repo.path).expect("open");
    let update = |local: &str, remote: &str| {
        let line = format!("refs/heads/main {local} refs/heads/main {remote}");
        parse_push_lines(&line).expect("parses").remove(0)
    };
    assert_eq!(
        classify(&r, &update(&c2, &c1)).expect("classify"),
        PushKind::Update
    );
    assert_eq!(
        classify(&r, &update(&c3, &c2)).expect("classify"),
        PushKind::ForcePush
    );
    let unknown = "1234567890123456789012345678901234567890";
    assert_eq!(
        classify(&r, &update(&c2, unknown)).expect("classify"),
        PushKind::ForcePush
    );
    let zero = "0".repeat(40);
    assert_eq!(
        classify(&r, &update(&c2, &zero)).expect("classify"),
        PushKind::NewBranch
    );
    let delete = PushUpdate {
        kind: PushKind::Delete,
        ..update(&c2, &c1)
    };
    assert_eq!(classify(&r, &delete).expect("classify"), PushKind::Delete);
    assert_eq!(
        git(&repo.path, &["rev-parse", "main"]),
        c2,
        "classify reads only"
    );
}
