//! How long each check took last time, so the next run starts the slowest first: with
//! fewer slots than checks, a long check that starts last is what the run waits for.
//! Kept in one small JSON file per repository (`check-seconds.json` in itergate's state);
//! a missing or unreadable file only means name order. It orders the checks and decides
//! nothing else.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::config::Check;

/// The durations kept at `path`, in seconds by check name.
pub(super) fn read(path: &Path) -> BTreeMap<String, f64> {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Keeps `took` at `path`, over the `earlier` durations of checks that did not run now.
pub(super) fn write(
    path: &Path,
    mut earlier: BTreeMap<String, f64>,
    took: impl Iterator<Item = (String, f64)>,
) {
    earlier.extend(took);
    let Ok(json) = serde_json::to_vec(&earlier) else {
        return;
    };
    let partial = path.with_extension("json.tmp");
    let written = std::fs::write(&partial, json).and_then(|()| std::fs::rename(&partial, path));
    if let Err(error) = written {
        tracing::debug!(path = %path.display(), %error, "keeping the checks' durations");
    }
}

/// The turn of each check that needs none (a check with `needs` starts when those end):
/// the slowest last time first, a check never timed before any (it may be the slowest),
/// then by name.
pub(super) fn turns<'c>(
    checks: &'c BTreeMap<String, Check>,
    last: &BTreeMap<String, f64>,
) -> HashMap<&'c str, usize> {
    let mut free: Vec<&str> = checks
        .iter()
        .filter(|(_, check)| check.needs.is_empty())
        .map(|(name, _)| name.as_str())
        .collect();
    let expected = |name: &str| last.get(name).copied().unwrap_or(f64::INFINITY);
    free.sort_by(|a, b| expected(b).total_cmp(&expected(a)).then(a.cmp(b)));
    free.into_iter().enumerate().map(|(i, n)| (n, i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(needs: &[&str]) -> Check {
        let mut check: Check = serde_json::from_str(r#"{"run": "true"}"#).expect("a check");
        check.needs = needs.iter().map(|n| n.to_string()).collect();
        check
    }

    #[test]
    fn the_slowest_goes_first_and_an_untimed_check_before_any() {
        let checks: BTreeMap<String, Check> = [
            ("complexity", check(&[])),
            ("lint", check(&[])),
            ("tests", check(&[])),
            ("types", check(&[])),
            ("new", check(&[])),
            ("report", check(&["tests"])),
        ]
        .into_iter()
        .map(|(n, c)| (n.to_string(), c))
        .collect();
        let last: BTreeMap<String, f64> = [
            ("complexity", 1.1),
            ("lint", 0.1),
            ("tests", 0.4),
            ("types", 10.2),
        ]
        .into_iter()
        .map(|(n, s)| (n.to_string(), s))
        .collect();
        let turns = turns(&checks, &last);
        let mut order: Vec<(&str, usize)> = turns.into_iter().collect();
        order.sort_by_key(|(_, turn)| *turn);
        let order: Vec<&str> = order.into_iter().map(|(name, _)| name).collect();
        assert_eq!(order, ["new", "types", "complexity", "tests", "lint"]);
    }

    #[test]
    fn durations_are_kept_beside_those_of_checks_that_did_not_run() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("check-seconds.json");
        assert!(read(&path).is_empty(), "none yet");
        write(
            &path,
            BTreeMap::new(),
            [("tests".to_string(), 2.5)].into_iter(),
        );
        write(&path, read(&path), [("lint".to_string(), 0.5)].into_iter());
        let kept = read(&path);
        assert_eq!(kept.get("tests"), Some(&2.5));
        assert_eq!(kept.get("lint"), Some(&0.5));
        std::fs::write(&path, "not json").expect("write");
        assert!(read(&path).is_empty(), "unreadable: name order");
    }
}
