//! Which Python a check that could not import its tools ran, and the virtual environment
//! the project has: the commonest first-run failure (`No module named pytest`, pytest's
//! `unrecognized arguments: --cov` without pytest-cov) is a venv that was not active.

use std::path::{Path, PathBuf};

use crate::signals::observation::CheckError;

/// What Python says when a module it was asked for is not installed.
const MISSING_MODULE: [&str; 3] = [
    "No module named",
    "ModuleNotFoundError",
    "unrecognized arguments: --cov",
];

/// The virtual environments a project keeps at its root, by their usual names.
const VENVS: [&str; 3] = [".venv", "venv", "env"];

/// One line naming the interpreter the failing Python checks ran and the project's virtual
/// environment, when a check's output says a module is missing; `None` otherwise.
pub fn missing_module_hint(errors: &[CheckError], work_tree: Option<&Path>) -> Option<String> {
    let failing = errors.iter().find(|e| {
        MISSING_MODULE
            .iter()
            .any(|words| e.tail.contains(words) || e.message.contains(words))
    })?;
    let command = failing.command.as_deref().unwrap_or_default();
    let program = ["python3", "python"]
        .into_iter()
        .find(|p| command.split_whitespace().any(|w| w == *p))
        .unwrap_or("python3");
    let path = std::env::var("PATH").unwrap_or_default();
    let ran = match crate::signals::environment::on_path(&path, program) {
        Some(path) => format!("`{program}` is {}", path.display()),
        None => format!("`{program}` is not on PATH"),
    };
    let venv = work_tree.and_then(|root| {
        VENVS
            .iter()
            .map(|name| root.join(name))
            .find(|dir| dir.join("bin/python").exists())
    });
    let active = std::env::var_os("VIRTUAL_ENV").map(PathBuf::from);
    let advice = match venv {
        Some(dir) if active.as_deref() != Some(dir.as_path()) => format!(
            "the project's virtual environment {} is not active: activate it (`. {}/bin/activate`) before running itergate, or install the module for this interpreter",
            dir.display(),
            dir.display()
        ),
        Some(dir) => format!(
            "the virtual environment {} is active: install the module there (`{}/bin/python -m pip install …`)",
            dir.display(),
            dir.display()
        ),
        None => "no virtual environment was found at the repository's root (.venv, venv, env): install the module for this interpreter, or create one and activate it".to_string(),
    };
    Some(format!(
        "A Python module is missing for check `{}`: {ran}; {advice}.",
        failing.check
    ))
}
