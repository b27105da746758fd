//! Durable execution sessions: one row per session holding the whole document, written
//! only by a compare-and-set on `revision` inside a transaction (SQLite takes the write
//! lock up front; on Postgres a lost race finds the revision moved and is refused as
//! "Execution session changed concurrently"). Nothing lives only in memory.

use std::time::Duration;

use chrono::Utc;
use gatehouse_wire::error::GatehouseCode;
use gatehouse_wire::execution::{
    Checkpoint, ExecutionEventType, ExecutionSession, ExecutionSessionStatus,
    RequestInterventionBody,
};
use gatehouse_wire::JsonObject;
use serde_json::Value;

use super::rules::{self, Applied, Claim, ExecError, Resolution};
use crate::store::{
    format_time, from_json_text, in_tx, new_id, to_json_text, with_pool, RowExt, Store, StoreError,
};

/// How many times an internal writer retries a lost compare-and-set race.
const INTERNAL_RETRIES: usize = 16;

impl From<StoreError> for ExecError {
    fn from(err: StoreError) -> Self {
        tracing::error!(error = %err, "execution store failed");
        ExecError::new(
            GatehouseCode::InternalError,
            "Internal error: execution session storage",
        )
    }
}

impl From<sqlx::Error> for ExecError {
    fn from(err: sqlx::Error) -> Self {
        StoreError::Database(err).into()
    }
}

/// What binds a run to its execution session (B1). Re-opening with the same binding
/// returns the session; another binding for the same run is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenSession {
    /// Tenant (the project).
    pub tenant_id: String,
    /// The room.
    pub room_id: String,
    /// The run (unique per tenant).
    pub run_id: String,
    /// The task (the agent session).
    pub task_id: String,
    /// The agent participant.
    pub participant_id: String,
    /// The exact agent revision (`workflow_revision.id`, or `draft:<digest>`).
    pub agent_revision_id: String,
    /// `sha256:<hex>` of the canonical config.
    pub agent_revision_digest: String,
    /// The failed session of the same task this run recovers.
    pub predecessor_session_id: Option<String>,
    /// The runtime profile.
    pub runtime_profile: Option<String>,
    /// The authority revision in force.
    pub authority_revision: Option<String>,
    /// The role revision in force.
    pub role_revision: Option<String>,
    /// Whether the task's actions are protected (need `pre_action`).
    pub protected: bool,
    /// The turn currently running the session.
    pub turn_id: Option<String>,
}

impl OpenSession {
    fn same_binding(&self, session: &ExecutionSession) -> bool {
        session.room_id == self.room_id
            && session.task_id == self.task_id
            && session.participant_id == self.participant_id
            && session.agent_revision_id.as_deref() == Some(self.agent_revision_id.as_str())
            && session.agent_revision_digest.as_deref() == Some(self.agent_revision_digest.as_str())
            && session.predecessor_session_id == self.predecessor_session_id
    }

    fn new_session(&self, session_id: String) -> ExecutionSession {
        let now = Utc::now();
        let mut session = ExecutionSession {
            tenant_id: self.tenant_id.clone(),
            room_id: self.room_id.clone(),
            session_id,
            run_id: self.run_id.clone(),
            task_id: self.task_id.clone(),
            participant_id: self.participant_id.clone(),
            agent_revision_id: Some(self.agent_revision_id.clone()),
            agent_revision_digest: Some(self.agent_revision_digest.clone()),
            predecessor_session_id: self.predecessor_session_id.clone(),
            runtime_profile: self.runtime_profile.clone(),
            authority_revision: self.authority_revision.clone(),
            role_revision: self.role_revision.clone(),
            revision: 1,
            status: ExecutionSessionStatus::Active,
            checkpoint_progress: None,
            outcome: None,
            interventions: Vec::new(),
            events: Vec::new(),
            created_at: Some(format_time(now)),
            updated_at: Some(format_time(now)),
            extra: JsonObject::new(),
        };
        let mut details = serde_json::json!({
            "runId": self.run_id,
            "taskId": self.task_id,
            "participantId": self.participant_id,
            "agentRevisionId": self.agent_revision_id,
            "agentRevisionDigest": self.agent_revision_digest,
            "protected": self.protected,
        });
        if let Some(predecessor) = &self.predecessor_session_id {
            details["predecessorSessionId"] = Value::String(predecessor.clone());
        }
        rules::push_event(
            &mut session,
            ExecutionEventType::SessionOpened,
            now,
            None,
            None,
            Some(details),
        );
        session
    }
}

fn decode(doc: &str) -> Result<ExecutionSession, StoreError> {
    from_json_text("execution_sessions.doc", doc)
}

/// The execution sessions of a store: opening, the intervention rules of B3, the
/// intervention dispatcher's claim/resolve (driven by [`super::hooks`]), progress and
/// terminal reconciliation.
///
/// Public so that a second dispatcher (a test, another process over the same database)
/// can claim and resolve exactly as the built-in one does.
#[derive(Debug, Clone)]
pub struct ExecutionStore {
    store: Store,
}

impl ExecutionStore {
    /// Execution sessions over `store`.
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// The session `session_id` of `tenant_id` in `room_id`; 404 otherwise.
    pub async fn get(
        &self,
        tenant_id: &str,
        room_id: &str,
        session_id: &str,
    ) -> Result<ExecutionSession, ExecError> {
        match self.get_by_id(session_id).await? {
            Some(s) if s.tenant_id == tenant_id && s.room_id == room_id => Ok(s),
            _ => Err(ExecError::not_found()),
        }
    }

    /// The session `session_id`, whatever its tenant and room.
    pub async fn get_by_id(&self, session_id: &str) -> Result<Option<ExecutionSession>, ExecError> {
        let doc: Option<String> = with_pool!(self.store, pool => {
            let row = sqlx::query("SELECT doc FROM execution_sessions WHERE session_id = $1")
                .bind(session_id)
                .fetch_optional(pool)
                .await?;
            row.map(|r| r.text("doc")).transpose()
        })?;
        Ok(doc.map(|d| decode(&d)).transpose()?)
    }

    /// The session whose current turn is `turn_id` (a parked turn being resumed).
    pub async fn find_by_turn(&self, turn_id: &str) -> Result<Option<ExecutionSession>, ExecError> {
        let doc: Option<String> = with_pool!(self.store, pool => {
            let row = sqlx::query("SELECT doc FROM execution_sessions WHERE current_turn_id = $1")
                .bind(turn_id)
                .fetch_optional(pool)
                .await?;
            row.map(|r| r.text("doc")).transpose()
        })?;
        Ok(doc.map(|d| decode(&d)).transpose()?)
    }

    /// True when `tenant_id` has a session in `room_id`: rooms exist here only through
    /// their sessions (AgentPlat answers an unknown room 404 `Room "<id>" was not found`).
    pub async fn room_exists(&self, tenant_id: &str, room_id: &str) -> Result<bool, ExecError> {
        let found: bool = with_pool!(self.store, pool => {
            let row = sqlx::query(
                "SELECT session_id FROM execution_sessions WHERE tenant_id = $1 AND room_id = $2 LIMIT 1",
            )
            .bind(tenant_id)
            .bind(room_id)
            .fetch_optional(pool)
            .await?;
            Ok::<bool, sqlx::Error>(row.is_some())
        })?;
        Ok(found)
    }

    /// The sessions of a task (agent session), oldest first.
    pub async fn list_for_task(
        &self,
        tenant_id: &str,
        task_id: &str,
    ) -> Result<Vec<ExecutionSession>, ExecError> {
        let docs: Vec<String> = with_pool!(self.store, pool => {
            let rows = sqlx::query(
                "SELECT doc FROM execution_sessions WHERE tenant_id = $1 AND task_id = $2 \
                 ORDER BY created_at, session_id",
            )
            .bind(tenant_id)
            .bind(task_id)
            .fetch_all(pool)
            .await?;
            rows.iter().map(|r| r.text("doc")).collect::<Result<Vec<_>, sqlx::Error>>()
        })?;
        docs.iter()
            .map(|d| decode(d).map_err(ExecError::from))
            .collect()
    }

    /// Open (or re-open) the session of a run, enforcing B3's opening and recovery
    /// rules: the same binding returns the existing session; another binding for the
    /// run is 409 `BINDING_CONFLICT`; a predecessor must be a `failed` session of the
    /// same task (unknown or another task: 400; not failed: 409 `INVALID_STATE`).
    pub async fn open(&self, open: &OpenSession) -> Result<ExecutionSession, ExecError> {
        let session_id = new_id();
        let fresh = open.new_session(session_id.clone());
        let doc = to_json_text(&fresh);
        let now = format_time(Utc::now());
        let outcome: Result<ExecutionSession, ExecError> = in_tx!(self.store, tx => {
            let existing = sqlx::query(
                "SELECT doc FROM execution_sessions WHERE tenant_id = $1 AND run_id = $2",
            )
            .bind(&open.tenant_id)
            .bind(&open.run_id)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(row) = existing {
                let session = decode(&row.text("doc")?)?;
                return Ok(if open.same_binding(&session) {
                    Ok(session)
                } else {
                    Err(ExecError::new(
                        GatehouseCode::BindingConflict,
                        format!(
                            "Run {} already has execution session {} with another binding",
                            open.run_id, session.session_id
                        ),
                    ))
                });
            }
            if let Some(predecessor_id) = &open.predecessor_session_id {
                let row = sqlx::query(
                    "SELECT doc FROM execution_sessions WHERE session_id = $1 AND tenant_id = $2",
                )
                .bind(predecessor_id)
                .bind(&open.tenant_id)
                .fetch_optional(&mut *tx)
                .await?;
                let Some(row) = row else {
                    return Ok(Err(ExecError::new(
                        GatehouseCode::BadRequest,
                        format!("predecessorSessionId {predecessor_id:?} names no execution session"),
                    )));
                };
                let predecessor = decode(&row.text("doc")?)?;
                if predecessor.task_id != open.task_id {
                    return Ok(Err(ExecError::new(
                        GatehouseCode::BadRequest,
                        format!(
                            "predecessorSessionId {predecessor_id:?} belongs to another task ({}), not {}",
                            predecessor.task_id, open.task_id
                        ),
                    )));
                }
                if predecessor.status != ExecutionSessionStatus::Failed {
                    return Ok(Err(ExecError::new(
                        GatehouseCode::InvalidState,
                        format!(
                            "predecessorSessionId {predecessor_id:?} is {}, not failed: only a failed session can be recovered",
                            predecessor.status.as_str()
                        ),
                    )));
                }
            }
            sqlx::query(
                "INSERT INTO execution_sessions (session_id, tenant_id, room_id, run_id, task_id, \
                 current_turn_id, status, revision, protected, doc, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            )
            .bind(&session_id)
            .bind(&open.tenant_id)
            .bind(&open.room_id)
            .bind(&open.run_id)
            .bind(&open.task_id)
            .bind(&open.turn_id)
            .bind(fresh.status.as_str())
            .bind(1i64)
            .bind(i64::from(open.protected))
            .bind(&doc)
            .bind(&now)
            .bind(&now)
            .execute(&mut *tx)
            .await?;
            Ok(Ok(fresh.clone()))
        })?;
        outcome
    }

    /// Load `session_id`, apply `f`, and when it wrote, store the document with
    /// `revision + 1` by compare-and-set (also moving `current_turn_id` to `turn_id`
    /// when given). A lost race is 409 "Execution session changed concurrently".
    async fn mutate<T, F>(
        &self,
        session_id: &str,
        turn_id: Option<&str>,
        mut f: F,
    ) -> Result<(T, ExecutionSession), ExecError>
    where
        F: FnMut(&mut ExecutionSession) -> Result<Applied<T>, ExecError>,
    {
        let outcome: Result<(T, ExecutionSession), ExecError> = in_tx!(self.store, tx => {
            let row = sqlx::query(
                "SELECT doc, revision FROM execution_sessions WHERE session_id = $1",
            )
            .bind(session_id)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(row) = row else {
                return Ok(Err(ExecError::not_found()));
            };
            let stored_revision = row.int("revision")?;
            let mut session = decode(&row.text("doc")?)?;
            session.revision = u64::try_from(stored_revision).unwrap_or(0);
            let value = match f(&mut session) {
                Err(err) => return Ok(Err(err)),
                Ok(Applied::NoWrite(value)) if turn_id.is_none() => return Ok(Ok((value, session))),
                Ok(Applied::NoWrite(value)) | Ok(Applied::Write(value)) => value,
            };
            session.revision += 1;
            let now = format_time(Utc::now());
            session.updated_at = Some(now.clone());
            let updated = sqlx::query(
                "UPDATE execution_sessions SET doc = $1, revision = $2, status = $3, \
                 current_turn_id = COALESCE($4, current_turn_id), updated_at = $5 \
                 WHERE session_id = $6 AND revision = $7",
            )
            .bind(to_json_text(&session))
            .bind(i64::try_from(session.revision).unwrap_or(i64::MAX))
            .bind(session.status.as_str())
            .bind(turn_id)
            .bind(&now)
            .bind(session_id)
            .bind(stored_revision)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if updated != 1 {
                return Ok(Err(ExecError::changed_concurrently()));
            }
            Ok(Ok((value, session)))
        })?;
        outcome
    }

    /// [`mutate`](Self::mutate), retrying a lost race (for internal writers, whose
    /// writes do not depend on a caller's expected revision).
    async fn mutate_retrying<T, F>(
        &self,
        session_id: &str,
        turn_id: Option<&str>,
        mut f: F,
    ) -> Result<(T, ExecutionSession), ExecError>
    where
        F: FnMut(&mut ExecutionSession) -> Result<Applied<T>, ExecError>,
    {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.mutate(session_id, turn_id, &mut f).await {
                Err(err) if err.is_lost_race() && attempt < INTERNAL_RETRIES => continue,
                other => return other,
            }
        }
    }

    /// `POST .../interventions` (B3): replay check first, then the operation-id
    /// conflict, the revision compare-and-set, the state and the 256 limit. The
    /// requester is the authenticated actor. Answers the session after the request.
    pub async fn request_intervention(
        &self,
        tenant_id: &str,
        room_id: &str,
        session_id: &str,
        body: &RequestInterventionBody,
        requester: &str,
    ) -> Result<ExecutionSession, ExecError> {
        // Scope check first: a session of another tenant or room does not exist here.
        self.get(tenant_id, room_id, session_id).await?;
        let now = Utc::now();
        let ((), session) = self
            .mutate(session_id, None, |session| {
                rules::request_intervention(
                    session,
                    body.expected_revision,
                    &body.operation_id,
                    &body.instruction,
                    body.checkpoint.clone(),
                    requester,
                    now,
                )
            })
            .await?;
        Ok(session)
    }

    /// A dispatcher's claim: the first `pending` (or lease-expired `dispatching`)
    /// intervention of `session_id` for `checkpoint`, under a lease of `lease`
    /// (1 ms .. 300 s): fresh token, `attempts + 1`, `intervention_claimed`.
    pub async fn claim(
        &self,
        session_id: &str,
        checkpoint: Checkpoint,
        lease: Duration,
    ) -> Result<Option<Claim>, ExecError> {
        let lease_ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX);
        let (claim, _) = self
            .mutate_retrying(session_id, None, |session| {
                rules::claim(session, checkpoint.clone(), lease_ms, Utc::now())
            })
            .await?;
        Ok(claim)
    }

    /// Resolve a claim with its token (resolve-once; see [`rules::resolve`]).
    pub async fn resolve(
        &self,
        session_id: &str,
        operation_id: &str,
        dispatch_token: &str,
        resolution: &Resolution,
    ) -> Result<ExecutionSession, ExecError> {
        let ((), session) = self
            .mutate_retrying(session_id, None, |session| {
                rules::resolve(
                    session,
                    operation_id,
                    dispatch_token,
                    resolution,
                    Utc::now(),
                )
            })
            .await?;
        Ok(session)
    }

    /// Count a checkpoint the run reached.
    pub async fn checkpoint_reached(
        &self,
        session_id: &str,
        checkpoint: Checkpoint,
    ) -> Result<ExecutionSession, ExecError> {
        let ((), session) = self
            .mutate_retrying(session_id, None, |session| {
                rules::record_progress(session, checkpoint.clone());
                Ok(Applied::Write(()))
            })
            .await?;
        Ok(session)
    }

    /// Move a non-terminal session to `active` or `paused` (a parked turn pauses it, its
    /// resume re-activates it and becomes its current turn).
    pub async fn set_running_state(
        &self,
        session_id: &str,
        status: ExecutionSessionStatus,
        turn_id: Option<&str>,
    ) -> Result<ExecutionSession, ExecError> {
        let ((), session) = self
            .mutate_retrying(session_id, turn_id, |session| {
                if session.status.is_terminal() {
                    return Err(ExecError::new(
                        GatehouseCode::InvalidState,
                        format!("Execution session is already {}", session.status.as_str()),
                    ));
                }
                if session.status == status {
                    return Ok(Applied::NoWrite(()));
                }
                session.status = status.clone();
                Ok(Applied::Write(()))
            })
            .await?;
        Ok(session)
    }

    /// Reconcile every `active` session as `failed` with `reason`: for a server that
    /// restarted on a database only it uses (SQLite), where an `active` session's run
    /// died with the old process. Parked runs (`paused`) are left alone: they resume.
    /// Returns how many sessions were reconciled.
    pub async fn reconcile_orphans(&self, reason: &str) -> Result<usize, ExecError> {
        let ids: Vec<String> = with_pool!(self.store, pool => {
            let rows = sqlx::query("SELECT session_id FROM execution_sessions WHERE status = 'active'")
                .fetch_all(pool)
                .await?;
            rows.iter().map(|r| r.text("session_id")).collect::<Result<Vec<_>, sqlx::Error>>()
        })?;
        let details = serde_json::json!({ "orphaned": true });
        let mut count = 0;
        for id in &ids {
            let session = self
                .reconcile(
                    id,
                    ExecutionSessionStatus::Failed,
                    Some(reason),
                    Some(details.clone()),
                )
                .await?;
            if session.status == ExecutionSessionStatus::Failed {
                count += 1;
            }
        }
        Ok(count)
    }

    /// Terminal reconciliation (see [`rules::reconcile`]).
    pub async fn reconcile(
        &self,
        session_id: &str,
        status: ExecutionSessionStatus,
        reason: Option<&str>,
        details: Option<Value>,
    ) -> Result<ExecutionSession, ExecError> {
        let ((), session) = self
            .mutate_retrying(session_id, None, |session| {
                Ok(rules::reconcile(
                    session,
                    status.clone(),
                    reason,
                    details.clone(),
                    Utc::now(),
                ))
            })
            .await?;
        Ok(session)
    }
}
