//! Intake: a delivery committed (with whatever arrived meanwhile, in one group commit)
//! before its 2xx, a duplicate reported as such, and PostgreSQL's writer task.

use std::sync::Arc;

use tokio::sync::oneshot;

use super::sql::Statement;
use super::{
    now_ms, payload, postgres, Backend, Inbox, NewDelivery, Received, Reply, Store, StoreError,
    COMMIT_TRIES, GROUP_COMMIT_MAX, RECEIVE_TIMEOUT,
};

impl Store {
    /// Commits `delivery` (with whatever else arrived meanwhile) and says whether it was
    /// new. Returns only after the commit, or with an error after `RECEIVE_TIMEOUT` (the
    /// delivery may then be stored or not: GitHub's redelivery finds out, as a duplicate).
    pub async fn receive(&self, mut delivery: NewDelivery) -> Result<Received, StoreError> {
        if let Backend::Sqlite(_) = self.backend {
            // Here, on the request's own task, not in the one writer's.
            delivery.payload = payload::pack(&delivery.payload);
        }
        let (reply, answer) = oneshot::channel();
        let committed = async {
            self.writer
                .send((delivery, reply))
                .await
                .map_err(|_| StoreError::WriterGone)?;
            match answer.await {
                Ok(Ok(received)) => Ok(received),
                Ok(Err(message)) => Err(StoreError::Database(sqlx::Error::Protocol(message))),
                Err(_) => Err(StoreError::WriterGone),
            }
        };
        tokio::time::timeout(RECEIVE_TIMEOUT, committed)
            .await
            .unwrap_or(Err(StoreError::Timeout))
    }

    /// Whether a delivery of this [`NewDelivery::key`] is in the inbox: a webhook is found
    /// by its body, any other delivery by its id.
    pub async fn has_delivery(&self, delivery_id: &str) -> Result<bool, StoreError> {
        let found: Option<i64> = self
            .backend
            .scalar_optional(
                Statement::new("SELECT seq FROM deliveries WHERE delivery_id = $1")
                    .bind(delivery_id),
            )
            .await?;
        Ok(found.is_some())
    }
}

/// Fills `batch` with `first` and every delivery already waiting behind it (up to
/// [`GROUP_COMMIT_MAX`]): one group, one commit. Deliveries intake gave up on (it answered
/// 503) are left out, which keeps that answer true.
pub(super) fn gather(
    first: (NewDelivery, Reply),
    inbox: &mut Inbox,
    batch: &mut Vec<(NewDelivery, Reply)>,
) {
    batch.clear();
    batch.push(first);
    while batch.len() < GROUP_COMMIT_MAX {
        match inbox.try_recv() {
            Ok(next) => batch.push(next),
            Err(_) => break,
        }
    }
    batch.retain(|(_, reply)| !reply.is_closed());
}

/// Answers every delivery of the group: its own result, or the group's error.
pub(super) fn answer(
    batch: &mut Vec<(NewDelivery, Reply)>,
    outcome: Result<Vec<Received>, String>,
) {
    match outcome {
        Ok(results) => {
            for ((_, reply), result) in batch.drain(..).zip(results) {
                let _ = reply.send(Ok(result));
            }
        }
        Err(message) => {
            for (_, reply) in batch.drain(..) {
                let _ = reply.send(Err(message.clone()));
            }
        }
    }
}

/// PostgreSQL's writer: the same groups, committed by one task (SQLite's has a thread of
/// its own, [`sqlite::spawn_writer`]). A deadlock with another replica's group is retried.
pub(super) async fn write_loop(pg: Arc<postgres::Postgres>, mut inbox: Inbox) {
    let mut batch = Vec::with_capacity(GROUP_COMMIT_MAX);
    while let Some(first) = inbox.recv().await {
        gather(first, &mut inbox, &mut batch);
        if batch.is_empty() {
            continue;
        }
        let deliveries: Vec<&NewDelivery> = batch.iter().map(|(d, _)| d).collect();
        let mut outcome = postgres::insert_batch(&pg.pool, &deliveries, now_ms()).await;
        for _ in 1..COMMIT_TRIES {
            match &outcome {
                Err(e) if is_deadlock(e) => {
                    outcome = postgres::insert_batch(&pg.pool, &deliveries, now_ms()).await
                }
                _ => break,
            }
        }
        drop(deliveries);
        answer(&mut batch, outcome.map_err(|e| e.to_string()));
    }
}

/// PostgreSQL's `deadlock_detected`.
pub(super) fn is_deadlock(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|e| e.code())
        .is_some_and(|code| code == "40P01")
}
