//! The sealed environment's fingerprint (`cargo bench --bench environment`): a scan of a
//! `node_modules` of 20,000 files (400 packages of 50 files, `.bin` links) and of a
//! virtual environment of 100 packages (30 files each, a `.dist-info` with entry points),
//! with the runners' configuration chain and variables, as every judged iteration pays it
//! once. The target is 50 ms an iteration; `du -s` over the same tree is the peer
//! (`farm-bench`, in `benches/RESULTS.md`).

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use itergate::signals::environment::{scan, Scope};

const NODE_PACKAGES: usize = 400;
const VENV_PACKAGES: usize = 100;
const FILES_PER_NODE_PACKAGE: usize = 50;
const FILES_PER_PYTHON_PACKAGE: usize = 30;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A project with a `node_modules` and a `.venv` of the sizes above.
fn project(root: &Path) {
    for p in 0..NODE_PACKAGES {
        let package = root.join(format!("node_modules/pkg-{p}"));
        write(
            &package.join("package.json"),
            &format!("{{\"name\":\"pkg-{p}\",\"version\":\"1.0.{p}\"}}"),
        );
        for f in 1..FILES_PER_NODE_PACKAGE {
            write(
                &package.join(format!("lib/part-{}/file-{f}.js", f % 5)),
                &format!("module.exports = {f};\n"),
            );
        }
    }
    let bin = root.join("node_modules/.bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    for p in 0..20 {
        std::os::unix::fs::symlink(
            format!("../pkg-{p}/lib/part-1/file-1.js"),
            bin.join(format!("tool-{p}")),
        )
        .expect("link");
    }
    let site = root.join(".venv/lib/python3.12/site-packages");
    write(
        &root.join(".venv/pyvenv.cfg"),
        "home = /usr/bin\nversion = 3.12.0\n",
    );
    for p in 0..VENV_PACKAGES {
        for f in 0..FILES_PER_PYTHON_PACKAGE {
            write(
                &site.join(format!("mod{p}/sub{}/m{f}.py", f % 3)),
                "X = 1\n",
            );
        }
        let dist = site.join(format!("mod{p}-1.0.dist-info"));
        write(
            &dist.join("METADATA"),
            &format!("Name: mod{p}\nVersion: 1.0\n"),
        );
        write(&dist.join("RECORD"), "mod/__init__.py,,\n");
        write(
            &dist.join("entry_points.txt"),
            &format!("[console_scripts]\nmod{p} = mod{p}:main\n"),
        );
    }
    write(&site.join("distutils-precedence.pth"), "import os\n");
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("project");
    project(&root);
    let vars = |name: &str| std::env::var(name).ok();
    let names: Vec<String> = std::env::vars().map(|(k, _)| k).collect();
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let scope = Scope {
        root: &root,
        home: home.as_deref(),
        vars: &vars,
        names: &names,
        tracked: &|_| false,
        commands: &[],
    };
    let entries = scan(&scope).entries.len();
    assert!(entries > NODE_PACKAGES + VENV_PACKAGES, "{entries} entries");
    c.bench_function(
        "environment_fingerprint_20k_node_files_100_python_packages",
        |b| b.iter(|| black_box(scan(&scope))),
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
