//! The fingerprint on real directories: what a tamper changes, what a no-op reinstall
//! does not, and which committed files explain which changes.

use std::path::Path;

use super::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn scan_of(root: &Path) -> Fingerprint {
    scan(&Scope {
        root,
        home: None,
        vars: &|_| None,
        names: &[],
        tracked: &|_| false,
        commands: &[],
    })
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(
        &root.join("node_modules/.pnpm/a@1.0.0/node_modules/a/index.js"),
        "module.exports = 1;\n",
    );
    write(
        &root.join("node_modules/.pnpm/a@1.0.0/node_modules/.bin/tool"),
        "#!/bin/sh\nexec node a\n",
    );
    write(
        &root.join("node_modules/.pnpm-workspace-state-v1.json"),
        "{\"at\":1}",
    );
    write(&root.join(".venv/pyvenv.cfg"), "version = 3.12.0\n");
    write(
        &root.join(".venv/lib/python3.12/site-packages/pkg/__init__.py"),
        "X = 1\n",
    );
    dir
}

#[test]
fn a_no_op_reinstall_changes_nothing() {
    let dir = project();
    let root = dir.path();
    let before = scan_of(root);
    // pnpm rewrites its state file and regenerates the shims: same text, new files.
    let shim = root.join("node_modules/.pnpm/a@1.0.0/node_modules/.bin/tool");
    std::fs::remove_file(&shim).expect("remove");
    write(&shim, "#!/bin/sh\nexec node a\n");
    write(
        &root.join("node_modules/.pnpm-workspace-state-v1.json"),
        "{\"at\":2}",
    );
    assert_eq!(changes(&before, &scan_of(root)), Vec::new());
}

#[test]
fn a_plugin_a_pth_and_a_patched_package_are_named() {
    let dir = project();
    let root = dir.path();
    let before = scan_of(root);
    let site = root.join(".venv/lib/python3.12/site-packages");
    write(&site.join("cheat.py"), "X = 2\n");
    write(
        &site.join("cheat-1.0.dist-info/entry_points.txt"),
        "[pytest11]\ncheat = cheat\n",
    );
    write(&site.join("zz.pth"), "import cheat\n");
    let index = root.join("node_modules/.pnpm/a@1.0.0/node_modules/a/index.js");
    std::fs::remove_file(&index).expect("remove");
    write(&index, "module.exports = 2;\n");
    let found = changes(&before, &scan_of(root));
    let words = describe(&found);
    assert!(
        words.starts_with("python `pytest11` entry point `cheat` added"),
        "{words}"
    );
    assert!(words.contains("zz.pth` added"), "{words}");
    assert!(
        found
            .iter()
            .any(|c| c == &Change::Changed("node: node_modules/.pnpm/a@1.0.0".into())),
        "{found:?}"
    );
}

#[test]
fn only_the_ecosystems_manifests_explain_its_changes() {
    let python = Change::Added("python: .venv/lib/python3.12/site-packages/extra".into());
    let node = Change::Changed("node: node_modules/left-pad".into());
    let variable = Change::Added("variable: PYTEST_ADDOPTS".into());
    let all = vec![python.clone(), node.clone(), variable.clone()];
    let edited = ["sub/requirements-dev.txt".to_string()];
    assert_eq!(
        unexplained(all.clone(), &edited),
        vec![node.clone(), variable.clone()]
    );
    let edited = ["pnpm-lock.yaml".to_string(), "pyproject.toml".to_string()];
    assert_eq!(unexplained(all, &edited), vec![variable]);
}

#[test]
fn a_pnpm_shim_is_known_by_what_it_runs_not_by_how_it_gets_there() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let real = root.join("node_modules/.pnpm/tool@1.0.0/node_modules/tool/cli.js");
    write(&real, "console.log(1)\n");
    std::os::unix::fs::symlink(
        ".pnpm/tool@1.0.0/node_modules/tool",
        root.join("node_modules/tool"),
    )
    .expect("link");
    let shim = root.join("node_modules/.bin/tool");
    let text = |path: &str, search: &str| {
        format!("#!/bin/sh\nexport NODE_PATH=\"{search}\"\nexec node  \"$basedir/{path}\" \"$@\"\n")
    };
    write(
        &shim,
        &text("../.pnpm/tool@1.0.0/node_modules/tool/cli.js", "/a"),
    );
    let before = scan_of(root);
    std::fs::remove_file(&shim).expect("remove");
    write(&shim, &text("../tool/cli.js", "/a:/b"));
    assert_eq!(changes(&before, &scan_of(root)), Vec::new());
    // A shim that passes the runner other arguments is another program.
    std::fs::remove_file(&shim).expect("remove");
    write(
        &shim,
        &text("../tool/cli.js", "/a").replace("\"$@\"", "\"$@\" --grep passing"),
    );
    assert_eq!(
        changes(&before, &scan_of(root)),
        vec![Change::Changed("node: node_modules/.bin/tool".into())]
    );
}

#[test]
fn a_venv_a_check_names_by_path_outside_the_repository_is_watched() {
    let dir = project();
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).expect("mkdir");
    let venv = dir.path().join("venvs/app");
    write(&venv.join("pyvenv.cfg"), "version = 3.12.0\n");
    write(&venv.join("bin/pytest"), "#!/bin/sh\n");
    let site = venv.join("lib/python3.12/site-packages");
    write(&site.join("pkg/__init__.py"), "X = 1\n");
    let commands = [format!(
        "{} -q --junitxml=out.xml",
        venv.join("bin/pytest").display()
    )];
    let scan_with = |commands: &[String]| {
        scan(&Scope {
            root: &root,
            home: None,
            vars: &|_| None,
            names: &[],
            tracked: &|_| false,
            commands,
        })
    };
    let before = scan_with(&commands);
    write(&site.join("zz.pth"), "import cheat\n");
    let words = describe(&changes(&before, &scan_with(&commands)));
    assert!(words.contains("zz.pth` added"), "{words}");
    // Not named by any check: not the checks' environment.
    let names_it = |f: &Fingerprint| f.entries.keys().any(|k| k.contains("venvs/app"));
    assert!(names_it(&scan_with(&commands)));
    assert!(!names_it(&scan_with(&[])));
}

/// `pip uninstall` then `pip install` of the same version: new files, the same bytes, the
/// same `RECORD` — no change. An edit of one of its files, or a file its `RECORD` does not
/// list, is one.
#[test]
fn a_package_reinstalled_as_its_record_lists_it_is_no_change() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let site = root.join(".venv/lib/python3.12/site-packages");
    let hash = |text: &str| {
        let digest = Sha256::digest(text.as_bytes());
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
    };
    let install = || {
        write(&root.join(".venv/pyvenv.cfg"), "version = 3.12.0\n");
        write(&site.join("tool/__init__.py"), "X = 1\n");
        write(
            &root.join(".venv/bin/tool"),
            "#!/bin/sh\nexec python -m tool\n",
        );
        write(
            &site.join("tool-1.0.dist-info/METADATA"),
            "Name: tool\nVersion: 1.0\n",
        );
        let record = format!(
            "tool/__init__.py,sha256={},6\n../../../bin/tool,sha256={},31\ntool-1.0.dist-info/METADATA,sha256={},25\ntool-1.0.dist-info/RECORD,,\n",
            hash("X = 1\n"),
            hash("#!/bin/sh\nexec python -m tool\n"),
            hash("Name: tool\nVersion: 1.0\n"),
        );
        write(&site.join("tool-1.0.dist-info/RECORD"), &record);
    };
    install();
    let start = scan_of(root);
    // Reinstalled: every file made again (new inodes, new times), the same bytes.
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::remove_dir_all(site.join("tool")).expect("rm");
    std::fs::remove_dir_all(site.join("tool-1.0.dist-info")).expect("rm");
    std::fs::remove_file(root.join(".venv/bin/tool")).expect("rm");
    install();
    let now = scan_of(root);
    let seen = changes(&start, &now);
    assert!(!seen.is_empty(), "the files are new: {seen:?}");
    assert_eq!(reinstalled(seen, &start, &now, root), Vec::new());
    // An edit in place, with the RECORD left as it was: a change.
    write(&site.join("tool/__init__.py"), "X = 2\n");
    let now = scan_of(root);
    let left = reinstalled(changes(&start, &now), &start, &now, root);
    assert!(
        left.iter().any(|c| c.key().ends_with("site-packages/tool")),
        "{left:?}"
    );
    // A file the RECORD does not list, beside the reinstalled ones: a change.
    write(&site.join("tool/__init__.py"), "X = 1\n");
    write(&site.join("tool/plugin.py"), "import os\n");
    let now = scan_of(root);
    let left = reinstalled(changes(&start, &now), &start, &now, root);
    assert!(
        left.iter().any(|c| c.key().ends_with("site-packages/tool")),
        "{left:?}"
    );
}
