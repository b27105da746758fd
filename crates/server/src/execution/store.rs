//! Durable execution sessions: one row per session holding the whole document, written
//! only by a compare-and-set on `revision` inside a transaction (SQLite takes the write
//! lock up front; on Postgres a lost race finds the revision moved and is refused as
//! "Execution session changed concurrently"). Nothing lives only in memory.
//!
//! A running session is held by one run attempt ([`RunHold`]: a token and a lease the
//! attempt renews while it runs). What the attempt did (the interventions it applied,
//! the checkpoints it reached, how the run ended or paused) is written by
//! [`TurnSessionWrite`] in the same transaction as the turn itself, fenced by that
//! token: applied means in effect. An expired hold is taken over by the reconciler of
//! any instance ([`ExecutionStore::reconcile_expired_run`]), and a paused session whose
//! gate nothing will resume is ended ([`ExecutionStore::reconcile_stranded`]).

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use gatehouse_wire::error::GatehouseCode;
use gatehouse_wire::execution::{
    Checkpoint, ExecutionEventType, ExecutionSession, ExecutionSessionStatus,
};
use gatehouse_wire::JsonObject;
use serde_json::Value;

use super::rules::{self, Applied, AuthorityChange, Claim, ExecError, NewIntervention, Resolution};
use crate::announce::{in_announced_tx, Announcer, Change, Changes, InterventionChange};
use crate::db::{
    addable_lease_ms, format_time, from_json_text, in_tx, new_id, to_json_text, with_pool, with_tx,
    Database, RowExt, StoreError, Tx,
};
use crate::seams::{ExecutionQueries, GateOfTurn, InteractionQueries, JoinedWrite, ResumeJobState};

/// How many times an internal writer retries a lost compare-and-set race.
const INTERNAL_RETRIES: usize = 16;

impl From<StoreError> for ExecError {
    /// 503 `UNAVAILABLE` for a database that cannot do the work now
    /// ([`StoreError::is_unavailable`]), else 500 (logged, never the SQL).
    fn from(err: StoreError) -> Self {
        if err.is_unavailable() {
            tracing::warn!(error = %err, "the database is unavailable; answering 503");
            return ExecError::new(
                GatehouseCode::Unavailable,
                crate::error::DATABASE_UNAVAILABLE,
            );
        }
        tracing::error!(error = %err, "execution store failed");
        ExecError::new(
            GatehouseCode::InternalError,
            "Internal error: execution session storage",
        )
    }
}

impl From<sqlx::Error> for ExecError {
    fn from(err: sqlx::Error) -> Self {
        StoreError::from(err).into()
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
#[derive(Clone)]
pub struct ExecutionStore {
    db: Database,
    announce: Announcer,
    interactions: Arc<dyn InteractionQueries>,
}

impl std::fmt::Debug for ExecutionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutionStore")
            .field("db", &self.db.backend_name())
            .finish_non_exhaustive()
    }
}

impl ExecutionStore {
    /// Execution sessions over `db`, announcing resolved interventions through
    /// `announce`, asking `interactions` (that area's offered queries) about gates and
    /// agent revisions.
    pub fn new(
        db: Database,
        announce: Announcer,
        interactions: Arc<dyn InteractionQueries>,
    ) -> Self {
        Self {
            db,
            announce,
            interactions,
        }
    }

    /// What the interactions area answers this area (gates, agent revisions).
    pub fn interactions(&self) -> &dyn InteractionQueries {
        self.interactions.as_ref()
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
        let doc: Option<String> = with_pool!(self.db, pool => {
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
        let doc: Option<String> = with_pool!(self.db, pool => {
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
        let found: bool = with_pool!(self.db, pool => {
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
        let docs: Vec<String> = with_pool!(self.db, pool => {
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
    ///
    /// A new session starts `active`, held by `hold` (the run attempt that opened it)
    /// for its lease from the store's now (`Database::now_ms_sql`).
    pub async fn open(
        &self,
        open: &OpenSession,
        hold: &RunHold,
    ) -> Result<ExecutionSession, ExecError> {
        let session_id = new_id();
        let fresh = open.new_session(session_id.clone());
        let doc = to_json_text(&fresh);
        let now = format_time(Utc::now());
        let insert = format!(
            "INSERT INTO execution_sessions (session_id, tenant_id, room_id, run_id, task_id, \
             current_turn_id, status, revision, protected, doc, created_at, updated_at, \
             run_token, run_lease_expires_ms, resume_interaction_id) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, {} + $14, $15)",
            self.db.now_ms_sql()
        );
        let outcome: Result<ExecutionSession, ExecError> = in_tx!(self.db, tx => {
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
            sqlx::query(&insert)
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
            .bind(&hold.token)
            .bind(lease_ms(hold.lease))
            .bind(&hold.resume_interaction_id)
            .execute(&mut *tx)
            .await?;
            Ok(Ok(fresh.clone()))
        })?;
        outcome
    }

    /// Load `session_id`, apply `f`, and when it wrote, store the document with
    /// `revision + 1` (and the row's run hold and current turn) by compare-and-set. A
    /// lost race is 409 "Execution session changed concurrently".
    async fn mutate<T, F>(
        &self,
        session_id: &str,
        mut f: F,
    ) -> Result<(T, ExecutionSession), ExecError>
    where
        F: FnMut(&mut SessionRow) -> Result<Applied<T>, ExecError>,
    {
        let outcome: Result<(T, ExecutionSession), ExecError> = in_announced_tx!(self.db, self.announce, tx, changes => {
            cas_in(Tx::from(&mut *tx), &mut changes, session_id, &mut f).await
        })?;
        outcome
    }

    /// [`mutate`](Self::mutate), retrying a lost race (for internal writers, whose
    /// writes do not depend on a caller's expected revision).
    async fn mutate_retrying<T, F>(
        &self,
        session_id: &str,
        mut f: F,
    ) -> Result<(T, ExecutionSession), ExecError>
    where
        F: FnMut(&mut SessionRow) -> Result<Applied<T>, ExecError>,
    {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.mutate(session_id, &mut f).await {
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
        request: &NewIntervention,
        requester: &str,
    ) -> Result<ExecutionSession, ExecError> {
        // Scope check first: a session of another tenant or room does not exist here.
        self.get(tenant_id, room_id, session_id).await?;
        let ((), session) = self
            .mutate(session_id, |row| {
                let now = row.now();
                rules::request_intervention(
                    &mut row.session,
                    request.expected_revision,
                    &request.operation_id,
                    &request.instruction,
                    request.checkpoint.clone(),
                    requester,
                    now,
                )
            })
            .await?;
        Ok(session)
    }

    /// `POST .../authority`: the session's authority and role revisions, by
    /// compare-and-set on `expectedRevision` ([`rules::change_authority`]).
    pub async fn change_authority(
        &self,
        tenant_id: &str,
        room_id: &str,
        session_id: &str,
        change: &AuthorityChange,
    ) -> Result<ExecutionSession, ExecError> {
        self.get(tenant_id, room_id, session_id).await?;
        let ((), session) = self
            .mutate(session_id, |row| {
                rules::change_authority(
                    &mut row.session,
                    change.expected_revision,
                    change.authority_revision.clone(),
                    change.role_revision.clone(),
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
            .mutate_retrying(session_id, |row| {
                let now = row.now();
                rules::claim(&mut row.session, checkpoint.clone(), lease_ms, now)
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
            .mutate_retrying(session_id, |row| {
                let now = row.now();
                rules::resolve(
                    &mut row.session,
                    operation_id,
                    dispatch_token,
                    resolution,
                    now,
                )
            })
            .await?;
        Ok(session)
    }

    /// Re-attach a run attempt (a resume, or its retry) to the session its parked turn
    /// ran in: `active` again, held by `hold`; the claims earlier attempts of the run
    /// made and never resolved are released, so this attempt meets those interventions
    /// again at their checkpoints. The hold lasts its lease from the store's now. A
    /// session that already ended is refused (409 `SESSION_NOT_ACTIVE`): a run is never
    /// resumed outside its session.
    pub async fn attach(
        &self,
        session_id: &str,
        hold: &RunHold,
    ) -> Result<ExecutionSession, ExecError> {
        let prefix = hold.token.as_deref().map(rules::run_claim_prefix);
        let ((), session) = self
            .mutate_retrying(session_id, |row| {
                if row.session.status.is_terminal() {
                    return Err(ExecError::new(
                        GatehouseCode::SessionNotActive,
                        format!(
                            "the run's execution session {} already ended ({}); it is not resumed",
                            row.session.session_id,
                            row.session.status.as_str()
                        ),
                    ));
                }
                let now = row.now();
                row.session.status = ExecutionSessionStatus::Active;
                if let Some(prefix) = &prefix {
                    rules::release_run_claims(&mut row.session, prefix, now);
                }
                row.hold = hold.clone();
                row.hold.lease_expires_ms = row.store_now_ms.saturating_add(lease_ms(hold.lease));
                Ok(Applied::Write(()))
            })
            .await?;
        Ok(session)
    }

    /// A run attempt's claim at its own checkpoint: as [`claim`](Self::claim), with a
    /// run-claim token, and only while `run_token` still holds the session (a taken-over
    /// attempt claims nothing). Reads first: a checkpoint with nothing to claim writes
    /// nothing.
    pub async fn claim_for_run(
        &self,
        session_id: &str,
        run_token: &str,
        checkpoint: Checkpoint,
        lease: Duration,
        skip: &[String],
    ) -> Result<Option<Claim>, ExecError> {
        let Some(row) = self.read_row(session_id).await? else {
            return Ok(None);
        };
        if row.hold.token.as_deref() != Some(run_token)
            || !rules::has_claimable(&row.session, &checkpoint, row.now(), skip)
        {
            return Ok(None);
        }
        let lease_ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX);
        let prefix = rules::run_claim_prefix(run_token);
        let (claim, _) = self
            .mutate_retrying(session_id, |row| {
                if row.hold.token.as_deref() != Some(run_token) {
                    return Ok(Applied::NoWrite(None));
                }
                let now = row.now();
                rules::claim_with_prefix(
                    &mut row.session,
                    checkpoint.clone(),
                    lease_ms,
                    now,
                    Some(&prefix),
                    skip,
                )
            })
            .await?;
        Ok(claim)
    }

    /// Extend the hold of `run_token` on an active session to `lease` from the store's
    /// now (the run's heartbeat). `false` when the session is no longer held by it.
    pub async fn renew_run(
        &self,
        session_id: &str,
        run_token: &str,
        lease: Duration,
    ) -> Result<bool, ExecError> {
        let sql = format!(
            "UPDATE execution_sessions SET run_lease_expires_ms = {} + $1 \
             WHERE session_id = $2 AND run_token = $3 AND status = 'active'",
            self.db.now_ms_sql()
        );
        let renewed: bool = in_tx!(self.db, tx => {
            let n = sqlx::query(&sql)
            .bind(lease_ms(lease))
            .bind(session_id)
            .bind(run_token)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            Ok(n == 1)
        })?;
        Ok(renewed)
    }

    /// End the hold of `run_token` at once (its turn was not written): the reconciler
    /// takes the session over at its next pass instead of after the lease.
    pub async fn abandon_run(&self, session_id: &str, run_token: &str) -> Result<(), ExecError> {
        in_tx!(self.db, tx => {
            sqlx::query(
                "UPDATE execution_sessions SET run_lease_expires_ms = 0 \
                 WHERE session_id = $1 AND run_token = $2",
            )
            .bind(session_id)
            .bind(run_token)
            .execute(&mut *tx)
            .await?;
            Ok(())
        })?;
        Ok(())
    }

    async fn read_row(&self, session_id: &str) -> Result<Option<SessionRow>, ExecError> {
        let row = with_pool!(self.db, pool => {
            let row = sqlx::query(&format!(
                "SELECT {ROW_COLUMNS}, {} AS store_now_ms FROM execution_sessions WHERE session_id = $1",
                self.db.now_ms_sql()
            ))
                .bind(session_id)
                .fetch_optional(pool)
                .await?;
            row.as_ref().map(session_row).transpose()
        })?;
        Ok(row)
    }

    /// Sessions `active` whose run hold expired by the store's clock (their attempt died
    /// or stalled), at most `limit`.
    pub async fn expired_runs(&self, limit: i64) -> Result<Vec<String>, ExecError> {
        let sql = format!(
            "SELECT session_id FROM execution_sessions WHERE status = 'active' \
             AND run_lease_expires_ms < {} ORDER BY run_lease_expires_ms LIMIT $1",
            self.db.now_ms_sql()
        );
        let ids: Vec<String> = with_pool!(self.db, pool => {
            let rows = sqlx::query(&sql)
            .bind(limit)
            .fetch_all(pool)
            .await?;
            rows.iter().map(|r| r.text("session_id")).collect::<Result<Vec<_>, sqlx::Error>>()
        })?;
        Ok(ids)
    }

    /// Take over a session whose run hold expired: when a resume job will retry the
    /// attempt (still queued), the session is `paused` for it; otherwise the run is
    /// over, and the session is reconciled `failed` (every unresolved intervention
    /// rejected with the reason). Re-checked under the row lock; `None` when the
    /// session was no longer expired.
    pub async fn reconcile_expired_run(
        &self,
        session_id: &str,
    ) -> Result<Option<ExecutionSessionStatus>, ExecError> {
        let outcome: Result<Option<ExecutionSessionStatus>, ExecError> = in_announced_tx!(self.db, self.announce, tx, changes => {
            let mut tx = Tx::from(&mut *tx);
            let Some(row) = lock_row(&mut tx, session_id).await? else {
                return Ok(Ok(None));
            };
            if row.session.status != ExecutionSessionStatus::Active
                || row.hold.lease_expires_ms >= row.store_now_ms
            {
                return Ok(Ok(None));
            }
            let job = match &row.hold.resume_interaction_id {
                Some(interaction_id) => self.interactions.resume_job(&mut tx, interaction_id).await?,
                None => None,
            };
            let mut row = row;
            let now = row.now();
            let status = match job {
                Some(ResumeJobState { state, .. }) if state == "queued" => {
                    row.session.status = ExecutionSessionStatus::Paused;
                    ExecutionSessionStatus::Paused
                }
                Some(ResumeJobState { state, last_error }) if state == "failed" => {
                    let reason = format!(
                        "the resume gave up: {}",
                        last_error.as_deref().unwrap_or("its attempts failed")
                    );
                    rules::reconcile(
                        &mut row.session,
                        ExecutionSessionStatus::Failed,
                        Some(&reason),
                        Some(serde_json::json!({ "orphaned": true })),
                        now,
                    );
                    ExecutionSessionStatus::Failed
                }
                _ => {
                    rules::reconcile(
                        &mut row.session,
                        ExecutionSessionStatus::Failed,
                        Some(super::ORPHAN_REASON),
                        Some(serde_json::json!({ "orphaned": true })),
                        now,
                    );
                    ExecutionSessionStatus::Failed
                }
            };
            row.hold = RunHold::default();
            write_row(&mut tx, &mut changes, &mut row).await?;
            Ok(Ok(Some(status)))
        })?;
        outcome
    }

    /// Sessions `paused` at a gate nothing will resume any more (the gate was
    /// cancelled, resolved elsewhere, or its resume gave up), at most `limit`.
    pub async fn stranded_paused(&self, limit: i64) -> Result<Vec<String>, ExecError> {
        let sql = format!(
            "SELECT s.session_id FROM execution_sessions s WHERE s.status = 'paused' \
             AND NOT EXISTS ({}) LIMIT $1",
            self.interactions.waiting_gate_exists_sql()
        );
        let ids: Vec<String> = with_pool!(self.db, pool => {
            let rows = sqlx::query(&sql).bind(limit).fetch_all(pool).await?;
            rows.iter().map(|r| r.text("session_id")).collect::<Result<Vec<_>, sqlx::Error>>()
        })?;
        Ok(ids)
    }

    /// End a paused session whose gate nothing will resume: `canceled` when the gate was
    /// cancelled (a newer turn, cancel-stale, a cancelling transition), else `failed`,
    /// with the reason; every unresolved intervention is rejected with it. Re-checked
    /// under the row lock; `None` when the session was no longer stranded.
    pub async fn reconcile_stranded(
        &self,
        session_id: &str,
    ) -> Result<Option<ExecutionSessionStatus>, ExecError> {
        let still = format!(
            "SELECT s.session_id FROM execution_sessions s WHERE s.session_id = $1 \
             AND s.status = 'paused' AND NOT EXISTS ({})",
            self.interactions.waiting_gate_exists_sql()
        );
        let outcome: Result<Option<ExecutionSessionStatus>, ExecError> = in_announced_tx!(self.db, self.announce, tx, changes => {
            let mut tx = Tx::from(&mut *tx);
            let Some(mut row) = lock_row(&mut tx, session_id).await? else {
                return Ok(Ok(None));
            };
            let stranded = with_tx!(&mut tx, conn => {
                sqlx::query(&still).bind(session_id).fetch_optional(&mut **conn).await?.is_some()
            });
            if !stranded {
                return Ok(Ok(None));
            }
            let gate = match row.current_turn_id.as_deref() {
                Some(turn_id) => self.interactions.gate_of_turn(&mut tx, &row.session.tenant_id, turn_id).await?,
                None => None,
            };
            let (status, reason) = match gate {
                Some(GateOfTurn { interaction_id: id, status, .. }) if status == "cancelled" => (
                    ExecutionSessionStatus::Canceled,
                    format!("the gate {id} was cancelled before the run resumed (a newer turn, cancel-stale or a cancelling transition)"),
                ),
                Some(GateOfTurn { interaction_id: id, job: Some(ResumeJobState { state: job_state, last_error }), .. }) if job_state == "failed" => (
                    ExecutionSessionStatus::Failed,
                    format!(
                        "the resume of gate {id} gave up: {}",
                        last_error.as_deref().unwrap_or("its attempts failed")
                    ),
                ),
                Some(GateOfTurn { interaction_id: id, status, .. }) => (
                    ExecutionSessionStatus::Failed,
                    format!("the gate {id} is {status} and nothing will resume the run"),
                ),
                None => (
                    ExecutionSessionStatus::Failed,
                    "the parked turn's gate is gone; nothing will resume the run".to_string(),
                ),
            };
            let now = row.now();
            rules::reconcile(&mut row.session, status.clone(), Some(&reason), None, now);
            row.hold = RunHold::default();
            write_row(&mut tx, &mut changes, &mut row).await?;
            Ok(Ok(Some(status)))
        })?;
        outcome
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
            .mutate_retrying(session_id, |row| {
                let now = row.now();
                Ok(rules::reconcile(
                    &mut row.session,
                    status.clone(),
                    reason,
                    details.clone(),
                    now,
                ))
            })
            .await?;
        Ok(session)
    }
}

/// Who holds a running session: the run attempt's token, the lease it renews (epoch
/// milliseconds by the store's clock, `Database::now_ms_sql`), and the answered gate
/// whose resume runs it (for a resume).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunHold {
    /// The attempt's token (`None`: nobody holds the session).
    pub token: Option<String>,
    /// How long the hold lasts from when the store takes it ([`ExecutionStore::open`],
    /// [`ExecutionStore::attach`]). Zero on a hold read back from its row, which keeps
    /// only the expiry.
    pub lease: Duration,
    /// When the hold ends unless renewed: the store's now plus `lease` when the store
    /// took it (0 before).
    pub lease_expires_ms: i64,
    /// The gate whose resume job runs the attempt.
    pub resume_interaction_id: Option<String>,
}

impl RunHold {
    /// A fresh hold for `lease`, with a new token (its expiry is set when the store
    /// takes it, by the store's clock).
    pub fn new(lease: Duration, resume_interaction_id: Option<String>) -> Self {
        Self {
            token: Some(uuid::Uuid::new_v4().to_string()),
            lease,
            lease_expires_ms: 0,
            resume_interaction_id,
        }
    }
}

/// `lease` in milliseconds, as a statement adds it to the store's now.
fn lease_ms(lease: Duration) -> i64 {
    addable_lease_ms(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX))
}

/// A session row: the document and what the row keeps beside it.
#[derive(Debug, Clone)]
pub(crate) struct SessionRow {
    /// The document (its `revision` is the stored one).
    pub(crate) session: ExecutionSession,
    /// The stored revision the compare-and-set checks.
    stored_revision: i64,
    /// Who holds the session.
    pub(crate) hold: RunHold,
    /// The turn the session belongs to now: the running turn, or the parked one.
    pub(crate) current_turn_id: Option<String>,
    /// The store's clock when the row was read (epoch milliseconds,
    /// `Database::now_ms_sql`): what its leases are compared with and its events dated by,
    /// so that every instance judges them by the same clock.
    store_now_ms: i64,
    /// Which interventions were resolved when the row was read (webhook events announce
    /// the ones a write resolves).
    interventions_at_read: Vec<(String, bool)>,
}

impl SessionRow {
    /// [`SessionRow::store_now_ms`] as a time.
    fn now(&self) -> chrono::DateTime<Utc> {
        chrono::DateTime::from_timestamp_millis(self.store_now_ms).unwrap_or_else(Utc::now)
    }
}

const ROW_COLUMNS: &str =
    "doc, revision, run_token, run_lease_expires_ms, resume_interaction_id, current_turn_id";

fn session_row(row: &impl RowExt) -> Result<SessionRow, StoreError> {
    let stored_revision = row.int("revision")?;
    let mut session = decode(&row.text("doc")?)?;
    session.revision = u64::try_from(stored_revision).unwrap_or(0);
    let interventions_at_read = intervention_states(&session);
    Ok(SessionRow {
        session,
        stored_revision,
        hold: RunHold {
            token: row.opt_text("run_token")?,
            lease: Duration::ZERO,
            lease_expires_ms: row.int("run_lease_expires_ms")?,
            resume_interaction_id: row.opt_text("resume_interaction_id")?,
        },
        current_turn_id: row.opt_text("current_turn_id")?,
        store_now_ms: row.int("store_now_ms")?,
        interventions_at_read,
    })
}

/// Read a session row inside a transaction, locking it until the transaction ends.
async fn lock_row(tx: &mut Tx<'_>, session_id: &str) -> Result<Option<SessionRow>, StoreError> {
    let sql = format!(
        "SELECT {ROW_COLUMNS}, {} AS store_now_ms FROM execution_sessions \
         WHERE session_id = $1{}",
        tx.now_ms_sql(),
        tx.lock_clause()
    );
    with_tx!(tx, conn => {
        let row = sqlx::query(&sql).bind(session_id).fetch_optional(&mut **conn).await?;
        row.as_ref().map(session_row).transpose()
    })
}

/// Store `row` with `revision + 1` by compare-and-set on the revision it was read at.
/// `Err(Fenced)` when another writer moved the revision (never under [`lock_row`]).
async fn write_row(
    tx: &mut Tx<'_>,
    changes: &mut Changes,
    row: &mut SessionRow,
) -> Result<(), StoreError> {
    row.session.revision = u64::try_from(row.stored_revision).unwrap_or(0) + 1;
    let now = format_time(row.now());
    row.session.updated_at = Some(now.clone());
    let doc = to_json_text(&row.session);
    let revision = i64::try_from(row.session.revision).unwrap_or(i64::MAX);
    let updated = with_tx!(tx, conn => {
        sqlx::query(
            "UPDATE execution_sessions SET doc = $1, revision = $2, status = $3, \
             current_turn_id = $4, run_token = $5, run_lease_expires_ms = $6, \
             resume_interaction_id = $7, updated_at = $8 WHERE session_id = $9 AND revision = $10",
        )
        .bind(&doc)
        .bind(revision)
        .bind(row.session.status.as_str())
        .bind(&row.current_turn_id)
        .bind(&row.hold.token)
        .bind(row.hold.lease_expires_ms)
        .bind(&row.hold.resume_interaction_id)
        .bind(&now)
        .bind(&row.session.session_id)
        .bind(row.stored_revision)
        .execute(&mut **conn)
        .await?
        .rows_affected()
    });
    if updated != 1 {
        return Err(StoreError::Fenced(
            "the execution session changed concurrently".to_string(),
        ));
    }
    row.stored_revision = revision;
    // The interventions this write resolved are among its changes.
    interventions_resolved(changes, &row.interventions_at_read, &row.session);
    row.interventions_at_read = intervention_states(&row.session);
    Ok(())
}

/// The core of every session write: load, apply `f`, compare-and-set. Inside the
/// caller's transaction.
async fn cas_in<T, F>(
    mut tx: Tx<'_>,
    changes: &mut Changes,
    session_id: &str,
    f: &mut F,
) -> Result<Result<(T, ExecutionSession), ExecError>, StoreError>
where
    F: FnMut(&mut SessionRow) -> Result<Applied<T>, ExecError>,
{
    let Some(mut row) = lock_row(&mut tx, session_id).await? else {
        return Ok(Err(ExecError::not_found()));
    };
    let value = match f(&mut row) {
        Err(err) => return Ok(Err(err)),
        Ok(Applied::NoWrite(value)) => return Ok(Ok((value, row.session))),
        Ok(Applied::Write(value)) => value,
    };
    match write_row(&mut tx, changes, &mut row).await {
        Ok(()) => Ok(Ok((value, row.session))),
        Err(StoreError::Fenced(_)) => Ok(Err(ExecError::changed_concurrently())),
        Err(other) => Err(other),
    }
}

/// How a turn leaves its session, written with the turn.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEnd {
    /// The turn parked at a gate: the session pauses, waiting on that turn.
    Pause {
        /// The parked turn (the gate's `turn_id`).
        parked_turn_id: String,
    },
    /// The run ended: terminal reconciliation.
    Reconcile {
        /// `completed`, `failed` or `canceled`.
        status: ExecutionSessionStatus,
        /// Why, for an unsuccessful end.
        reason: Option<String>,
        /// Extra details for the `session_reconciled` event.
        details: Option<Value>,
    },
}

/// A turn's share of its commit ([`JoinedWrite`]): the checkpoints it reached, the
/// interventions it applied (each resolved with its claim's token), and how the session
/// ends or pauses. Fenced by the run token: if the session is no longer this attempt's,
/// nothing of the turn is written.
#[derive(Debug, Clone)]
pub struct TurnSessionWrite {
    /// The session.
    pub session_id: String,
    /// The attempt's run token.
    pub run_token: String,
    /// Checkpoints reached, in order.
    pub progress: Vec<Checkpoint>,
    /// `(operation id, dispatch token, evidence)` of each intervention applied.
    pub applied: Vec<(String, String, Value)>,
    /// How the session ends or pauses.
    pub end: SessionEnd,
}

impl TurnSessionWrite {
    async fn write_in(&self, tx: Tx<'_>) -> Result<Changes, StoreError> {
        let mut tx = tx;
        let Some(mut row) = lock_row(&mut tx, &self.session_id).await? else {
            return Err(StoreError::Fenced(
                "the execution session is gone".to_string(),
            ));
        };
        if row.hold.token.as_deref() != Some(self.run_token.as_str())
            || row.session.status.is_terminal()
        {
            return Err(StoreError::Fenced(format!(
                "execution session {} is no longer held by this run attempt (it is {})",
                self.session_id,
                row.session.status.as_str()
            )));
        }
        let now = row.now();
        for checkpoint in &self.progress {
            rules::record_progress(&mut row.session, checkpoint.clone());
        }
        for (operation_id, token, details) in &self.applied {
            let resolution = Resolution::Applied {
                details: details.clone(),
            };
            if let Err(err) =
                rules::resolve(&mut row.session, operation_id, token, &resolution, now)
            {
                return Err(StoreError::Fenced(format!(
                    "intervention {operation_id}: {}",
                    err.message
                )));
            }
        }
        match &self.end {
            SessionEnd::Pause { parked_turn_id } => {
                row.session.status = ExecutionSessionStatus::Paused;
                row.current_turn_id = Some(parked_turn_id.clone());
            }
            SessionEnd::Reconcile {
                status,
                reason,
                details,
            } => {
                rules::reconcile(
                    &mut row.session,
                    status.clone(),
                    reason.as_deref(),
                    details.clone(),
                    now,
                );
            }
        }
        row.hold = RunHold::default();
        let mut changes = Changes::default();
        write_row(&mut tx, &mut changes, &mut row).await?;
        Ok(changes)
    }
}

impl JoinedWrite for TurnSessionWrite {
    fn write<'a>(
        &'a self,
        tx: Tx<'a>,
    ) -> futures::future::BoxFuture<'a, Result<Changes, StoreError>> {
        Box::pin(self.write_in(tx))
    }
}

/// The `intervention.resolved` changes of an execution session write: every
/// intervention `after` holds applied or rejected that `before` (the document as read)
/// did not.
fn interventions_resolved(
    changes: &mut Changes,
    before: &[(String, bool)],
    after: &ExecutionSession,
) {
    for intervention in &after.interventions {
        if !intervention.status.is_final() {
            continue;
        }
        let was_final = before
            .iter()
            .any(|(op, done)| *op == intervention.operation_id && *done);
        if was_final {
            continue;
        }
        changes.push(Change::InterventionResolved(InterventionChange {
            project_id: after.tenant_id.clone(),
            room_id: after.room_id.clone(),
            execution_session_id: after.session_id.clone(),
            run_id: after.run_id.clone(),
            operation_id: intervention.operation_id.clone(),
            status: intervention.status.as_str().to_string(),
        }));
    }
}

/// `(operation id, applied or rejected)` of each intervention of `session`: what
/// [`interventions_resolved`] compares a write with.
fn intervention_states(session: &ExecutionSession) -> Vec<(String, bool)> {
    session
        .interventions
        .iter()
        .map(|i| (i.operation_id.clone(), i.status.is_final()))
        .collect()
}

/// What the execution area offers the interactions area over `execution_sessions`
/// ([`ExecutionQueries`]). Stateless.
#[derive(Debug, Clone, Copy, Default)]
pub struct OfferedToInteractions;

impl ExecutionQueries for OfferedToInteractions {
    fn run_held_sql(&self, session: usize, token: usize) -> String {
        format!(
            "EXISTS (SELECT 1 FROM execution_sessions WHERE session_id = ${session} \
             AND run_token = ${token} AND status = 'active')"
        )
    }
}
