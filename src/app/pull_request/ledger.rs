//! The state's revision outside the comment. Whoever can write to a repository can edit or
//! delete the App's sticky comment; the MAC catches an edit, but not an older body of the
//! comment put back (its MAC verifies) nor a deleted comment (no state, a fresh budget). So
//! the App keeps the highest revision it wrote for each pull request in its own database:
//! a state below it, or none where one was written, is not believed — the decision is
//! ESCALATE until a maintainer accepts, never a fresh budget. The Actions mode has no
//! database and no ledger.

use async_trait::async_trait;

use super::{Handler, HandlerError};
use crate::github::sticky::StickyState;
use crate::github::types::{PrNumber, RepoName};

/// The App's record of the highest state revision written per pull request.
#[async_trait]
pub trait StateLedger: Send + Sync {
    async fn revision(&self, repo: &RepoName, pr: PrNumber) -> Result<Option<u64>, String>;
    /// Raises the recorded revision to `revision` (a lower one changes nothing).
    async fn wrote(&self, repo: &RepoName, pr: PrNumber, revision: u64) -> Result<(), String>;
}

/// Why a state that verified is still not the latest, if it is not.
pub fn behind(state: Option<&StickyState>, floor: u64) -> Option<String> {
    match state {
        None if floor > 0 => Some(format!(
            "itergate's comment holding this pull request's history is gone (it had written it {floor} times)"
        )),
        Some(state) if state.revision < floor => Some(format!(
            "itergate's comment holds an older history (revision {} of {floor}): it was put back by hand",
            state.revision
        )),
        _ => None,
    }
}

impl Handler<'_> {
    /// The highest revision the App wrote for `pr` (0 without a ledger or a record).
    pub(super) async fn revision_floor(&self, pr: PrNumber) -> Result<u64, HandlerError> {
        match self.ledger {
            Some(ledger) => Ok(ledger
                .revision(&self.repo, pr)
                .await
                .map_err(HandlerError::Ledger)?
                .unwrap_or(0)),
            None => Ok(0),
        }
    }

    /// Records that `state` was written to `pr`'s comment.
    pub(super) async fn wrote(
        &self,
        pr: PrNumber,
        state: &StickyState,
    ) -> Result<(), HandlerError> {
        if let Some(ledger) = self.ledger {
            ledger
                .wrote(&self.repo, pr, state.revision)
                .await
                .map_err(HandlerError::Ledger)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_older_state_is_behind_and_the_latest_is_not() {
        let at = |revision| StickyState {
            revision,
            ..StickyState::default()
        };
        assert_eq!(behind(None, 0), None);
        assert!(behind(None, 3).unwrap().contains("is gone"));
        assert!(behind(Some(&at(2)), 3).unwrap().contains("revision 2 of 3"));
        assert_eq!(behind(Some(&at(3)), 3), None);
        assert_eq!(behind(Some(&at(4)), 3), None);
    }
}
