//! The environment a check runs with: inherited, or scrubbed to an allow-list so that
//! no secret of the caller's reaches a check's process.

/// What a check's process inherits from itergate's environment.
///
/// A check runs the code under review. Locally (the hook, `run`, `score`) that is the user's
/// own code in the user's own shell, so it inherits everything. In CI (`itergate ci`) it may
/// be a pull request's code, and the job's environment holds credentials and the files
/// through which a step speaks to the runner (`GITHUB_OUTPUT`, `GITHUB_ENV`): the check then
/// gets only an allow-listed environment, and never a variable whose name says it is a
/// credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EnvPolicy {
    /// The whole environment of the itergate process.
    #[default]
    Inherit,
    /// Only [`passes_scrubbed`] variables, then the check's own `env`.
    Scrubbed,
}

/// Variables a check keeps under [`EnvPolicy::Scrubbed`]: what toolchains need to find
/// themselves and the runner's description of the machine.
pub(super) const SCRUBBED_ALLOW_EXACT: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    "HOSTNAME",
    "CI",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "LD_LIBRARY_PATH",
    "PKG_CONFIG_PATH",
    "JAVA_HOME",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOFLAGS",
    "VIRTUAL_ENV",
    "CONDA",
    "pythonLocation",
    "ImageOS",
    "ImageVersion",
    "RUNNER_OS",
    "RUNNER_ARCH",
    "RUNNER_TEMP",
    "RUNNER_TOOL_CACHE",
    "GITHUB_ACTIONS",
    "GITHUB_WORKSPACE",
    "GITHUB_REPOSITORY",
    "GITHUB_SHA",
    "GITHUB_REF",
    "GITHUB_EVENT_NAME",
];
/// Prefixes of toolchain variables a check keeps under [`EnvPolicy::Scrubbed`].
pub(super) const SCRUBBED_ALLOW_PREFIXES: &[&str] = &[
    "LC_",
    "XDG_",
    "CARGO_",
    "RUSTUP_",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUSTC",
    "RUST_",
    "PYTHON",
    "PIP_",
    "UV_",
    "NODE_",
    "NPM_CONFIG_",
    "JAVA_",
    "GRADLE_",
    "MAVEN_",
    "DOTNET_",
];
/// Words that make a variable a credential, whatever the allow-list says
/// (`CARGO_REGISTRY_TOKEN`, `NPM_CONFIG__AUTH`, `PIP_INDEX_PASSWORD`).
pub(super) const CREDENTIAL_WORDS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "PRIVATE",
    "AUTH",
    "_KEY",
    "APIKEY",
];

/// Whether a variable of itergate's environment reaches a check under
/// [`EnvPolicy::Scrubbed`]. `GITHUB_TOKEN`, `ACTIONS_*` (`ACTIONS_RUNTIME_TOKEN`,
/// `ACTIONS_ID_TOKEN_REQUEST_*`), `GITHUB_OUTPUT`, `GITHUB_ENV`, `GITHUB_PATH`,
/// `GITHUB_STATE`, `GITHUB_STEP_SUMMARY` and `INPUT_*` are not on the allow-list.
pub fn passes_scrubbed(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if CREDENTIAL_WORDS.iter().any(|w| upper.contains(w)) {
        return false;
    }
    SCRUBBED_ALLOW_EXACT.contains(&name)
        || SCRUBBED_ALLOW_PREFIXES.iter().any(|p| name.starts_with(p))
}
