//! Turns of a session: what ran, under which model, with what output, and (for a parked
//! turn) the durable state a resume continues from.

use gatehouse_wire::invoke::TurnStatus;
use gatehouse_wire::run::ChatMessage;

use super::lease::{job_lease_held, ClaimedJob};
use super::rows::{
    insert_gate, interaction_from_row, InsertArgs, InteractionRecord, NewInteraction,
    SELECT_COLUMNS,
};
use super::runs::{finish_run, RunEnd, RunRecorded};
use super::InteractionStore;
use crate::announce::{in_announced_tx, Change, Changes};
use crate::db::{from_json_text, in_tx, now_text, to_json_text, with_pool, RowExt, StoreError, Tx};
use crate::seams::JoinedWrite;

/// A stored turn.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRecord {
    /// Turn id (UUIDv7).
    pub id: String,
    /// Owning project.
    pub project_id: String,
    /// The agent session.
    pub session_id: String,
    /// `parked`, `completed` or `failed` ([`turn_status_text`]).
    pub status: String,
    /// The model it ran under.
    pub model: Option<String>,
    /// Its output text.
    pub output: Option<String>,
    /// True for a resume.
    pub resumed: bool,
    /// The interaction it resumed from.
    pub resumed_from_interaction_id: Option<String>,
    /// The turn that resumed this (parked) one.
    pub resumed_by_turn_id: Option<String>,
    /// The transcript after this turn.
    pub messages: Vec<ChatMessage>,
    /// The durable parked state (JSON), for a parked turn.
    pub parked_state: Option<serde_json::Value>,
    /// Creation time.
    pub created_at: String,
}

impl TurnRecord {
    /// The status as the wire types it (unknown text reads as completed).
    pub fn status(&self) -> TurnStatus {
        match self.status.as_str() {
            "parked" => TurnStatus::Parked,
            "failed" => TurnStatus::Failed,
            _ => TurnStatus::Completed,
        }
    }
}

/// The `turns.status` text of a status (read back by [`TurnRecord::status`]).
pub fn turn_status_text(status: TurnStatus) -> &'static str {
    match status {
        TurnStatus::Parked => "parked",
        TurnStatus::Completed => "completed",
        TurnStatus::Failed => "failed",
    }
}

/// A turn to record.
#[derive(Debug, Clone)]
pub struct NewTurn {
    /// Turn id.
    pub id: String,
    /// Owning project.
    pub project_id: String,
    /// The agent session.
    pub session_id: String,
    /// `parked`, `completed` or `failed` ([`turn_status_text`]).
    pub status: String,
    /// The model it ran under.
    pub model: Option<String>,
    /// Output text.
    pub output: Option<String>,
    /// The interaction it resumed from (a resume).
    pub resumed_from_interaction_id: Option<String>,
    /// The transcript after this turn.
    pub messages: Vec<ChatMessage>,
    /// The durable parked state.
    pub parked_state: Option<serde_json::Value>,
    /// The Stop command its harness honoured (the turn halted at a step boundary).
    pub stopped_by: Option<String>,
}

fn turn_from_row(row: &impl RowExt) -> Result<TurnRecord, StoreError> {
    let parked_state = match row.opt_text("parked_state")? {
        Some(text) => Some(from_json_text("turns.parked_state", &text)?),
        None => None,
    };
    Ok(TurnRecord {
        id: row.text("id")?,
        project_id: row.text("project_id")?,
        session_id: row.text("session_id")?,
        status: row.text("status")?,
        model: row.opt_text("model")?,
        output: row.opt_text("output")?,
        resumed: row.int("resumed")? != 0,
        resumed_from_interaction_id: row.opt_text("resumed_from_interaction_id")?,
        resumed_by_turn_id: row.opt_text("resumed_by_turn_id")?,
        messages: from_json_text("turns.messages", &row.text("messages")?)?,
        parked_state,
        created_at: row.text("created_at")?,
    })
}

const TURN_COLUMNS: &str = "id, project_id, session_id, status, model, output, resumed, \
     resumed_from_interaction_id, resumed_by_turn_id, messages, parked_state, created_at";

/// Insert a turn (inside a transaction).
macro_rules! insert_turn {
    ($exec:expr, $turn:expr, $now:expr) => {{
        let t = $turn;
        sqlx::query(
            "INSERT INTO turns (id, project_id, session_id, status, model, output, resumed, \
             resumed_from_interaction_id, messages, parked_state, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        )
        .bind(&t.id)
        .bind(&t.project_id)
        .bind(&t.session_id)
        .bind(&t.status)
        .bind(&t.model)
        .bind(&t.output)
        .bind(i64::from(t.resumed_from_interaction_id.is_some()))
        .bind(&t.resumed_from_interaction_id)
        .bind(to_json_text(&t.messages))
        .bind(t.parked_state.as_ref().map(to_json_text))
        .bind($now)
        .execute(&mut *$exec)
        .await?;
    }};
}
pub(crate) use insert_turn;

impl InteractionStore {
    /// Record a finished turn and the gate it opened (if any) in one transaction.
    pub async fn record_turn(
        &self,
        turn: &NewTurn,
        gate: Option<&NewInteraction>,
    ) -> Result<Option<InteractionRecord>, StoreError> {
        let now = now_text();
        let gate_args = gate.map(InsertArgs::new);
        in_announced_tx!(self.db, self.announce, tx, changes => {
            insert_turn!(tx, turn, &now);
            let gate = match &gate_args {
                Some(args) => Some(insert_gate!(tx, args, changes).record),
                None => None,
            };
            finish_turn_run(&mut Tx::from(&mut *tx), turn, &mut changes, &now).await?;
            changes.push(records_changed(turn));
            Ok(gate)
        })
    }

    /// Record a fresh turn (not a resume) and its gates (none, one, or one per asking
    /// call of a `parallel` step), and in the same transaction cancel the session's
    /// pending gates of OTHER turns: a new turn makes them stale (A4 `cancelled`: stale
    /// turn). Returns the gates and the cancelled rows.
    ///
    /// `joined` (the run's execution-session share) is written in the same transaction;
    /// when it finds its ownership lost, nothing is written ([`StoreError::Fenced`]).
    pub async fn record_fresh_turn(
        &self,
        turn: &NewTurn,
        gates: &[NewInteraction],
        joined: Option<&dyn JoinedWrite>,
    ) -> Result<(Vec<InteractionRecord>, Vec<InteractionRecord>), StoreError> {
        let now = now_text();
        let gate_args: Vec<InsertArgs> = gates.iter().map(InsertArgs::new).collect();
        let cancel = format!(
            "UPDATE interactions SET status = 'cancelled', updated_at = $1, updated_by_id = $2 \
             WHERE project_id = $3 AND session_id = $4 AND status = 'pending' \
             AND (turn_id IS NULL OR turn_id <> $5) RETURNING {}",
            SELECT_COLUMNS
        );
        in_announced_tx!(self.db, self.announce, tx, changes => {
            let rows = sqlx::query(&cancel)
                .bind(&now)
                .bind("service")
                .bind(&turn.project_id)
                .bind(&turn.session_id)
                .bind(&turn.id)
                .fetch_all(&mut *tx)
                .await?;
            let cancelled = rows
                .iter()
                .map(interaction_from_row)
                .collect::<Result<Vec<_>, _>>()?;
            for record in &cancelled {
                changes.push(record.change());
            }
            insert_turn!(tx, turn, &now);
            let mut gates = Vec::with_capacity(gate_args.len());
            for args in &gate_args {
                gates.push(insert_gate!(tx, args, changes).record);
            }
            finish_turn_run(&mut Tx::from(&mut *tx), turn, &mut changes, &now).await?;
            changes.push(records_changed(turn));
            if let Some(joined) = joined {
                changes.extend(joined.write(Tx::from(&mut *tx)).await?);
            }
            Ok((gates, cancelled))
        })
    }

    /// One turn of a project.
    pub async fn get_turn(
        &self,
        project_id: &str,
        turn_id: &str,
    ) -> Result<Option<TurnRecord>, StoreError> {
        let sql = format!("SELECT {TURN_COLUMNS} FROM turns WHERE id = $1 AND project_id = $2");
        with_pool!(self.db, pool => {
            let row = sqlx::query(&sql).bind(turn_id).bind(project_id).fetch_optional(pool).await?;
            row.as_ref().map(turn_from_row).transpose()
        })
    }

    /// The turns of a session, oldest first.
    pub async fn list_turns(
        &self,
        project_id: &str,
        session_id: &str,
    ) -> Result<Vec<TurnRecord>, StoreError> {
        let sql = format!(
            "SELECT {TURN_COLUMNS} FROM turns WHERE project_id = $1 AND session_id = $2 ORDER BY id"
        );
        with_pool!(self.db, pool => {
            let rows = sqlx::query(&sql).bind(project_id).bind(session_id).fetch_all(pool).await?;
            rows.iter().map(turn_from_row).collect()
        })
    }
}

/// What claiming a parked turn for a resume came to ([`InteractionStore::claim_parked_turn`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnClaim {
    /// The turn is this job's to resume (claimed now, or by an earlier attempt of the
    /// same job).
    Claimed,
    /// Another answer's resume claimed it first (or resumed it before claims existed):
    /// this one must not resume it.
    ClaimedByOther {
        /// The answered gate whose resume claimed it (absent for a turn resumed before
        /// claims were recorded).
        interaction_id: Option<String>,
        /// Its resume turn, once that resume committed.
        resumed_by_turn_id: Option<String>,
    },
    /// This worker no longer holds the job's lease (or the turn is not a parked turn
    /// of the project): nothing claimed, another worker owns the job.
    LeaseLost,
}

impl InteractionStore {
    /// Claim the parked turn `turn_id` for `job`'s resume, BEFORE anything of it runs:
    /// one compare-and-set on the turn row, fenced by the job's lease. A parked turn is
    /// claimed by one answered gate, for good; every attempt of that gate's job holds
    /// the claim, every other gate's resume finds it taken. Only the claiming resume
    /// may record `resumed_by_turn_id` ([`InteractionStore::complete_job`] checks it).
    pub async fn claim_parked_turn(
        &self,
        job: &ClaimedJob,
        turn_id: &str,
    ) -> Result<TurnClaim, StoreError> {
        let sql = format!(
            "UPDATE turns SET resume_interaction_id = $1, updated_at = $2 \
             WHERE id = $3 AND project_id = $4 AND parked_state IS NOT NULL \
             AND resumed_by_turn_id IS NULL \
             AND (resume_interaction_id IS NULL OR resume_interaction_id = $1) AND {}",
            job_lease_held(1, 5, self.db.now_ms_sql())
        );
        let now = now_text();
        in_tx!(self.db, tx => {
            let claimed = sqlx::query(&sql)
                .bind(&job.interaction_id)
                .bind(&now)
                .bind(turn_id)
                .bind(&job.project_id)
                .bind(&job.owner)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if claimed == 1 {
                return Ok(TurnClaim::Claimed);
            }
            let row = sqlx::query(
                "SELECT resume_interaction_id, resumed_by_turn_id FROM turns \
                 WHERE id = $1 AND project_id = $2",
            )
            .bind(turn_id)
            .bind(&job.project_id)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(row) = row else {
                return Ok(TurnClaim::LeaseLost);
            };
            let claimed_by = row.opt_text("resume_interaction_id")?;
            let resumed_by_turn_id = row.opt_text("resumed_by_turn_id")?;
            let ours = claimed_by.as_deref() == Some(job.interaction_id.as_str());
            Ok(if !ours && (claimed_by.is_some() || resumed_by_turn_id.is_some()) {
                TurnClaim::ClaimedByOther {
                    interaction_id: claimed_by,
                    resumed_by_turn_id,
                }
            } else {
                TurnClaim::LeaseLost
            })
        })
    }
}

/// The marker every parked state this version writes carries (its config is redacted).
const REDACTED_MARKER: &str = "%\"config_redacted\":true%";

impl InteractionStore {
    /// Up to `limit` parked states written by an older version, whose config may be
    /// unredacted (they lack the `config_redacted` marker): `(turn id, state)`.
    pub async fn unredacted_parked_states(
        &self,
        limit: i64,
    ) -> Result<Vec<(String, serde_json::Value)>, StoreError> {
        let sql = "SELECT id, parked_state FROM turns WHERE parked_state IS NOT NULL \
                   AND parked_state NOT LIKE $1 ORDER BY id LIMIT $2";
        with_pool!(self.db, pool => {
            let rows = sqlx::query(sql).bind(REDACTED_MARKER).bind(limit).fetch_all(pool).await?;
            rows.iter()
                .map(|row| {
                    let state = from_json_text("turns.parked_state", &row.text("parked_state")?)?;
                    Ok((row.text("id")?, state))
                })
                .collect()
        })
    }

    /// Replace a turn's parked state (the startup scrub of older states).
    pub async fn replace_parked_state(
        &self,
        turn_id: &str,
        state: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let text = to_json_text(state);
        in_tx!(self.db, tx => {
            sqlx::query("UPDATE turns SET parked_state = $1 WHERE id = $2")
                .bind(&text)
                .bind(turn_id)
                .execute(&mut *tx)
                .await?;
            Ok(())
        })
    }
}

/// A recorded turn changes its session's records (its turns, the transcript).
/// Inside the transaction that records `turn`: its run is over ([`finish_run`]).
pub(super) async fn finish_turn_run(
    tx: &mut Tx<'_>,
    turn: &NewTurn,
    changes: &mut Changes,
    now: &str,
) -> Result<(), StoreError> {
    let output = turn.output.as_deref().unwrap_or_default();
    let recorded = RunRecorded {
        project_id: &turn.project_id,
        session_id: &turn.session_id,
        execution_id: &turn.id,
        end: RunEnd::of(&turn.status, turn.stopped_by.as_deref(), output),
        output,
    };
    finish_run(tx, &recorded, changes, now).await
}

fn records_changed(turn: &NewTurn) -> Change {
    Change::Records {
        project_id: turn.project_id.clone(),
        session_id: turn.session_id.clone(),
    }
}
