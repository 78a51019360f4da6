//! The base's checks test the base's code. The first `itergate run` on a new branch checks
//! the base in a scratch worktree; a project installed the way its users develop it (an
//! editable Python install, an npm workspace, a Go `replace`, Cargo path dependencies)
//! must not lead that checkout back to the work tree's sources. Each scenario breaks a
//! function on a branch: the base passes, so the run is ITERATE naming the test — never
//! "the base's failures, not counted". When the checkout is defeated on purpose, the
//! self-check refuses the base's observation instead of recording the work tree's. (Also
//! here, with a venv of its own: a package that configures mypy measured on its types.)

use std::path::Path;
use std::process::{Command, Output};

use crate::gitrepo::git;

fn write(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn commit(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
}

fn sh(dir: &Path, command: &str, path: &str) {
    let out = Command::new("sh")
        .args(["-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "{command}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `itergate run --exit-code` with `PATH` as an activated environment has it.
fn run(dir: &Path, path: &str) -> (Output, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_itergate"))
        .args(["--color", "never", "run", "--exit-code"])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("PATH", path)
        .env("GOFLAGS", "-mod=mod")
        .env("ITERGATE_STATE_DIR", dir.join(".git/test-state"))
        .output()
        .expect("itergate runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, text)
}

/// Commits the project on `main`, then on a branch the edit that breaks it; runs itergate
/// once (the base is checked in a scratch worktree) and expects ITERATE naming `test`.
fn branch_breaks_and_iterates(
    dir: &Path,
    path: &str,
    file: &str,
    from: &str,
    to: &str,
    test: &str,
) {
    commit(dir, "project");
    git(dir, &["checkout", "-q", "-b", "agent"]);
    let text = std::fs::read_to_string(dir.join(file)).expect("read");
    assert!(text.contains(from), "{file} holds `{from}`");
    write(dir, file, &text.replace(from, to));
    commit(dir, "agent: break it");
    let (out, said) = run(dir, path);
    assert_eq!(out.status.code(), Some(10), "ITERATE: {said}");
    assert!(said.contains(test), "names {test}: {said}");
    assert!(
        !said.contains("the base's, not counted"),
        "the base ran its own code and passed: {said}"
    );
}

fn path_with(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

const PY_CODE: &str = "def double(x):\n    return x * 2\n";
const PY_TEST: &str =
    "from shapes import double\n\n\ndef test_double():\n    assert double(2) == 4\n";
const PY_CONFIG: &str = "checks:\n  tests:\n    run: python -m pytest -q -p no:cacheprovider --junitxml=.itergate-pytest.xml\n    report: { format: junit, path: .itergate-pytest.xml }\n";

/// A `src/`-layout package installed editable into `.venv` with `backend`, the way its
/// users develop it; returns the directory and `PATH` with the environment activated.
fn python_editable(backend: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    let build = match backend {
        "setuptools" => {
            "requires = [\"setuptools>=64\"]\nbuild-backend = \"setuptools.build_meta\""
        }
        _ => "requires = [\"hatchling\"]\nbuild-backend = \"hatchling.build\"",
    };
    write(
        p,
        "pyproject.toml",
        &format!("[build-system]\n{build}\n\n[project]\nname = \"shapes\"\nversion = \"0.1\"\n"),
    );
    write(p, "src/shapes/__init__.py", PY_CODE);
    write(p, "tests/test_shapes.py", PY_TEST);
    write(
        p,
        ".gitignore",
        ".venv/\n*.egg-info/\n.itergate-*\n__pycache__/\n",
    );
    write(p, ".itergate.yml", PY_CONFIG);
    // The machine's pytest, seen through the environment; the package installed editable.
    sh(
        p,
        "python3 -m venv --system-site-packages .venv && .venv/bin/python -m pip install -q -e .",
        &std::env::var("PATH").unwrap_or_default(),
    );
    let path = path_with(&p.join(".venv/bin"));
    let out = Command::new("python")
        .args(["-c", "import shapes; print(shapes.__file__)"])
        .current_dir("/")
        .env("PATH", &path)
        .output()
        .expect("python");
    let file = String::from_utf8_lossy(&out.stdout);
    assert!(
        file.trim().ends_with("src/shapes/__init__.py") && file.contains(&*p.to_string_lossy()),
        "the install is editable: {file}"
    );
    (dir, path)
}

#[test]
fn a_setuptools_editable_install_does_not_lend_the_base_the_branchs_code() {
    let (dir, path) = python_editable("setuptools");
    branch_breaks_and_iterates(
        dir.path(),
        &path,
        "src/shapes/__init__.py",
        "x * 2",
        "x * 3",
        "test_double",
    );
}

#[test]
fn a_hatchling_editable_install_does_not_lend_the_base_the_branchs_code() {
    let (dir, path) = python_editable("hatchling");
    branch_breaks_and_iterates(
        dir.path(),
        &path,
        "src/shapes/__init__.py",
        "x * 2",
        "x * 3",
        "test_double",
    );
}

#[test]
fn a_check_that_imports_the_work_trees_code_is_refused_with_both_paths() {
    let (dir, path) = python_editable("setuptools");
    let p = dir.path();
    // A conftest that puts the work tree's sources first: defeats the checkout on purpose.
    write(
        p,
        "tests/conftest.py",
        &format!(
            "import sys\nsys.path.insert(0, {:?})\nsys.modules.pop('shapes', None)\n",
            p.join("src").display().to_string()
        ),
    );
    commit(p, "project");
    git(p, &["checkout", "-q", "-b", "agent"]);
    write(
        p,
        "src/shapes/__init__.py",
        &PY_CODE.replace("x * 2", "x * 3"),
    );
    commit(p, "agent: break it");
    let (out, said) = run(p, &path);
    assert_eq!(out.status.code(), Some(3), "{said}");
    // Both paths named: the scratch worktree's file and the work tree's it ran instead.
    insta::with_settings!({ filters => crate::redact::without_progress() }, {
        insta::assert_snapshot!(said, @r"itergate: error: the checks of the commit ran the work tree's code, not that commit's: `src/shapes/__init__.py` was imported from [tmp]/src/shapes/__init__.py instead of /tmp/itergate-wt-[pid]-[short-sha]/src/shapes/__init__.py. Its results would describe your work tree, so nothing was recorded. Something outside the checkout put the work tree first on Python's path (a `PYTHONPATH`, a `.pth` file, a `sys.path` edit in a conftest); remove it, or have the check run from the checkout's own root.");
    });
}

/// An npm workspace whose `app` imports the linked package `core` through `test`, installed;
/// returns `PATH`.
fn npm_workspace(p: &Path, test: &str) -> String {
    git(p, &["init", "-q", "-b", "main"]);
    write(
        p,
        "package.json",
        r#"{"name":"root","private":true,"workspaces":["packages/*"]}"#,
    );
    write(
        p,
        "packages/core/package.json",
        r#"{"name":"core","version":"1.0.0","type":"module","main":"index.js"}"#,
    );
    write(
        p,
        "packages/core/index.js",
        "export function double(x) {\n  return x * 2;\n}\n",
    );
    write(
        p,
        "packages/app/package.json",
        r#"{"name":"app","version":"1.0.0","type":"module","dependencies":{"core":"1.0.0"}}"#,
    );
    write(p, "packages/app/app.test.js", test);
    write(p, ".gitignore", "node_modules/\n.itergate-*\n");
    write(
        p,
        ".itergate.yml",
        "checks:\n  tests:\n    run: node --test --test-reporter=tap packages/app/\n    report: { format: tap, from: stdout }\n",
    );
    let path = std::env::var("PATH").unwrap_or_default();
    sh(p, "npm install --no-audit --no-fund --offline", &path);
    assert!(std::fs::symlink_metadata(p.join("node_modules/core"))
        .expect("npm linked the workspace package")
        .file_type()
        .is_symlink());
    path
}

const APP_TEST: &str = "import { it } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { double } from 'core';\n\nit('doubles through core', () => {\n  assert.strictEqual(double(2), 4);\n});\n";

#[test]
fn an_npm_workspace_checks_the_bases_copy_of_its_linked_package() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    let path = npm_workspace(p, APP_TEST);
    branch_breaks_and_iterates(
        p,
        &path,
        "packages/core/index.js",
        "x * 2",
        "x * 3",
        "doubles through core",
    );
}

#[test]
fn a_node_check_that_loads_the_work_trees_code_is_refused_with_both_paths() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    // The test imports the work tree's copy by its absolute path: defeats the checkout.
    let core = p.join("packages/core/index.js");
    let path = npm_workspace(
        p,
        &APP_TEST.replace("from 'core'", &format!("from '{}'", core.display())),
    );
    commit(p, "project");
    git(p, &["checkout", "-q", "-b", "agent"]);
    write(
        p,
        "packages/core/index.js",
        "export function double(x) {\n  return x * 3;\n}\n",
    );
    commit(p, "agent: break it");
    let (out, said) = run(p, &path);
    assert_eq!(out.status.code(), Some(3), "{said}");
    insta::with_settings!({ filters => crate::redact::without_progress() }, {
        insta::assert_snapshot!(said, @r"itergate: error: the checks of the commit ran the work tree's code, not that commit's: `packages/core/index.js` was imported from [tmp]/packages/core/index.js instead of /tmp/itergate-wt-[pid]-[short-sha]/packages/core/index.js. Its results would describe your work tree, so nothing was recorded. Something outside the checkout resolved a module to the work tree (an absolute path, `NODE_PATH`, a link in `node_modules` to the work tree's copy); remove it, or have the check run from the checkout's own root.");
    });
}

#[test]
fn a_go_replace_into_the_repository_resolves_inside_the_checkout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    write(
        p,
        "go.mod",
        "module example.com/app\n\ngo 1.19\n\nrequire example.com/core v0.0.0\n\nreplace example.com/core => ./core\n",
    );
    write(p, "core/go.mod", "module example.com/core\n\ngo 1.19\n");
    write(
        p,
        "core/core.go",
        "package core\n\n// Double doubles.\nfunc Double(n int) int {\n\treturn n * 2\n}\n",
    );
    write(
        p,
        "app_test.go",
        "package app\n\nimport (\n\t\"testing\"\n\n\t\"example.com/core\"\n)\n\nfunc TestDoubleThroughCore(t *testing.T) {\n\tif got := core.Double(2); got != 4 {\n\t\tt.Errorf(\"Double(2) = %d, want 4\", got)\n\t}\n}\n",
    );
    write(p, "app.go", "package app\n");
    write(p, ".gitignore", ".itergate-*\n");
    write(
        p,
        ".itergate.yml",
        "checks:\n  tests:\n    run: go test -json ./...\n    report: { format: go-test-json, from: stdout }\n",
    );
    let path = std::env::var("PATH").unwrap_or_default();
    branch_breaks_and_iterates(
        p,
        &path,
        "core/core.go",
        "n * 2",
        "n * 3",
        "TestDoubleThroughCore",
    );
}

#[test]
fn a_cargo_workspace_builds_the_checkouts_path_dependencies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    write(
        p,
        "Cargo.toml",
        "[workspace]\nmembers = [\"core\", \"app\"]\nresolver = \"2\"\n",
    );
    write(
        p,
        "core/Cargo.toml",
        "[package]\nname = \"core-lib\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(
        p,
        "core/src/lib.rs",
        "pub fn double(n: u32) -> u32 {\n    n * 2\n}\n",
    );
    write(
        p,
        "app/Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ncore-lib = { path = \"../core\" }\n",
    );
    write(
        p,
        "app/src/lib.rs",
        "#[cfg(test)]\nmod tests {\n    #[test]\n    fn doubles_through_core() {\n        assert_eq!(core_lib::double(2), 4);\n    }\n}\n",
    );
    write(p, ".gitignore", "target/\n.itergate-*\n");
    write(
        p,
        ".itergate.yml",
        "checks:\n  tests:\n    run: cargo test --workspace --offline --no-fail-fast --color never\n    report: { format: libtest, from: stdout }\n",
    );
    let path = std::env::var("PATH").unwrap_or_default();
    branch_breaks_and_iterates(
        p,
        &path,
        "core/src/lib.rs",
        "n * 2",
        "n * 3",
        "doubles_through_core",
    );
}

/// A package that configures mypy, with mypy installed: `itergate init` writes a `types`
/// check, and a change that adds a type error is sent back naming it (it was accepted when
/// types were not measured).
#[test]
fn a_python_package_that_configures_mypy_is_measured_on_its_types() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    write(
        p,
        "pyproject.toml",
        "[project]\nname = \"shapes\"\nversion = \"0.1\"\n\n[tool.mypy]\nstrict = true\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
    );
    write(
        p,
        "shapes.py",
        "def double(x: int) -> int:\n    return x * 2\n",
    );
    write(
        p,
        "tests/test_shapes.py",
        "from shapes import double\n\n\ndef test_double() -> None:\n    assert double(2) == 4\n",
    );
    write(
        p,
        ".gitignore",
        ".venv/\n.itergate-*\n__pycache__/\n.mypy_cache/\n",
    );
    sh(
        p,
        "python3 -m venv --system-site-packages .venv && .venv/bin/python -m pip install -q mypy",
        &std::env::var("PATH").unwrap_or_default(),
    );
    let path = path_with(&p.join(".venv/bin"));
    let init = Command::new(env!("CARGO_BIN_EXE_itergate"))
        .args(["init", "--no-verify"])
        .current_dir(p)
        .env("PATH", &path)
        .output()
        .expect("itergate init");
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let config = std::fs::read_to_string(p.join(".itergate.yml")).expect("config");
    assert!(config.contains("mypy --output json"), "{config}");
    branch_breaks_and_iterates(
        p,
        &path,
        "shapes.py",
        "    return x * 2\n",
        "    return x * 2\n\n\ndef label(x: int) -> str:\n    return x\n",
        "Incompatible return value type",
    );
    // The base's scratch checkout ran mypy with its cache in the state directory, where the
    // next checkout finds it warm.
    let caches = p.join(".git/test-state/mypy-cache");
    let base = std::fs::read_dir(&caches)
        .expect("mypy's caches")
        .flatten()
        .map(|e| e.path())
        .find(|d| d.to_string_lossy().ends_with("-base"))
        .expect("the base's cache");
    let cached: Vec<String> = walk(&base);
    assert!(
        // Per Python version: `3.11/shapes.meta.json`, or `3.11/cache.N.db` (SQLite shards).
        cached
            .iter()
            .any(|f| f.contains("/3.") && (f.ends_with(".json") || f.ends_with(".db"))),
        "mypy cached the base's module: {cached:?}"
    );
    // `init` times the types check once, after the tests, so a slow one is said up front.
    let again = Command::new(env!("CARGO_BIN_EXE_itergate"))
        .args(["init", "--force"])
        .current_dir(p)
        .env("PATH", &path)
        .env("NO_COLOR", "1")
        .output()
        .expect("itergate init");
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{said}");
    let tests_line = said
        .find("a first run of the tests on HEAD: 1 test ran")
        .expect(&said);
    let types_line = said
        .find("a first run of `types` on HEAD took ")
        .expect(&said);
    assert!(tests_line < types_line, "{said}");
}

/// A check that sets `CARGO_TARGET_DIR` itself: the base's checkout still builds into its
/// own directory (it builds while HEAD does, and cargo would take one's fresh artifacts for
/// the other's), so the broken HEAD is never judged with the base's binary.
#[test]
fn a_checks_own_cargo_target_dir_does_not_pull_the_base_into_heads_build() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    write(
        p,
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(
        p,
        "src/lib.rs",
        "pub fn double(n: u32) -> u32 {\n    n * 2\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn doubles() {\n        assert_eq!(super::double(2), 4);\n    }\n}\n",
    );
    write(p, ".gitignore", "target/\nshared-target/\n.itergate-*\n");
    let shared = p.join("shared-target");
    write(
        p,
        ".itergate.yml",
        &format!(
            "checks:\n  tests:\n    run: cargo test --offline --no-fail-fast --color never\n    report: {{ format: libtest, from: stdout }}\n    env: {{ CARGO_TARGET_DIR: {} }}\n",
            shared.display()
        ),
    );
    let path = std::env::var("PATH").unwrap_or_default();
    branch_breaks_and_iterates(p, &path, "src/lib.rs", "n * 2", "n * 3", "doubles");
    assert!(
        p.join(".git/itergate/scratch-target-base/debug").is_dir(),
        "the base built in its own target directory"
    );
}

/// Every file under `dir`, by path.
fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path.to_string_lossy().into_owned());
        }
    }
    out
}
