//! Agenta's durable Stop over this area's tables: the turns running now (`session_runs`),
//! the Stop commands (`session_commands`, kind `cancel`) and the settlement of a source
//! execution an answer and a Stop race on (`session_executions`, see `commands.rs`).
//!
//! - A turn's row is written when it starts ([`InteractionStore::start_run`], with
//!   `execution.started`), renewed by its heartbeat, and deleted in the transaction that
//!   records how it ended ([`finish_run`]).
//! - A Stop ([`InteractionStore::admit_stop`]) is decided and written in ONE transaction,
//!   in Agenta's order: the key's replay; the target resolved once (the running turn, or,
//!   for a Stop naming it, the session's parked turn) and pinned; the late-Stop guards (a
//!   named Stop must name the target; an unnamed one never reaches a turn that started
//!   after it arrived); the target settled `stopping` by the compare-and-set an answer
//!   races on (exactly one wins); its pending gates cancelled; the command recorded.
//! - The command is `applied` with outcome `stopped` only with the evidence: the running
//!   turn's harness halted at a step boundary (or parked) and its record is written in the
//!   same transaction ([`finish_run`]), or the turn was parked and nothing runs it
//!   ([`InteractionStore::apply_parked_stop`]). A turn that ended on its own first settles
//!   the command `obsolete` / `not_running`; a turn whose instance died settles it
//!   `obsolete` / `lost` ([`InteractionStore::settle_orphaned_stops`]).

use gatehouse_wire::sessions::DurableEventType;
use gatehouse_wire::JsonObject;
use serde_json::{json, Value};

use super::commands::{command_by_key, command_from_row, settle, settlement, COMMAND_COLUMNS};
use super::rows::{interaction_from_row, InteractionRecord, SELECT_COLUMNS};
use super::{CommandRecord, InteractionStore};
use crate::announce::{in_announced_tx, Change, Changes, SessionEvent};
use crate::db::{addable_lease_ms, new_id, now_text, with_pool, with_tx, RowExt, StoreError, Tx};

/// A Stop command (`kind = cancel`).
pub const KIND_CANCEL: &str = "cancel";

/// A running turn's state: running.
pub const RUN_RUNNING: &str = "running";

/// A running turn's state: a Stop targeted it; its harness halts at its next step.
pub const RUN_STOPPING: &str = "stopping";

/// The `reason` of `execution.stopped` for a Stop (Agenta's word).
const USER_STOP: &str = "user_stop";

/// A Stop to admit.
#[derive(Debug, Clone)]
pub struct StopRequest {
    /// The project.
    pub project_id: String,
    /// The agent session.
    pub session_id: String,
    /// The execution the caller saw (`expected_execution_id`).
    pub expected_execution_id: Option<String>,
    /// The `Idempotency-Key`, if any (stripped, non-blank).
    pub key: Option<String>,
    /// When the request arrived, in the store's epoch milliseconds (stamped before any
    /// read: a turn that started after it is not the one the caller meant).
    pub received_ms: i64,
}

/// What a Stop came to.
#[derive(Debug, Clone)]
pub enum StopOutcome {
    /// Recorded against `execution_id` (running, or parked and named): 202. `parked`:
    /// nothing runs it, so it is applied after the commit.
    Accepted {
        /// The command (the open one of the target when two Stops collapse).
        command: CommandRecord,
        /// The target.
        execution_id: String,
        /// The target is parked (not running).
        parked: bool,
    },
    /// Nothing of the caller's to stop (`not_running`, `superseded_by_newer_turn`): the
    /// command is recorded already settled, 200.
    NothingToStop {
        /// The settled command.
        command: CommandRecord,
    },
    /// The key repeated an earlier Stop with the same expectation: its command as it is
    /// now, 202 when it had a target, else 200.
    Replayed {
        /// The stored command.
        command: CommandRecord,
    },
    /// The key was used with another expectation: 409.
    KeyReused,
    /// `expected_execution_id` is not the target, or the target already ended: 409
    /// `{message, current_execution_id}`.
    NotTheRunningExecution {
        /// What the caller named.
        expected: String,
        /// The execution running now, if any.
        current: Option<String>,
    },
}

/// A session's execution, as the snapshot shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRunState {
    /// The running turn, else the parked one the session waits on.
    pub execution_id: Option<String>,
    /// `running`, `stopping`, or `idle` (nothing runs; a parked turn is idle).
    pub state: &'static str,
}

/// Why a concurrent writer made a Stop decide again (the target settled, the key taken).
const STOP_RACED: &str = "a concurrent Stop or answer settled the execution first";

fn run_event(
    turn_project: &str,
    session: &str,
    execution: &str,
    event_type: DurableEventType,
    payload: Value,
) -> Change {
    let payload = match payload {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    Change::SessionEvent(SessionEvent {
        project_id: turn_project.to_string(),
        session_id: session.to_string(),
        execution_id: execution.to_string(),
        entity_id: execution.to_string(),
        event_type,
        payload,
    })
}

/// Cancel the pending gates of turn `execution_id` (a Stop reached it): the rows.
async fn cancel_turn_gates(
    tx: &mut Tx<'_>,
    project_id: &str,
    execution_id: &str,
    now: &str,
) -> Result<Vec<InteractionRecord>, StoreError> {
    let sql = format!(
        "UPDATE interactions SET status = 'cancelled', updated_at = $1, updated_by_id = $2 \
         WHERE project_id = $3 AND turn_id = $4 AND status = 'pending' RETURNING {SELECT_COLUMNS}"
    );
    with_tx!(tx, conn => {
        let rows = sqlx::query(&sql)
            .bind(now)
            .bind("stop")
            .bind(project_id)
            .bind(execution_id)
            .fetch_all(&mut **conn)
            .await?;
        rows.iter().map(interaction_from_row).collect()
    })
}

/// Settle Stop `command_id`: `state` with `outcome`, once (only while it is open).
async fn settle_command(
    tx: &mut Tx<'_>,
    command_id: &str,
    state: &str,
    outcome: &str,
    now: &str,
) -> Result<bool, StoreError> {
    let sql = "UPDATE session_commands SET state = $1, outcome = $2, updated_at = $3, \
               settled_at = $3 WHERE id = $4 AND state IN ('pending', 'claimed')";
    with_tx!(tx, conn => {
        let n = sqlx::query(sql)
            .bind(state)
            .bind(outcome)
            .bind(now)
            .bind(command_id)
            .execute(&mut **conn)
            .await?
            .rows_affected();
        Ok(n == 1)
    })
}

/// Record how a Stop's target ended on its settlement row (`stopped`, `terminal`).
async fn settle_execution(
    tx: &mut Tx<'_>,
    project_id: &str,
    execution_id: &str,
    state: &str,
    now: &str,
) -> Result<(), StoreError> {
    let sql = "UPDATE session_executions SET state = $1, updated_at = $2 WHERE project_id = $3 \
               AND execution_id = $4 AND state = 'stopping'";
    with_tx!(tx, conn => {
        sqlx::query(sql)
            .bind(state)
            .bind(now)
            .bind(project_id)
            .bind(execution_id)
            .execute(&mut **conn)
            .await?;
        Ok(())
    })
}

/// The Stop reached `execution_id`, which stopped (halted at a step, or parked): its
/// pending gates cancelled, the command applied (`stopped`), the settlement `stopped`,
/// `execution.stopped` told.
async fn record_stopped(
    tx: &mut Tx<'_>,
    project_id: &str,
    session_id: &str,
    execution_id: &str,
    command_id: &str,
    changes: &mut Changes,
    now: &str,
) -> Result<(), StoreError> {
    // Once: a concurrent applier (the route, another instance's sweep) that settled it
    // first told it already.
    if !settle_command(tx, command_id, "applied", "stopped", now).await? {
        return Ok(());
    }
    for row in cancel_turn_gates(tx, project_id, execution_id, now).await? {
        changes.push(row.change());
    }
    settle_execution(tx, project_id, execution_id, "stopped", now).await?;
    changes.push(run_event(
        project_id,
        session_id,
        execution_id,
        DurableEventType::ExecutionStopped,
        json!({"stopped_at": now, "reason": USER_STOP, "command_id": command_id}),
    ));
    Ok(())
}

/// How a recorded turn ended, for [`finish_run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// Ran to its end.
    Completed,
    /// Parked at its gates.
    Parked,
    /// Failed (the reason).
    Failed(String),
    /// Its harness honoured Stop `command` at a step boundary.
    Stopped(String),
}

/// A recorded turn, as [`finish_run`] reads it.
#[derive(Debug, Clone)]
pub struct RunRecorded<'a> {
    /// The project.
    pub project_id: &'a str,
    /// The agent session.
    pub session_id: &'a str,
    /// The turn (its execution id).
    pub execution_id: &'a str,
    /// How it ended.
    pub end: RunEnd,
    /// Its output text.
    pub output: &'a str,
}

impl RunEnd {
    /// How a turn recorded with `status` ended (`stopped_by`: the Stop its harness
    /// honoured; `output`: a failure's reason is its last line).
    pub fn of(status: &str, stopped_by: Option<&str>, output: &str) -> Self {
        if let Some(command) = stopped_by {
            return Self::Stopped(command.to_string());
        }
        match status {
            "parked" => Self::Parked,
            "completed" => Self::Completed,
            _ => Self::Failed(last_line(output)),
        }
    }
}

/// Inside the transaction that records a turn: its run is over. The row goes; a Stop that
/// targeted it is settled by how it ended (stopped when the harness halted or the turn
/// parked, with the turn's new gates cancelled: so call it after writing them;
/// `not_running` when it ended on its own first); the session's log is told
/// (`execution.stopped`, `execution.failed`, or the turn's `message.completed`).
pub(crate) async fn finish_run(
    tx: &mut Tx<'_>,
    turn: &RunRecorded<'_>,
    changes: &mut Changes,
    now: &str,
) -> Result<(), StoreError> {
    let (project_id, session_id, execution_id) =
        (turn.project_id, turn.session_id, turn.execution_id);
    let lock = tx.lock_clause();
    let select = format!(
        "SELECT state, command_id FROM session_runs WHERE project_id = $1 AND execution_id = $2{lock}"
    );
    let row = with_tx!(tx, conn => {
        let row = sqlx::query(&select).bind(project_id).bind(execution_id).fetch_optional(&mut **conn).await?;
        match row {
            Some(row) => Ok::<_, StoreError>(Some((row.text("state")?, row.opt_text("command_id")?))),
            None => Ok(None),
        }
    })?;
    with_tx!(tx, conn => {
        sqlx::query("DELETE FROM session_runs WHERE project_id = $1 AND execution_id = $2")
            .bind(project_id)
            .bind(execution_id)
            .execute(&mut **conn)
            .await?;
        Ok::<_, StoreError>(())
    })?;
    let end = &turn.end;
    let stop = match (end, row) {
        (RunEnd::Stopped(command), _) => Some(command.clone()),
        (_, Some((state, command))) if state == RUN_STOPPING => command,
        _ => None,
    };
    match (stop, end) {
        (Some(command), RunEnd::Stopped(_) | RunEnd::Parked) => {
            record_stopped(
                tx,
                project_id,
                session_id,
                execution_id,
                &command,
                changes,
                now,
            )
            .await
        }
        (Some(command), _) => {
            // The turn ended on its own before the Stop reached a step boundary: it was
            // not stopped, and nothing of it is left to stop.
            settle_command(tx, &command, "obsolete", "not_running", now).await?;
            settle_execution(tx, project_id, execution_id, "terminal", now).await?;
            changes.push(ended_event(turn, now));
            Ok(())
        }
        (None, _) => {
            changes.push(ended_event(turn, now));
            Ok(())
        }
    }
}

/// The session-log event of a turn that ended without a Stop.
fn ended_event(turn: &RunRecorded<'_>, now: &str) -> Change {
    let (event_type, payload) = match &turn.end {
        RunEnd::Failed(reason) => (
            DurableEventType::ExecutionFailed,
            json!({"failed_at": now, "error": {"code": "turn_failed", "message": reason, "retryable": false}}),
        ),
        end => (
            DurableEventType::MessageCompleted,
            json!({
                "message_id": turn.execution_id,
                "role": "assistant",
                "content": turn.output,
                "finish_reason": if *end == RunEnd::Parked { "awaiting_approval" } else { "end_turn" },
            }),
        ),
    };
    run_event(
        turn.project_id,
        turn.session_id,
        turn.execution_id,
        event_type,
        payload,
    )
}

fn last_line(text: &str) -> String {
    text.lines().last().unwrap_or_default().to_string()
}

/// The running row of `session` whose lease holds (the latest started), if any:
/// `(execution_id, state, started_ms)`.
async fn live_run(
    tx: &mut Tx<'_>,
    project_id: &str,
    session_id: &str,
) -> Result<Option<(String, String, i64)>, StoreError> {
    let now_ms = tx.now_ms_sql();
    let lock = tx.lock_clause();
    let sql = format!(
        "SELECT execution_id, state, started_ms FROM session_runs WHERE project_id = $1 \
         AND session_id = $2 AND lease_until_ms > {now_ms} ORDER BY started_ms DESC LIMIT 1{lock}"
    );
    with_tx!(tx, conn => {
        let row = sqlx::query(&sql).bind(project_id).bind(session_id).fetch_optional(&mut **conn).await?;
        match row {
            Some(row) => Ok(Some((row.text("execution_id")?, row.text("state")?, row.int("started_ms")?))),
            None => Ok(None),
        }
    })
}

/// The session's latest turn when it is parked (Agenta's `alive` owner): its id.
async fn parked_turn(
    tx: &mut Tx<'_>,
    project_id: &str,
    session_id: &str,
) -> Result<Option<String>, StoreError> {
    let sql = "SELECT id, status FROM turns WHERE project_id = $1 AND session_id = $2 \
               ORDER BY created_at DESC, id DESC LIMIT 1";
    with_tx!(tx, conn => {
        let row = sqlx::query(sql).bind(project_id).bind(session_id).fetch_optional(&mut **conn).await?;
        match row {
            Some(row) if row.text("status")? == "parked" => Ok(Some(row.text("id")?)),
            _ => Ok(None),
        }
    })
}

/// A Stop command's stored expectation (what its key is bound to).
fn stop_binding(expected: Option<&str>) -> String {
    format!("expected:{}", expected.unwrap_or(""))
}

impl InteractionStore {
    /// A turn attempt started: its run row (`running`, leased for `lease_ms`) and, for a
    /// new turn, `execution.started`. An attempt retried under the same turn id takes the
    /// row over and keeps its state (a Stop that targeted the turn still holds).
    pub async fn start_run(
        &self,
        project_id: &str,
        session_id: &str,
        execution_id: &str,
        attempt_id: &str,
        lease_ms: i64,
    ) -> Result<(), StoreError> {
        let now = now_text();
        let now_ms = self.db.now_ms_sql();
        let lease_ms = addable_lease_ms(lease_ms);
        let update = format!(
            "UPDATE session_runs SET attempt_id = $1, lease_until_ms = {now_ms} + $2 \
             WHERE project_id = $3 AND execution_id = $4"
        );
        let insert = format!(
            "INSERT INTO session_runs (project_id, execution_id, session_id, state, attempt_id, \
             started_ms, lease_until_ms, created_at) VALUES ($1, $2, $3, 'running', $4, {now_ms}, \
             {now_ms} + $5, $6)"
        );
        in_announced_tx!(self.db, self.announce, tx, changes => {
            let taken_over = sqlx::query(&update)
                .bind(attempt_id)
                .bind(lease_ms)
                .bind(project_id)
                .bind(execution_id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if taken_over == 0 {
                sqlx::query(&insert)
                    .bind(project_id)
                    .bind(execution_id)
                    .bind(session_id)
                    .bind(attempt_id)
                    .bind(lease_ms)
                    .bind(&now)
                    .execute(&mut *tx)
                    .await?;
                changes.push(run_event(
                    project_id,
                    session_id,
                    execution_id,
                    DurableEventType::ExecutionStarted,
                    json!({"started_at": now}),
                ));
            }
            Ok(())
        })
    }

    /// Renew attempt `attempt_id`'s lease on its run row: false when the row is gone or
    /// another attempt's.
    pub async fn renew_run_row(
        &self,
        project_id: &str,
        execution_id: &str,
        attempt_id: &str,
        lease_ms: i64,
    ) -> Result<bool, StoreError> {
        let sql = format!(
            "UPDATE session_runs SET lease_until_ms = {} + $1 WHERE project_id = $2 \
             AND execution_id = $3 AND attempt_id = $4",
            self.db.now_ms_sql()
        );
        with_pool!(self.db, pool => {
            let n = sqlx::query(&sql)
                .bind(addable_lease_ms(lease_ms))
                .bind(project_id)
                .bind(execution_id)
                .bind(attempt_id)
                .execute(pool)
                .await?
                .rows_affected();
            Ok(n == 1)
        })
    }

    /// The Stop command a running turn must honour at its next step boundary, if one
    /// targeted it.
    pub async fn stop_requested(
        &self,
        project_id: &str,
        execution_id: &str,
    ) -> Result<Option<String>, StoreError> {
        let sql = "SELECT state, command_id FROM session_runs WHERE project_id = $1 \
                   AND execution_id = $2";
        with_pool!(self.db, pool => {
            let row = sqlx::query(sql).bind(project_id).bind(execution_id).fetch_optional(pool).await?;
            match row {
                Some(row) if row.text("state")? == RUN_STOPPING => Ok(row.opt_text("command_id")?),
                _ => Ok(None),
            }
        })
    }

    /// An attempt whose turn was not recorded is over: its row goes when it is still this
    /// attempt's and `running` (a row a Stop targeted stays, for
    /// [`settle_orphaned_stops`](Self::settle_orphaned_stops) to settle).
    pub async fn forget_run(
        &self,
        project_id: &str,
        execution_id: &str,
        attempt_id: &str,
    ) -> Result<(), StoreError> {
        let sql = "DELETE FROM session_runs WHERE project_id = $1 AND execution_id = $2 \
                   AND attempt_id = $3 AND state = 'running'";
        with_pool!(self.db, pool => {
            sqlx::query(sql).bind(project_id).bind(execution_id).bind(attempt_id).execute(pool).await?;
            Ok(())
        })
    }

    /// Admit a Stop (see the module docs), deciding again when a concurrent writer
    /// settled the target or took the key first.
    pub async fn admit_stop(&self, request: &StopRequest) -> Result<StopOutcome, StoreError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.admit_stop_once(request).await {
                Err(StoreError::Fenced(why)) if why == STOP_RACED && attempt < 8 => continue,
                Err(err) if err.is_concurrent_conflict() && attempt < 8 => continue,
                other => return other,
            }
        }
    }

    async fn admit_stop_once(&self, request: &StopRequest) -> Result<StopOutcome, StoreError> {
        let now = now_text();
        let project_id = request.project_id.as_str();
        let session_id = request.session_id.as_str();
        let expected = request.expected_execution_id.as_deref();
        let binding = stop_binding(expected);
        in_announced_tx!(self.db, self.announce, tx, changes => {
            if let Some(key) = &request.key {
                if let Some((command, bound)) =
                    command_by_key(&mut Tx::from(&mut *tx), project_id, session_id, KIND_CANCEL, key).await?
                {
                    return Ok(if bound.as_deref() == Some(binding.as_str()) {
                        StopOutcome::Replayed { command }
                    } else {
                        StopOutcome::KeyReused
                    });
                }
            }
            // The target, resolved once: the running turn; for a named Stop, else the
            // parked turn the caller is looking at.
            let running = live_run(&mut Tx::from(&mut *tx), project_id, session_id).await?;
            let (target, parked) = match &running {
                Some((id, _, _)) => (Some(id.clone()), false),
                None if expected.is_some() => {
                    (parked_turn(&mut Tx::from(&mut *tx), project_id, session_id).await?, true)
                }
                None => (None, false),
            };
            if let Some(expected) = expected {
                if target.as_deref() != Some(expected) {
                    return Ok(StopOutcome::NotTheRunningExecution {
                        expected: expected.to_string(),
                        current: target,
                    });
                }
            }
            let command_id = new_id();
            let late = match (&running, expected) {
                (Some((_, _, started_ms)), None) => *started_ms > request.received_ms,
                _ => false,
            };
            let Some(target) = target.filter(|_| !late) else {
                let outcome = if late { "superseded_by_newer_turn" } else { "not_running" };
                let command = self
                    .insert_cancel(&mut Tx::from(&mut *tx), request, &command_id, "obsolete", Some(outcome), None, &binding, &now)
                    .await?;
                return Ok(StopOutcome::NothingToStop { command });
            };
            // The compare-and-set an answer on the same turn races on.
            let won = settle(
                &mut Tx::from(&mut *tx),
                project_id,
                session_id,
                &target,
                RUN_STOPPING,
                &command_id,
                &now,
            )
            .await?;
            if !won {
                let settled = settlement(&mut Tx::from(&mut *tx), project_id, &target).await?;
                let open = match settled.as_deref() {
                    Some(RUN_STOPPING) => self.open_stop_of(&mut Tx::from(&mut *tx), project_id, &target).await?,
                    Some(_) => None,
                    // Settled and gone between the two reads: decide again.
                    None => return Err(StoreError::Fenced(STOP_RACED.to_string())),
                };
                return Ok(match open {
                    // Two Stops of one turn collapse onto its open command.
                    Some(command) => StopOutcome::Accepted { command, execution_id: target, parked },
                    None => StopOutcome::NotTheRunningExecution {
                        expected: expected.unwrap_or(&target).to_string(),
                        current: None,
                    },
                });
            }
            let command = self
                .insert_cancel(&mut Tx::from(&mut *tx), request, &command_id, "pending", None, Some(&target), &binding, &now)
                .await?;
            if !parked {
                sqlx::query(
                    "UPDATE session_runs SET state = 'stopping', command_id = $1 \
                     WHERE project_id = $2 AND execution_id = $3",
                )
                .bind(&command_id)
                .bind(project_id)
                .bind(&target)
                .execute(&mut *tx)
                .await?;
            }
            for row in cancel_turn_gates(&mut Tx::from(&mut *tx), project_id, &target, &now).await? {
                changes.push(row.change());
            }
            Ok(StopOutcome::Accepted { command, execution_id: target, parked })
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn insert_cancel(
        &self,
        tx: &mut Tx<'_>,
        request: &StopRequest,
        command_id: &str,
        state: &str,
        outcome: Option<&str>,
        target: Option<&str>,
        binding: &str,
        now: &str,
    ) -> Result<CommandRecord, StoreError> {
        let settled_at = outcome.map(|_| now);
        let sql =
            "INSERT INTO session_commands (id, project_id, session_id, kind, state, outcome, \
                   target_execution_id, idem_key, request_hash, created_at, settled_at) \
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";
        with_tx!(tx, conn => {
            sqlx::query(sql)
                .bind(command_id)
                .bind(&request.project_id)
                .bind(&request.session_id)
                .bind(KIND_CANCEL)
                .bind(state)
                .bind(outcome)
                .bind(target)
                .bind(&request.key)
                .bind(binding)
                .bind(now)
                .bind(settled_at)
                .execute(&mut **conn)
                .await?;
            Ok::<_, StoreError>(())
        })?;
        Ok(CommandRecord {
            id: command_id.to_string(),
            project_id: request.project_id.clone(),
            session_id: request.session_id.clone(),
            kind: KIND_CANCEL.to_string(),
            state: state.to_string(),
            outcome: outcome.map(str::to_string),
            target_execution_id: target.map(str::to_string),
            interaction_id: None,
            interaction_ids: Vec::new(),
            continuation_execution_id: None,
        })
    }

    /// The open Stop of `execution_id` (the command its settlement names), if any.
    async fn open_stop_of(
        &self,
        tx: &mut Tx<'_>,
        project_id: &str,
        execution_id: &str,
    ) -> Result<Option<CommandRecord>, StoreError> {
        let sql = format!(
            "SELECT {COMMAND_COLUMNS} FROM session_commands WHERE project_id = $1 \
             AND target_execution_id = $2 AND kind = 'cancel' AND state IN ('pending', 'claimed') \
             ORDER BY created_at LIMIT 1"
        );
        with_tx!(tx, conn => {
            let row = sqlx::query(&sql).bind(project_id).bind(execution_id).fetch_optional(&mut **conn).await?;
            row.as_ref().map(command_from_row).transpose()
        })
    }

    /// Apply Stop `command_id` to its parked target (nothing runs it, so nothing else
    /// will): its gates cancelled, the command `applied` / `stopped`. False when the
    /// command is settled already, or its target runs (its harness applies it).
    pub async fn apply_parked_stop(
        &self,
        project_id: &str,
        command_id: &str,
    ) -> Result<bool, StoreError> {
        let now = now_text();
        in_announced_tx!(self.db, self.announce, tx, changes => {
            let select = format!(
                "SELECT {COMMAND_COLUMNS} FROM session_commands WHERE project_id = $1 AND id = $2 \
                 AND kind = 'cancel' AND state = 'pending'{}",
                Tx::from(&mut *tx).lock_clause()
            );
            let Some(row) = sqlx::query(&select).bind(project_id).bind(command_id).fetch_optional(&mut *tx).await? else {
                return Ok(false);
            };
            let command = command_from_row(&row)?;
            let Some(target) = command.target_execution_id.clone() else { return Ok(false) };
            let running = sqlx::query(
                "SELECT 1 AS one FROM session_runs WHERE project_id = $1 AND execution_id = $2",
            )
            .bind(project_id)
            .bind(&target)
            .fetch_optional(&mut *tx)
            .await?;
            if running.is_some() {
                return Ok(false);
            }
            record_stopped(&mut Tx::from(&mut *tx), project_id, &command.session_id, &target, command_id, &mut changes, &now).await?;
            Ok(true)
        })
    }

    /// Settle the open Stops nothing will apply (after a crash, or a turn whose instance
    /// died): a parked target is stopped; a target whose turn was recorded otherwise ended
    /// on its own (`not_running`); a target with no live run and no record was lost
    /// (`lost`, `execution.lost`). How many were settled.
    pub async fn settle_orphaned_stops(&self) -> Result<u64, StoreError> {
        let now_ms = self.db.now_ms_sql();
        let sql = format!(
            "SELECT c.project_id, c.id, c.session_id, c.target_execution_id, t.status AS turn_status \
             FROM session_commands c LEFT JOIN turns t ON t.id = c.target_execution_id \
             AND t.project_id = c.project_id \
             WHERE c.kind = 'cancel' AND c.state IN ('pending', 'claimed') \
             AND c.target_execution_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM session_runs r \
             WHERE r.project_id = c.project_id AND r.execution_id = c.target_execution_id \
             AND r.lease_until_ms > {now_ms}) ORDER BY c.created_at LIMIT 100"
        );
        let orphans: Vec<(String, String, String, String, Option<String>)> = with_pool!(self.db, pool => {
            let rows = sqlx::query(&sql).fetch_all(pool).await?;
            rows.iter()
                .map(|row| {
                    Ok((
                        row.text("project_id")?,
                        row.text("id")?,
                        row.text("session_id")?,
                        row.text("target_execution_id")?,
                        row.opt_text("turn_status")?,
                    ))
                })
                .collect::<Result<Vec<_>, StoreError>>()
        })?;
        let mut settled = 0;
        for (project_id, command_id, session_id, target, turn_status) in orphans {
            let done = match turn_status.as_deref() {
                Some("parked") => self.apply_parked_stop(&project_id, &command_id).await?,
                Some(_) => {
                    self.settle_stop(
                        &project_id,
                        &session_id,
                        &target,
                        &command_id,
                        "not_running",
                    )
                    .await?
                }
                None => {
                    self.settle_stop(&project_id, &session_id, &target, &command_id, "lost")
                        .await?
                }
            };
            settled += u64::from(done);
        }
        Ok(settled)
    }

    /// Settle an open Stop `obsolete` with `outcome` (its target is gone): the run row of a
    /// dead instance goes; `lost` tells `execution.lost`.
    async fn settle_stop(
        &self,
        project_id: &str,
        session_id: &str,
        target: &str,
        command_id: &str,
        outcome: &str,
    ) -> Result<bool, StoreError> {
        let now = now_text();
        let stale = format!(
            "DELETE FROM session_runs WHERE project_id = $1 AND execution_id = $2 \
             AND lease_until_ms <= {}",
            self.db.now_ms_sql()
        );
        in_announced_tx!(self.db, self.announce, tx, changes => {
            sqlx::query(&stale).bind(project_id).bind(target).execute(&mut *tx).await?;
            let live = sqlx::query("SELECT 1 AS one FROM session_runs WHERE project_id = $1 AND execution_id = $2")
                .bind(project_id)
                .bind(target)
                .fetch_optional(&mut *tx)
                .await?;
            if live.is_some() {
                return Ok(false);
            }
            if !settle_command(&mut Tx::from(&mut *tx), command_id, "obsolete", outcome, &now).await? {
                return Ok(false);
            }
            settle_execution(&mut Tx::from(&mut *tx), project_id, target, "terminal", &now).await?;
            for row in cancel_turn_gates(&mut Tx::from(&mut *tx), project_id, target, &now).await? {
                changes.push(row.change());
            }
            if outcome == "lost" {
                changes.push(run_event(
                    project_id,
                    session_id,
                    target,
                    DurableEventType::ExecutionLost,
                    json!({"lost_at": now, "reason": "the instance running the turn stopped renewing its lease", "history_complete": true}),
                ));
            }
            Ok(true)
        })
    }

    /// A session's execution as the snapshot shows it: the live running turn (`running`
    /// or `stopping`), else the parked turn it waits on (`idle`, or `stopping` while a
    /// Stop of it is being applied), else `idle`.
    pub async fn session_run_state(
        &self,
        project_id: &str,
        session_id: &str,
    ) -> Result<SessionRunState, StoreError> {
        let now_ms = self.db.now_ms_sql();
        let running = format!(
            "SELECT execution_id, state FROM session_runs WHERE project_id = $1 AND session_id = $2 \
             AND lease_until_ms > {now_ms} ORDER BY started_ms DESC LIMIT 1"
        );
        let parked = "SELECT t.id, t.status, e.state AS settled FROM turns t \
                      LEFT JOIN session_executions e ON e.project_id = t.project_id \
                      AND e.execution_id = t.id WHERE t.project_id = $1 AND t.session_id = $2 \
                      ORDER BY t.created_at DESC, t.id DESC LIMIT 1";
        with_pool!(self.db, pool => {
            if let Some(row) = sqlx::query(&running).bind(project_id).bind(session_id).fetch_optional(pool).await? {
                let state = if row.text("state")? == RUN_STOPPING { "stopping" } else { "running" };
                return Ok(SessionRunState { execution_id: Some(row.text("execution_id")?), state });
            }
            match sqlx::query(parked).bind(project_id).bind(session_id).fetch_optional(pool).await? {
                Some(row) if row.text("status")? == "parked" => {
                    let state = match row.opt_text("settled")?.as_deref() {
                        Some(RUN_STOPPING) => "stopping",
                        _ => "idle",
                    };
                    Ok(SessionRunState { execution_id: Some(row.text("id")?), state })
                }
                _ => Ok(SessionRunState { execution_id: None, state: "idle" }),
            }
        })
    }

    /// The pending gates of a session, oldest first.
    pub async fn pending_of_session(
        &self,
        project_id: &str,
        session_id: &str,
    ) -> Result<Vec<InteractionRecord>, StoreError> {
        let sql = format!(
            "SELECT {SELECT_COLUMNS} FROM interactions WHERE project_id = $1 AND session_id = $2 \
             AND status = 'pending' ORDER BY created_at, id LIMIT 500"
        );
        with_pool!(self.db, pool => {
            let rows = sqlx::query(&sql).bind(project_id).bind(session_id).fetch_all(pool).await?;
            rows.iter().map(interaction_from_row).collect()
        })
    }
}
