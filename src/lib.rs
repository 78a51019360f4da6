//! itergate: every commit of a branch or pull request is one iteration of a piece of work;
//! score it, decide whether it needs another, and say so where people and agents look.
//! See ARCHITECTURE.md for the map.

pub mod agent;
pub mod analytics;
pub mod app;
pub mod cli;
pub mod commands;
pub mod comment;
pub mod config;
pub mod context;
pub mod engine;
pub mod git;
pub mod github;
pub mod history;
pub mod hook;
pub mod lock;
pub mod markup;
pub mod model;
pub mod prompt;
pub mod render;
pub mod serve;
pub mod signals;
pub mod state_dir;
pub mod summary;

/// `ARCHITECTURE.md` is kept true: every path it names exists, and it names every module
/// directory and every module at the first two levels of `src/`.
#[cfg(test)]
mod architecture_map {
    use std::collections::BTreeSet;
    use std::path::Path;

    const ROOTS: [&str; 9] = [
        "src/",
        "tests/",
        "benches/",
        "docs/",
        "scripts/",
        "fuzz/",
        "examples/",
        "config/",
        "templates/",
    ];

    fn map() -> String {
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
            .expect("ARCHITECTURE.md")
    }

    #[test]
    fn every_path_it_names_exists() {
        let text = map();
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut missing = Vec::new();
        for word in text.split(|c: char| c.is_whitespace() || "`|,()".contains(c)) {
            let path = word.trim_end_matches(['.', ':', ';']);
            let pattern = path.contains(['*', '{']);
            let named = ROOTS.iter().any(|r| path.starts_with(r)) && !pattern;
            if named && !root.join(path.trim_end_matches('/')).exists() {
                missing.push(path.to_string());
            }
        }
        assert!(
            missing.is_empty(),
            "ARCHITECTURE.md names what is gone: {missing:?}"
        );
    }

    #[test]
    fn every_module_is_named() {
        let text = map();
        let words: BTreeSet<&str> = text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .collect();
        let mut unnamed = Vec::new();
        let mut dirs = vec![(Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), 0)];
        while let Some((dir, depth)) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("src").flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                if path.is_dir() {
                    if !words.contains(name.as_str()) {
                        unnamed.push(path.display().to_string());
                    }
                    dirs.push((path, depth + 1));
                    continue;
                }
                let Some(stem) = name.strip_suffix(".rs") else {
                    continue;
                };
                let own = !["mod", "lib", "main"].contains(&stem) && !stem.ends_with("_tests");
                if depth <= 1 && own && !words.contains(stem) {
                    unnamed.push(path.display().to_string());
                }
            }
        }
        assert!(
            unnamed.is_empty(),
            "ARCHITECTURE.md does not name: {unnamed:?}"
        );
    }
}
