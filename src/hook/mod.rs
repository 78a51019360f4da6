//! The git hook mode: the `pre-push` protocol git speaks on the hook's stdin, and installing
//! the small shell hook that hands a push to `itergate hook pre-push`.
//!
//! The installed hook must coexist with whatever hook a repository already has (it chains a
//! foreign hook instead of replacing it), go where git will actually run it
//! (`core.hooksPath`, linked worktrees), and always leave the user a way out
//! (`ITERGATE_SKIP=1`, `git push --no-verify`).

pub mod install;
pub mod memo;
pub mod protocol;

pub use install::{
    hook_script, hooks_dir, install, install_with, is_ours, uninstall, HookError, InstallOptions,
    InstallOutcome, InstallReport, UninstallReport, CHAINED_HOOK_NAME, HOOK_MARKER, HOOK_NAME,
};
pub use protocol::{
    classify, is_zero_oid, parse_push_lines, read_push_updates, PushKind, PushParseError,
    PushUpdate,
};
