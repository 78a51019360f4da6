//! The agent's sandbox (`loop.sandbox: workspace-write`): the agent's whole process tree may
//! write the work tree and the loop's scratch directory, and nothing else. `.git`, the
//! project's virtualenvs and `node_modules` inside the work tree are mounted read-only, the
//! holdout directories are covered by an empty read-only tmpfs, and Landlock limits writes
//! everywhere else. The loop starts the agent through `itergate sandbox-exec`, a fresh
//! single-threaded process that enters the sandbox and then executes the agent, so nothing
//! the agent starts can leave it.
//!
//! On Linux: a private mount namespace (a user namespace too when not root) and Landlock
//! ABI 2 or later. On macOS: Seatbelt, through `/usr/bin/sandbox-exec` and a profile built
//! from the same policy ([`seatbelt_profile`]): writes only in the writable directories and
//! `/dev`, none in the read-only ones, no access at all to the hidden ones. Where neither
//! is to be had the loop refuses to start, naming `--sandbox off`.

use std::path::PathBuf;

/// What the sandboxed agent may write and may not see.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Writable, with everything beneath (the work tree, the scratch directory).
    pub writable: Vec<PathBuf>,
    /// Inside a writable directory, yet read-only (`.git`, `.venv`, `node_modules`).
    pub read_only: Vec<PathBuf>,
    /// Never visible: an empty directory in their place (the holdouts).
    pub hidden: Vec<PathBuf>,
    /// The agent's `TMPDIR` (inside a writable directory).
    pub tmp: Option<PathBuf>,
    /// The agent's `XDG_CACHE_HOME` (Go's build cache, pip's) and npm's cache: its own,
    /// writable.
    pub cache: Option<PathBuf>,
}

impl Policy {
    /// The command line that runs `argv` inside the sandbox, through this executable.
    pub fn wrap(&self, argv: &[String]) -> std::io::Result<Vec<String>> {
        // This very executable, even when an upgrade replaced its file mid-loop.
        let exe = if cfg!(target_os = "linux") {
            PathBuf::from("/proc/self/exe")
        } else {
            std::env::current_exe()?
        };
        let mut wrapped = vec![exe.display().to_string(), "sandbox-exec".to_string()];
        let mut add = |flag: &str, paths: &[PathBuf]| {
            for path in paths {
                wrapped.push(flag.to_string());
                wrapped.push(path.display().to_string());
            }
        };
        add("--write", &self.writable);
        add("--read-only", &self.read_only);
        add("--hide", &self.hidden);
        add("--tmp", self.tmp.as_slice());
        add("--cache", self.cache.as_slice());
        wrapped.push("--".to_string());
        wrapped.extend(argv.iter().cloned());
        Ok(wrapped)
    }
}

/// The Landlock ABI this kernel offers (0: none). `ITERGATE_LANDLOCK_ABI` stands in for
/// the kernel's answer (a test's way to see the refusal on a kernel that has it).
pub fn landlock_abi() -> u32 {
    if let Some(forced) = std::env::var("ITERGATE_LANDLOCK_ABI")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return forced;
    }
    kernel_abi()
}

/// The oldest Landlock ABI the sandbox works with: 2 lets a file move between directories.
pub const MIN_ABI: u32 = 2;

/// macOS's Seatbelt front end.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// Whether `workspace-write` can be had here; the refusal names the way on.
pub fn check_support() -> Result<u32, String> {
    if cfg!(target_os = "macos") {
        return if std::path::Path::new(SANDBOX_EXEC).is_file() {
            Ok(0)
        } else {
            Err(format!(
                "the agent sandbox (loop.sandbox: workspace-write) needs Seatbelt's {SANDBOX_EXEC} on macOS, and it is missing: run with `--sandbox off` (the agent can then write what you can: the sealed measurement still voids what it tampers with)"
            ))
        };
    }
    if !cfg!(target_os = "linux") {
        return Err(format!(
            "the agent sandbox (loop.sandbox: workspace-write) needs Linux with Landlock or macOS with Seatbelt; on {} run with `--sandbox off` (the agent can then write what you can: the sealed measurement still voids what it tampers with)",
            std::env::consts::OS
        ));
    }
    let abi = landlock_abi();
    if abi < MIN_ABI {
        return Err(format!(
            "the agent sandbox (loop.sandbox: workspace-write) needs Landlock ABI {MIN_ABI} or later (Linux 5.19 with `landlock` among the LSMs); this kernel offers {}: run with `--sandbox off` (the agent can then write what you can: the sealed measurement still voids what it tampers with)",
            if abi == 0 { "none".to_string() } else { format!("ABI {abi}") }
        ));
    }
    Ok(abi)
}

#[cfg(target_os = "linux")]
fn kernel_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the version query takes no attribute and writes nothing.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(abi).unwrap_or(0)
}

#[cfg(not(target_os = "linux"))]
fn kernel_abi() -> u32 {
    0
}

/// In `itergate sandbox-exec`: enters the sandbox and becomes `argv`; returns only on
/// failure, with what failed.
pub fn exec(policy: &Policy, argv: &[String]) -> String {
    if let Err(e) = check_support() {
        return e;
    }
    #[cfg(target_os = "linux")]
    {
        if let Err(e) = linux::enter(policy) {
            return format!("entering the agent sandbox: {e}");
        }
    }
    let Some((program, args)) = argv.split_first() else {
        return "sandbox-exec: no command".to_string();
    };
    use std::os::unix::process::CommandExt as _;
    let mut command = if cfg!(target_os = "macos") {
        // Seatbelt's profile binds the whole tree `sandbox-exec` starts.
        let mut command = std::process::Command::new(SANDBOX_EXEC);
        command.arg("-p").arg(seatbelt_profile(policy)).arg(program);
        command
    } else {
        std::process::Command::new(program)
    };
    command.args(args);
    if let Some(tmp) = &policy.tmp {
        command.env("TMPDIR", tmp);
    }
    if let Some(cache) = &policy.cache {
        // Go's build cache and pip's follow XDG_CACHE_HOME; npm's has a variable of its own.
        command
            .env("XDG_CACHE_HOME", cache)
            .env("npm_config_cache", cache.join("npm"));
    }
    format!("cannot start `{program}`: {}", command.exec())
}

/// The Seatbelt profile of `policy` (SBPL, for `sandbox-exec -p`). Everything is allowed
/// but what the policy takes away, each by a deny rule of its own, so no rule's precedence
/// over another matters: writes outside the writable directories and `/dev`; writes to the
/// read-only ones; reading or writing the hidden ones.
pub fn seatbelt_profile(policy: &Policy) -> String {
    fn quoted(path: &std::path::Path) -> String {
        let text = path.display().to_string();
        format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
    }
    let mut profile = String::from("(version 1)\n(allow default)\n");
    let writable: Vec<String> = policy
        .writable
        .iter()
        .map(|p| format!(" (require-not (subpath {}))", quoted(p)))
        .collect();
    profile.push_str(&format!(
        "(deny file-write* (require-all (require-not (subpath \"/dev\")){}))\n",
        writable.concat()
    ));
    for path in &policy.read_only {
        // A writable directory inside a read-only one stays writable (`.vite-temp`).
        let inside: Vec<String> = policy
            .writable
            .iter()
            .filter(|w| w.starts_with(path) && *w != path)
            .map(|w| format!(" (require-not (subpath {}))", quoted(w)))
            .collect();
        profile.push_str(&if inside.is_empty() {
            format!("(deny file-write* (subpath {}))\n", quoted(path))
        } else {
            format!(
                "(deny file-write* (require-all (subpath {}){}))\n",
                quoted(path),
                inside.concat()
            )
        });
    }
    for path in &policy.hidden {
        profile.push_str(&format!(
            "(deny file-read* file-write* (subpath {}))\n",
            quoted(path)
        ));
    }
    profile
}

/// The existing paths among `paths`, canonical (Landlock and mounts follow the real path).
pub fn existing(paths: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = paths
        .into_iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    found.sort();
    found.dedup();
    found
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt as _;
    use std::path::{Path, PathBuf};

    use landlock::{
        path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr,
        RulesetStatus, ABI,
    };

    use super::Policy;

    pub(super) fn enter(policy: &Policy) -> Result<(), String> {
        private_mounts()?;
        // Writable places inside read-only ones are bound first: the recursive read-only
        // bind below carries them along as they are.
        for dir in &policy.writable {
            if policy.read_only.iter().any(|ro| dir.starts_with(ro)) {
                bind(dir, false)?;
            }
        }
        for dir in &policy.read_only {
            bind(dir, true)?;
        }
        for dir in &policy.hidden {
            hide(dir)?;
        }
        landlock(policy)
    }

    fn errno(what: &str, path: Option<&Path>) -> String {
        let e = std::io::Error::last_os_error();
        match path {
            Some(p) => format!("{what} {}: {e}", p.display()),
            None => format!("{what}: {e}"),
        }
    }

    fn c_path(path: &Path) -> Result<CString, String> {
        CString::new(path.as_os_str().as_bytes())
            .map_err(|_| format!("{}: a path with a NUL byte", path.display()))
    }

    /// A mount namespace of the agent's own (and a user namespace, when not root), whose
    /// mounts never propagate back.
    fn private_mounts() -> Result<(), String> {
        // SAFETY: plain system calls on this single-threaded process.
        unsafe {
            let (uid, gid) = (libc::geteuid(), libc::getegid());
            if uid == 0 {
                if libc::unshare(libc::CLONE_NEWNS) != 0 {
                    return Err(errno("a private mount namespace", None));
                }
            } else {
                if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
                    return Err(errno(
                        "a user namespace (unprivileged user namespaces may be disabled: kernel.unprivileged_userns_clone, or AppArmor's restrict_unprivileged_userns)",
                        None,
                    ));
                }
                let write = |file: &str, text: String| {
                    std::fs::write(file, text).map_err(|e| format!("{file}: {e}"))
                };
                write("/proc/self/setgroups", "deny".into())?;
                write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
                write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
            }
            let root = c"/";
            if libc::mount(
                std::ptr::null(),
                root.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return Err(errno("making the mounts private", None));
            }
        }
        Ok(())
    }

    /// Binds `dir` onto itself (with what is mounted beneath), read-only or writable, the
    /// mount's other flags kept (a user namespace may not drop them).
    fn bind(dir: &Path, read_only: bool) -> Result<(), String> {
        let path = c_path(dir)?;
        // SAFETY: `path` is a valid C string for the calls' duration.
        unsafe {
            if libc::mount(
                path.as_ptr(),
                path.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            ) != 0
            {
                return Err(errno("binding", Some(dir)));
            }
            let mut stat: libc::statvfs = std::mem::zeroed();
            if libc::statvfs(path.as_ptr(), &mut stat) != 0 {
                return Err(errno("reading the mount flags of", Some(dir)));
            }
            let kept = [
                (libc::ST_NOSUID, libc::MS_NOSUID),
                (libc::ST_NODEV, libc::MS_NODEV),
                (libc::ST_NOEXEC, libc::MS_NOEXEC),
                (libc::ST_NOATIME, libc::MS_NOATIME),
                (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
                (libc::ST_RELATIME, libc::MS_RELATIME),
            ]
            .iter()
            .filter(|(st, _)| stat.f_flag & *st != 0)
            .fold(0, |flags, (_, ms)| flags | ms);
            let ro = if read_only { libc::MS_RDONLY } else { 0 };
            if libc::mount(
                std::ptr::null(),
                path.as_ptr(),
                std::ptr::null(),
                libc::MS_REMOUNT | libc::MS_BIND | kept | ro,
                std::ptr::null(),
            ) != 0
            {
                return Err(errno("remounting", Some(dir)));
            }
        }
        Ok(())
    }

    /// An empty read-only tmpfs over `dir`.
    fn hide(dir: &Path) -> Result<(), String> {
        let path = c_path(dir)?;
        // SAFETY: valid C strings for the call's duration.
        let done = unsafe {
            libc::mount(
                c"itergate-hidden".as_ptr(),
                path.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                c"size=4k,mode=0555".as_ptr().cast(),
            )
        };
        if done != 0 {
            return Err(errno("hiding", Some(dir)));
        }
        Ok(())
    }

    /// Reading and executing everywhere; writing only the writable directories and the
    /// devices (`/dev/null`, terminals).
    fn landlock(policy: &Policy) -> Result<(), String> {
        let abi = ABI::V5;
        let fail = |e: landlock::RulesetError| format!("Landlock: {e}");
        let status = Ruleset::default()
            .handle_access(AccessFs::from_all(abi))
            .map_err(fail)?
            .create()
            .map_err(fail)?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
            .map_err(fail)?
            .add_rules(path_beneath_rules(
                policy
                    .writable
                    .iter()
                    .map(PathBuf::as_path)
                    .chain([Path::new("/dev")]),
                AccessFs::from_all(abi),
            ))
            .map_err(fail)?
            .restrict_self()
            .map_err(fail)?;
        if status.ruleset == RulesetStatus::NotEnforced {
            return Err("Landlock: the kernel enforced none of the rules".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seatbelt_profile_denies_what_the_policy_takes_away() {
        let policy = Policy {
            writable: vec![
                "/w/repo".into(),
                "/w/scratch dir".into(),
                "/w/repo/node_modules/.vite-temp".into(),
            ],
            read_only: vec![
                "/w/repo/.git".into(),
                "/w/repo/.venv".into(),
                "/w/repo/node_modules".into(),
            ],
            hidden: vec!["/w/repo/.git/itergate/private".into()],
            tmp: Some("/w/scratch dir/tmp".into()),
            cache: None,
        };
        insta::assert_snapshot!(seatbelt_profile(&policy), @r#"
        (version 1)
        (allow default)
        (deny file-write* (require-all (require-not (subpath "/dev")) (require-not (subpath "/w/repo")) (require-not (subpath "/w/scratch dir")) (require-not (subpath "/w/repo/node_modules/.vite-temp"))))
        (deny file-write* (subpath "/w/repo/.git"))
        (deny file-write* (subpath "/w/repo/.venv"))
        (deny file-write* (require-all (subpath "/w/repo/node_modules") (require-not (subpath "/w/repo/node_modules/.vite-temp"))))
        (deny file-read* file-write* (subpath "/w/repo/.git/itergate/private"))
        "#);
    }

    #[test]
    fn a_path_is_quoted_as_an_sbpl_string() {
        let policy = Policy {
            writable: vec![r#"/w/a "quoted" \ dir"#.into()],
            ..Policy::default()
        };
        let profile = seatbelt_profile(&policy);
        assert!(
            profile.contains(r#"(subpath "/w/a \"quoted\" \\ dir")"#),
            "{profile}"
        );
    }
}
