//! Agenta's durable session control over this area's tables: the settlement of a source
//! execution (`session_executions`, one compare-and-set per turn that an answer or a Stop
//! wins) and the commands an answer or a Stop writes (`session_commands`). The durable
//! respond decides, in ONE transaction, everything the contract's check order asks
//! (rows, execution, key), admits the answers, settles the source turn and records the
//! continuation; the resume job that delivers it is written after the commit
//! ([`InteractionStore::deliver_continuation`]). A turn parked on several gates (a
//! `parallel` step's) is continued by the answer that completes the set: its gates are
//! locked while an answer decides, so of two answers to them the later sees the
//! earlier's; an answer that leaves one pending is admitted without settling anything
//! ([`DurableOutcome::Awaiting`]).

use gatehouse_wire::JsonObject;
use serde_json::json;
use sha2::Digest as _;

use super::parallel::several_gate_tokens;
use super::rows::{interaction_from_row, InteractionRecord, SELECT_COLUMNS};
use super::InteractionStore;
use crate::announce::in_announced_tx;
use crate::db::{
    from_json_text, new_id, now_text, to_json_text, with_pool, with_tx, RowExt, StoreError, Tx,
};

/// A continuation command: the answer that continues a turn (`kind = continue`).
pub const KIND_CONTINUE: &str = "continue";

/// A settled source execution's state: an answer continued it.
pub const SETTLED_CONTINUED: &str = "continued";

/// One stored command (`session_commands`).
#[derive(Debug, Clone, PartialEq)]
pub struct CommandRecord {
    /// Its id.
    pub id: String,
    /// Its project.
    pub project_id: String,
    /// The agent session.
    pub session_id: String,
    /// `continue` or `cancel`.
    pub kind: String,
    /// `pending`, `claimed`, `applied`, `obsolete`.
    pub state: String,
    /// `started`, `stopped`, `not_running`, ... once settled.
    pub outcome: Option<String>,
    /// The source execution (the turn it continues or stops).
    pub target_execution_id: Option<String>,
    /// The answered gate (a continuation: the path's gate of the respond that created it).
    pub interaction_id: Option<String>,
    /// Every gate a continuation answers (Agenta's `data.interaction_ids`): all the gates
    /// of a turn parked on several; a command written before they were recorded lists
    /// its `interaction_id`.
    pub interaction_ids: Vec<String>,
    /// The execution (turn) id the continuation's resume turn takes.
    pub continuation_execution_id: Option<String>,
}

pub(super) const COMMAND_COLUMNS: &str = "id, project_id, session_id, kind, state, outcome, \
     target_execution_id, interaction_id, interaction_ids, continuation_execution_id";

pub(super) fn command_from_row(row: &impl RowExt) -> Result<CommandRecord, StoreError> {
    let interaction_id = row.opt_text("interaction_id")?;
    let interaction_ids = match row.opt_text("interaction_ids")? {
        Some(text) => from_json_text("session_commands.interaction_ids", &text)?,
        None => interaction_id.iter().cloned().collect(),
    };
    Ok(CommandRecord {
        id: row.text("id")?,
        project_id: row.text("project_id")?,
        session_id: row.text("session_id")?,
        kind: row.text("kind")?,
        state: row.text("state")?,
        outcome: row.opt_text("outcome")?,
        target_execution_id: row.opt_text("target_execution_id")?,
        interaction_id,
        interaction_ids,
        continuation_execution_id: row.opt_text("continuation_execution_id")?,
    })
}

/// One answer of a durable respond (`answer`, or an item of `answers[]`).
#[derive(Debug, Clone)]
pub struct DurableAnswer {
    /// The gate answered.
    pub interaction_id: String,
    /// Its answer.
    pub answer: JsonObject,
    /// The gate's digest as the client read it (C8), when sent.
    pub digest: Option<String>,
}

/// A durable respond, validated (the path's gate is among `answers`, which are distinct
/// and 1..=100).
#[derive(Debug, Clone)]
pub struct DurableRespond {
    /// The project.
    pub project_id: String,
    /// The path's gate.
    pub anchor_id: String,
    /// Every answer, the anchor's included.
    pub answers: Vec<DurableAnswer>,
    /// The execution the caller saw the gate in.
    pub expected_execution_id: Option<String>,
    /// The `Idempotency-Key`.
    pub key: String,
    /// The hash of what the key is bound to (the gates, their answers, the expectation).
    pub request_hash: String,
    /// Who answered.
    pub actor: String,
}

/// What a durable respond came to, in the contract's check order.
#[derive(Debug, Clone)]
pub enum DurableOutcome {
    /// A gate named is unknown in the project (404).
    NotFound,
    /// The path's gate names no turn (422 "not linked").
    NotLinked,
    /// `expected_execution_id` is not the gate's turn (409 `execution_mismatch`).
    Mismatch {
        /// The gate's turn.
        current_execution_id: String,
    },
    /// The answers span turns (409 `execution_mismatch`).
    MixedExecutions {
        /// The path's gate's turn.
        current_execution_id: String,
    },
    /// The key was used with another request (409 `idempotency_key_reused`).
    KeyReused,
    /// The key repeated the request that created `command`: its replay.
    Replayed {
        /// The path's gate as it is now.
        interaction: Box<InteractionRecord>,
        /// The command it created, in its current state.
        command: CommandRecord,
    },
    /// The source execution was settled (continued or stopped) and this answer differs
    /// from the stored one (409 `execution_terminal`, `{execution_state}`).
    SourceClosed {
        /// `terminal` or `stopping`.
        execution_state: &'static str,
    },
    /// A gate was answered with another verdict while its turn is open (409).
    AnsweredDifferently,
    /// A pending gate's digest is not the one sent (it changed after it was read, C8):
    /// nothing recorded (409 `STALE_GATE`).
    StaleGate,
    /// A gate is no longer pending (cancelled): 409 `{interaction_status}`.
    NotPending {
        /// Its status.
        status: String,
    },
    /// Every gate already holds exactly this answer: nothing new (202, `command: null`).
    AlreadyAnswered {
        /// The path's gate.
        interaction: Box<InteractionRecord>,
        /// The source turn.
        execution_id: String,
        /// Its state (`terminal`, `stopping`, `running`).
        execution_state: &'static str,
    },
    /// Admitted: the gates are `responded`, the source turn settled `continued`, the
    /// continuation recorded (`pending`), its delivery still to do.
    Admitted {
        /// The path's gate after the answer.
        interaction: Box<InteractionRecord>,
        /// The continuation.
        command: CommandRecord,
        /// Every gate it answers (their resume jobs deliver it; of a turn parked on
        /// several gates, all of them).
        answered: Vec<String>,
    },
    /// Some of the several gates of the turn are answered, others still pending: the
    /// answers are recorded (`responded`), the source turn is not settled and no
    /// continuation exists yet; the answer that completes the set creates it (202,
    /// `command: null`, `execution {id: source turn, state: awaiting_interactions}`).
    Awaiting {
        /// The path's gate after the answer.
        interaction: Box<InteractionRecord>,
        /// The source turn.
        execution_id: String,
    },
}

/// The hash an `Idempotency-Key` is bound to: the gates, their answers, the expectation.
pub fn durable_request_hash(answers: &[DurableAnswer], expected: Option<&str>) -> String {
    let items: Vec<serde_json::Value> = answers
        .iter()
        .map(|a| json!([a.interaction_id, a.answer]))
        .collect();
    let canonical = json!({"answers": items, "expected_execution_id": expected}).to_string();
    hex::encode(sha2::Sha256::digest(canonical.as_bytes()))
}

/// The `resolution.answer` a gate holds, if answered.
fn stored_answer(row: &InteractionRecord) -> Option<&serde_json::Value> {
    row.resolution.as_ref().and_then(|r| r.get("answer"))
}

/// The state a settled source execution reports.
fn settled_state(state: &str) -> &'static str {
    match state {
        "stopping" => "stopping",
        _ => "terminal",
    }
}

/// The execution state a continuation command's state reports (its continuation
/// execution's): waiting for delivery, running, or done.
pub fn continuation_state(command_state: &str) -> &'static str {
    match command_state {
        "pending" => "pending_delivery",
        "claimed" => "running",
        _ => "terminal",
    }
}

async fn rows_by_id(
    tx: &mut Tx<'_>,
    project_id: &str,
    ids: &[&str],
) -> Result<Vec<Option<InteractionRecord>>, StoreError> {
    let sql =
        format!("SELECT {SELECT_COLUMNS} FROM interactions WHERE id = $1 AND project_id = $2");
    let mut rows = Vec::with_capacity(ids.len());
    for id in ids {
        let row = with_tx!(tx, conn => {
            let row = sqlx::query(&sql).bind(*id).bind(project_id).fetch_optional(&mut **conn).await?;
            row.as_ref().map(interaction_from_row).transpose()
        })?;
        rows.push(row);
    }
    Ok(rows)
}

pub(super) async fn command_by_key(
    tx: &mut Tx<'_>,
    project_id: &str,
    session_id: &str,
    kind: &str,
    key: &str,
) -> Result<Option<(CommandRecord, Option<String>)>, StoreError> {
    let sql = format!(
        "SELECT {COMMAND_COLUMNS}, request_hash FROM session_commands WHERE project_id = $1 \
         AND session_id = $2 AND kind = $3 AND idem_key = $4"
    );
    with_tx!(tx, conn => {
        let row = sqlx::query(&sql)
            .bind(project_id)
            .bind(session_id)
            .bind(kind)
            .bind(key)
            .fetch_optional(&mut **conn)
            .await?;
        match row {
            Some(row) => Ok(Some((command_from_row(&row)?, row.opt_text("request_hash")?))),
            None => Ok(None),
        }
    })
}

/// The settled state of `execution_id`, if any (`continued`, `stopping`, `stopped`).
pub(crate) async fn settlement(
    tx: &mut Tx<'_>,
    project_id: &str,
    execution_id: &str,
) -> Result<Option<String>, StoreError> {
    let sql = "SELECT state FROM session_executions WHERE project_id = $1 AND execution_id = $2";
    with_tx!(tx, conn => {
        let row = sqlx::query(sql)
            .bind(project_id)
            .bind(execution_id)
            .fetch_optional(&mut **conn)
            .await?;
        match row {
            Some(row) => Ok(Some(row.text("state")?)),
            None => Ok(None),
        }
    })
}

/// Settle `execution_id` as `state`, by a compare-and-set: true when this writer won (no
/// settlement existed). A concurrent settlement (an answer, a Stop) of the same turn
/// waits for this one's transaction, then finds the key taken.
pub(crate) async fn settle(
    tx: &mut Tx<'_>,
    project_id: &str,
    session_id: &str,
    execution_id: &str,
    state: &str,
    command_id: &str,
    now: &str,
) -> Result<bool, StoreError> {
    let sql = "INSERT INTO session_executions (project_id, execution_id, session_id, state, \
               command_id, created_at) VALUES ($1, $2, $3, $4, $5, $6) \
               ON CONFLICT (project_id, execution_id) DO NOTHING";
    with_tx!(tx, conn => {
        let n = sqlx::query(sql)
            .bind(project_id)
            .bind(execution_id)
            .bind(session_id)
            .bind(state)
            .bind(command_id)
            .bind(now)
            .execute(&mut **conn)
            .await?
            .rows_affected();
        Ok(n == 1)
    })
}

/// Why a durable respond's transaction was rolled back to be decided again: a concurrent
/// writer settled the turn or moved a row after this one read them.
const SETTLE_LOST: &str = "the source execution was settled by a concurrent writer";

impl InteractionStore {
    /// The durable respond (see the module docs): decided and written in ONE
    /// transaction. A concurrent settlement of the same turn makes it decide again from
    /// what the winner wrote (so of an answer and a Stop racing, exactly one wins).
    pub async fn respond_durable(
        &self,
        request: &DurableRespond,
    ) -> Result<DurableOutcome, StoreError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.respond_durable_once(request).await {
                Err(StoreError::Fenced(why)) if why == SETTLE_LOST && attempt < 8 => continue,
                Err(err) if err.is_concurrent_conflict() && attempt < 8 => continue,
                other => return other,
            }
        }
    }

    async fn respond_durable_once(
        &self,
        request: &DurableRespond,
    ) -> Result<DurableOutcome, StoreError> {
        let now = now_text();
        let project_id = request.project_id.as_str();
        let ids: Vec<&str> = request
            .answers
            .iter()
            .map(|a| a.interaction_id.as_str())
            .collect();
        in_announced_tx!(self.db, self.announce, tx, changes => {
            let rows = rows_by_id(&mut Tx::from(&mut *tx), project_id, &ids).await?;
            let anchor_index = ids.iter().position(|id| *id == request.anchor_id);
            let Some(Some(anchor)) = anchor_index.and_then(|i| rows.get(i)).cloned() else {
                return Ok(DurableOutcome::NotFound);
            };
            let Some(turn_id) = anchor.turn_id.clone() else {
                return Ok(DurableOutcome::NotLinked);
            };
            if let Some(expected) = &request.expected_execution_id {
                if *expected != turn_id {
                    return Ok(DurableOutcome::Mismatch { current_execution_id: turn_id });
                }
            }
            let mut found: Vec<InteractionRecord> = Vec::with_capacity(rows.len());
            for row in rows {
                let Some(row) = row else { return Ok(DurableOutcome::NotFound) };
                if row.turn_id.as_deref() != Some(turn_id.as_str())
                    || row.session_id != anchor.session_id
                {
                    return Ok(DurableOutcome::MixedExecutions { current_execution_id: turn_id });
                }
                found.push(row);
            }
            // A turn parked on several gates: its gates, locked (one answer to them at a
            // time decides), and the answers' rows read again under the lock. A gate of
            // the set still pending and not answered here: this answer does not
            // complete the set.
            let turn_gates = match several_gate_tokens(&mut Tx::from(&mut *tx), project_id, &turn_id).await? {
                Some(tokens) => {
                    let gates = lock_turn_gates(
                        &mut Tx::from(&mut *tx),
                        project_id,
                        &anchor.session_id,
                        &turn_id,
                        &tokens,
                    )
                    .await?;
                    found = rows_by_id(&mut Tx::from(&mut *tx), project_id, &ids)
                        .await?
                        .into_iter()
                        .collect::<Option<Vec<_>>>()
                        .ok_or(StoreError::Fenced(SETTLE_LOST.to_string()))?;
                    gates
                }
                None => Vec::new(),
            };
            // The path's gate as the lock found it (the reply shows it).
            let anchor = anchor_index.and_then(|i| found.get(i)).cloned().unwrap_or(anchor);
            let others_pending = turn_gates
                .iter()
                .any(|gate| gate.status == "pending" && !ids.contains(&gate.id.as_str()));
            // The key, per session: a replay, or "reused" for another request.
            if let Some((command, hash)) = command_by_key(
                &mut Tx::from(&mut *tx),
                project_id,
                &anchor.session_id,
                KIND_CONTINUE,
                &request.key,
            )
            .await?
            {
                return Ok(if hash.as_deref() == Some(request.request_hash.as_str()) {
                    DurableOutcome::Replayed { interaction: Box::new(anchor), command }
                } else {
                    DurableOutcome::KeyReused
                });
            }
            let settled = settlement(&mut Tx::from(&mut *tx), project_id, &turn_id).await?;
            if settled.is_some() {
                // Read again: on PostgreSQL each statement sees what had committed when it
                // began, so the rows above may predate the settlement just read; read
                // after it, they show what its writer did.
                found = rows_by_id(&mut Tx::from(&mut *tx), project_id, &ids)
                    .await?
                    .into_iter()
                    .collect::<Option<Vec<_>>>()
                    .ok_or(StoreError::Fenced(SETTLE_LOST.to_string()))?;
            }
            let same: Vec<bool> = found
                .iter()
                .zip(&request.answers)
                .map(|(row, item)| {
                    row.status != "pending" && row.status != "cancelled"
                        && stored_answer(row) == Some(&serde_json::Value::Object(item.answer.clone()))
                })
                .collect();
            if same.iter().all(|s| *s) {
                let execution_state = match settled.as_deref() {
                    Some(state) => settled_state(state),
                    // A partial answer sent again: the turn still waits for the others.
                    None if others_pending => "awaiting_interactions",
                    None => "running",
                };
                return Ok(DurableOutcome::AlreadyAnswered {
                    interaction: Box::new(anchor),
                    execution_id: turn_id,
                    execution_state,
                });
            }
            if let Some(state) = settled.as_deref() {
                return Ok(DurableOutcome::SourceClosed { execution_state: settled_state(state) });
            }
            // A gate of a turn parked on several was cancelled (a stale turn, a Stop):
            // the turn can no longer be continued.
            if turn_gates.iter().any(|gate| gate.status == "cancelled") {
                return Ok(DurableOutcome::SourceClosed { execution_state: "terminal" });
            }
            for (row, same) in found.iter().zip(&same) {
                match row.status.as_str() {
                    "pending" => {}
                    "responded" | "resolved" if !same => {
                        return Ok(DurableOutcome::AnsweredDifferently)
                    }
                    "responded" | "resolved" => {}
                    other => return Ok(DurableOutcome::NotPending { status: other.to_string() }),
                }
            }
            // The digests (C8), against the gates as this transaction read them; the flips
            // below require the same revisions, so a change in between decides again.
            for (row, item) in found.iter().zip(&request.answers) {
                let stale = item.digest.as_deref().is_some_and(|digest| digest != row.digest());
                if row.status == "pending" && stale {
                    return Ok(DurableOutcome::StaleGate);
                }
            }
            // Settle the source turn first (the one point an answer and a Stop race on),
            // then admit the answers, then record the continuation. An answer that
            // leaves some of the turn's gates pending settles nothing: it is admitted
            // alone, and the answer that completes the set continues the turn.
            let command_id = new_id();
            if !others_pending {
                let won = settle(
                    &mut Tx::from(&mut *tx),
                    project_id,
                    &anchor.session_id,
                    &turn_id,
                    SETTLED_CONTINUED,
                    &command_id,
                    &now,
                )
                .await?;
                if !won {
                    return Err(StoreError::Fenced(SETTLE_LOST.to_string()));
                }
            }
            let update = format!(
                "UPDATE interactions SET status = 'responded', resolution = $1, updated_at = $2, \
                 updated_by_id = $3 WHERE id = $4 AND project_id = $5 AND status = 'pending' \
                 AND revision = $6 RETURNING {SELECT_COLUMNS}"
            );
            let mut answered = Vec::new();
            let mut interaction = anchor.clone();
            for (row, item) in found.iter().zip(&request.answers) {
                if row.status != "pending" {
                    continue;
                }
                let mut resolution = JsonObject::new();
                resolution.insert("answer".to_string(), serde_json::Value::Object(item.answer.clone()));
                let flipped = sqlx::query(&update)
                    .bind(to_json_text(&resolution))
                    .bind(&now)
                    .bind(&request.actor)
                    .bind(&row.id)
                    .bind(project_id)
                    .bind(row.revision)
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some(flipped) = flipped else {
                    // Moved by a writer outside the durable path: decide again.
                    return Err(StoreError::Fenced(SETTLE_LOST.to_string()));
                };
                let flipped = interaction_from_row(&flipped)?;
                changes.push(flipped.change());
                if flipped.id == anchor.id {
                    interaction = flipped.clone();
                }
                answered.push(flipped.id);
            }
            if others_pending {
                return Ok(DurableOutcome::Awaiting { interaction: Box::new(interaction), execution_id: turn_id });
            }
            // Every gate the continuation answers: those named here, and every gate of a
            // turn parked on several (all answered now).
            let mut answered: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
            for gate in &turn_gates {
                if !answered.contains(&gate.id) {
                    answered.push(gate.id.clone());
                }
            }
            let continuation_id = new_id();
            sqlx::query(
                "INSERT INTO session_commands (id, project_id, session_id, kind, state, \
                 target_execution_id, interaction_id, continuation_execution_id, idem_key, \
                 request_hash, created_at, interaction_ids) \
                 VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7, $8, $9, $10, $11)",
            )
            .bind(&command_id)
            .bind(project_id)
            .bind(&anchor.session_id)
            .bind(KIND_CONTINUE)
            .bind(&turn_id)
            .bind(&anchor.id)
            .bind(&continuation_id)
            .bind(&request.key)
            .bind(&request.request_hash)
            .bind(&now)
            .bind(to_json_text(&answered))
            .execute(&mut *tx)
            .await?;
            let command = CommandRecord {
                id: command_id,
                project_id: project_id.to_string(),
                session_id: anchor.session_id.clone(),
                kind: KIND_CONTINUE.to_string(),
                state: "pending".to_string(),
                outcome: None,
                target_execution_id: Some(turn_id),
                interaction_id: Some(anchor.id.clone()),
                interaction_ids: answered.clone(),
                continuation_execution_id: Some(continuation_id),
            };
            Ok(DurableOutcome::Admitted { interaction: Box::new(interaction), command, answered })
        })
    }

    /// Deliver an admitted continuation to the runner: the resume job of each answered
    /// gate (written once; a job already there stays as it is).
    pub async fn deliver_continuation(
        &self,
        project_id: &str,
        answered: &[String],
    ) -> Result<(), StoreError> {
        let now = now_text();
        crate::db::in_tx!(self.db, tx => {
            for id in answered {
                sqlx::query(
                    "INSERT INTO resume_jobs (interaction_id, project_id, state, created_at) \
                     VALUES ($1, $2, 'queued', $3) ON CONFLICT (interaction_id) DO NOTHING",
                )
                .bind(id)
                .bind(project_id)
                .bind(&now)
                .execute(&mut *tx)
                .await?;
            }
            Ok(())
        })
    }

    /// Deliver again every pending continuation (of `session`, or of every session when
    /// `None`) whose answered gates have no resume job (its delivery failed after the
    /// commit): how many jobs were written. A continuation whose jobs exist (queued,
    /// running or done) is left alone.
    pub async fn redeliver_continuations(
        &self,
        session: Option<(&str, &str)>,
    ) -> Result<u64, StoreError> {
        let now = now_text();
        let mut sql = String::from(
            "INSERT INTO resume_jobs (interaction_id, project_id, state, created_at) \
             SELECT i.id, i.project_id, 'queued', $1 FROM interactions i \
             JOIN session_commands c ON c.project_id = i.project_id \
             AND c.target_execution_id = i.turn_id AND c.session_id = i.session_id \
             WHERE c.kind = 'continue' AND c.state = 'pending' AND i.status = 'responded' \
             AND NOT EXISTS (SELECT 1 FROM resume_jobs j WHERE j.interaction_id = i.id)",
        );
        if session.is_some() {
            sql.push_str(" AND c.project_id = $2 AND c.session_id = $3");
        }
        sql.push_str(" ON CONFLICT (interaction_id) DO NOTHING");
        crate::db::in_tx!(self.db, tx => {
            let mut query = sqlx::query(&sql).bind(&now);
            if let Some((project_id, session_id)) = session {
                query = query.bind(project_id).bind(session_id);
            }
            Ok(query.execute(&mut *tx).await?.rows_affected())
        })
    }

    /// The continuation of the parked turn `turn_id` (the command its answer wrote), if
    /// its answer came through the durable respond.
    pub async fn continuation_of_turn(
        &self,
        project_id: &str,
        turn_id: &str,
    ) -> Result<Option<CommandRecord>, StoreError> {
        let sql = format!(
            "SELECT {COMMAND_COLUMNS} FROM session_commands WHERE project_id = $1 \
             AND target_execution_id = $2 AND kind = 'continue' ORDER BY created_at LIMIT 1"
        );
        with_pool!(self.db, pool => {
            let row = sqlx::query(&sql).bind(project_id).bind(turn_id).fetch_optional(pool).await?;
            row.as_ref().map(command_from_row).transpose()
        })
    }

    /// One command of a project.
    pub async fn get_command(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<CommandRecord>, StoreError> {
        let sql = format!(
            "SELECT {COMMAND_COLUMNS} FROM session_commands WHERE project_id = $1 AND id = $2"
        );
        with_pool!(self.db, pool => {
            let row = sqlx::query(&sql).bind(project_id).bind(id).fetch_optional(pool).await?;
            row.as_ref().map(command_from_row).transpose()
        })
    }
}

/// The gate rows of a turn parked on several (`tokens`, of its session), read and, on
/// PostgreSQL, locked in id order for the rest of the transaction: two answers to
/// gates of one turn decide one after the other, so the later sees the earlier's flip
/// (one of them completes the set). SQLite's writer holds the whole file already.
pub(crate) async fn lock_turn_gates(
    tx: &mut Tx<'_>,
    project_id: &str,
    session_id: &str,
    turn_id: &str,
    tokens: &[String],
) -> Result<Vec<InteractionRecord>, StoreError> {
    let placeholders: Vec<String> = (0..tokens.len()).map(|i| format!("${}", i + 4)).collect();
    let sql = format!(
        "SELECT {SELECT_COLUMNS} FROM interactions WHERE project_id = $1 AND session_id = $2 \
         AND turn_id = $3 AND token IN ({}) ORDER BY id{}",
        placeholders.join(", "),
        tx.lock_clause(),
    );
    with_tx!(tx, conn => {
        let mut query = sqlx::query(&sql).bind(project_id).bind(session_id).bind(turn_id);
        for token in tokens {
            query = query.bind(token);
        }
        let rows = query.fetch_all(&mut **conn).await?;
        rows.iter().map(interaction_from_row).collect()
    })
}

/// Settle the pending continuation of the parked turn `turn_id` inside the transaction
/// that records what its resume did: `applied` (`started`) when a resume turn was
/// recorded (the evidence), else `obsolete` with `outcome` (nothing was continued).
pub(crate) async fn settle_continuation(
    tx: &mut Tx<'_>,
    project_id: &str,
    turn_id: &str,
    resumed: bool,
    outcome: &str,
    now: &str,
) -> Result<(), StoreError> {
    let (state, outcome) = if resumed {
        ("applied", "started")
    } else {
        ("obsolete", outcome)
    };
    let sql = "UPDATE session_commands SET state = $1, outcome = $2, updated_at = $3, \
               settled_at = $3 WHERE project_id = $4 AND target_execution_id = $5 \
               AND kind = 'continue' AND state IN ('pending', 'claimed')";
    with_tx!(tx, conn => {
        sqlx::query(sql)
            .bind(state)
            .bind(outcome)
            .bind(now)
            .bind(project_id)
            .bind(turn_id)
            .execute(&mut **conn)
            .await?;
        Ok(())
    })
}
