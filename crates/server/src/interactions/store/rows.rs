//! Interaction rows (A4), idempotency keys, and the respond compare-and-set (C1).

use gatehouse_wire::interaction::{
    GateBinding, InteractionData, InteractionFlags, InteractionKind, InteractionStatus, Order,
    SessionInteraction,
};
use gatehouse_wire::JsonObject;
use serde_json::Value;

use super::parallel::several_gate_tokens;
use super::InteractionStore;
use crate::announce::{in_announced_tx, Change, InteractionChange};
use crate::db::{
    from_json_text, new_id, now_text, to_json_text, with_pool, RowExt, StoreError, Tx,
};

/// One stored interaction row.
#[derive(Debug, Clone, PartialEq)]
pub struct InteractionRecord {
    /// Row id (UUIDv7).
    pub id: String,
    /// Owning project.
    pub project_id: String,
    /// The agent session.
    pub session_id: String,
    /// The turn that gated.
    pub turn_id: Option<String>,
    /// The gate's token.
    pub token: String,
    /// Kind (wire spelling).
    pub kind: String,
    /// Status (wire spelling).
    pub status: String,
    /// `data` without `resolution`.
    pub data: InteractionData,
    /// `data.resolution`.
    pub resolution: Option<JsonObject>,
    /// Delivery flags.
    pub flags: InteractionFlags,
    /// Tags.
    pub tags: Option<JsonObject>,
    /// Meta.
    pub meta: Option<JsonObject>,
    /// Creation time.
    pub created_at: String,
    /// Last update time.
    pub updated_at: Option<String>,
    /// Creator (the authenticated actor).
    pub created_by_id: Option<String>,
    /// Last updater.
    pub updated_by_id: Option<String>,
    /// The gate's revision (C8): 1 when written, moved on by a change to what it asks.
    pub revision: i64,
}

impl InteractionRecord {
    /// The gate digest (C8) of this row as stored: its id, revision and request.
    pub fn digest(&self) -> String {
        let request = self.data.request.as_ref();
        gatehouse_wire::interaction::gate_digest(&gatehouse_wire::interaction::GateDigestInput {
            id: &self.id,
            revision: self.revision,
            tool: request.and_then(|r| r.tool.as_deref()),
            tool_call_id: request.and_then(|r| r.tool_call_id.as_deref()),
            args: request.and_then(|r| r.args.as_ref()),
        })
    }

    /// The row as Agenta's API renders it: every key present, `null` when unset
    /// (`data.parameters` `null` when the turn had no stamp), actor ids as UUIDs; then
    /// Gatehouse's `gate` (its revision and digest, C8), after Agenta's keys.
    pub fn to_wire(&self) -> SessionInteraction {
        let mut data = self.data.clone();
        data.resolution = self.resolution.clone();
        data.parameters = Some(data.stamped_parameters().cloned());
        let actor = |id: &Option<String>| id.as_deref().map(crate::auth::actor_uuid);
        SessionInteraction {
            created_at: Some(self.created_at.clone()),
            updated_at: self.updated_at.clone(),
            deleted_at: None,
            created_by_id: actor(&self.created_by_id),
            updated_by_id: actor(&self.updated_by_id),
            deleted_by_id: None,
            id: Some(self.id.clone()),
            project_id: Some(self.project_id.clone()),
            session_id: self.session_id.clone(),
            turn_id: self.turn_id.clone(),
            token: self.token.clone(),
            kind: InteractionKind::from_wire(&self.kind),
            status: Some(InteractionStatus::from_wire(&self.status)),
            data: Some(data),
            flags: self.flags.clone(),
            tags: self.tags.clone(),
            meta: self.meta.clone(),
            gate: Some(GateBinding {
                revision: self.revision,
                digest: self.digest(),
                extra: JsonObject::new(),
            }),
            extra: JsonObject::new(),
        }
    }

    /// Its resolution with `extra`'s keys set over it (the stored answer is kept).
    pub(crate) fn resolution_with(&self, extra: JsonObject) -> JsonObject {
        let mut merged = self.resolution.clone().unwrap_or_default();
        merged.extend(extra);
        merged
    }

    /// The status as the wire enum.
    pub fn status(&self) -> InteractionStatus {
        InteractionStatus::from_wire(&self.status)
    }

    /// The answer body of a one-row endpoint, `{"count": 1, "interaction": row}`, as
    /// JSON text written as Agenta's API writes it (numbers as pydantic spells them,
    /// `gatehouse_wire::agenta_api_json`; the store keeps it verbatim for
    /// `Idempotency-Key` replays).
    pub fn response_body(&self) -> String {
        let body = gatehouse_wire::interaction::InteractionResponse {
            count: 1,
            interaction: Some(self.to_wire()),
            extra: Default::default(),
        };
        gatehouse_wire::agenta_api_json::to_agenta_api_json(&body)
            .unwrap_or_else(|_| "{}".to_string())
    }
}

pub(crate) fn interaction_from_row(row: &impl RowExt) -> Result<InteractionRecord, StoreError> {
    let data: InteractionData = from_json_text("interactions.data", &row.text("data")?)?;
    let resolution = match row.opt_text("resolution")? {
        Some(text) => from_json_text("interactions.resolution", &text)?,
        None => None,
    };
    let flags: InteractionFlags = from_json_text("interactions.flags", &row.text("flags")?)?;
    let tags = match row.opt_text("tags")? {
        Some(text) => from_json_text("interactions.tags", &text)?,
        None => None,
    };
    let meta = match row.opt_text("meta")? {
        Some(text) => from_json_text("interactions.meta", &text)?,
        None => None,
    };
    Ok(InteractionRecord {
        id: row.text("id")?,
        project_id: row.text("project_id")?,
        session_id: row.text("session_id")?,
        turn_id: row.opt_text("turn_id")?,
        token: row.text("token")?,
        kind: row.text("kind")?,
        status: row.text("status")?,
        data,
        resolution,
        flags,
        tags,
        meta,
        created_at: row.text("created_at")?,
        updated_at: row.opt_text("updated_at")?,
        created_by_id: row.opt_text("created_by_id")?,
        updated_by_id: row.opt_text("updated_by_id")?,
        revision: row.int("revision")?,
    })
}

/// A new interaction to create (idempotent on `(project, session_id, token)`).
#[derive(Debug, Clone)]
pub struct NewInteraction {
    /// Owning project.
    pub project_id: String,
    /// The agent session.
    pub session_id: String,
    /// The turn that gated.
    pub turn_id: Option<String>,
    /// The gate's token.
    pub token: String,
    /// Kind.
    pub kind: InteractionKind,
    /// `data` (its `resolution` is ignored: a new row is unanswered).
    pub data: InteractionData,
    /// Flags.
    pub flags: InteractionFlags,
    /// Tags.
    pub tags: Option<JsonObject>,
    /// Meta.
    pub meta: Option<JsonObject>,
    /// Creator.
    pub created_by_id: Option<String>,
}

/// What a create did.
#[derive(Debug, Clone)]
pub struct CreateOutcome {
    /// The row (new, or the existing one for a repeated token).
    pub record: InteractionRecord,
    /// True when this call inserted it.
    pub created: bool,
}

/// Filters of an interaction query (project scope is separate).
#[derive(Debug, Clone, Default)]
pub struct InteractionFilter {
    /// Only this session.
    pub session_id: Option<String>,
    /// Only this turn.
    pub turn_id: Option<String>,
    /// Only this kind.
    pub kind: Option<InteractionKind>,
    /// Only these statuses (any of).
    pub statuses: Vec<InteractionStatus>,
    /// `delivered_in_band` filter.
    pub delivered_in_band: Option<bool>,
    /// `delivered_webhook` filter.
    pub delivered_webhook: Option<bool>,
    /// Created at or after.
    pub oldest: Option<String>,
    /// Created at or before.
    pub newest: Option<String>,
    /// Cursor: rows strictly after this id in the chosen order.
    pub next: Option<String>,
    /// Page size.
    pub limit: u32,
    /// Sort order.
    pub order: Option<Order>,
}

/// What a respond did.
#[derive(Debug, Clone)]
pub enum RespondOutcome {
    /// This call won the compare-and-set: the row is now `responded` and the resume is
    /// queued. `response` is the stored 200 body.
    Won {
        /// The row after the flip.
        record: Box<InteractionRecord>,
    },
    /// An `Idempotency-Key` repeated the winning request: the stored 200 body.
    Replayed {
        /// The stored response body (JSON text).
        response: String,
    },
    /// The same `Idempotency-Key` was used for a different request.
    KeyReused,
    /// The row exists but is no longer pending.
    NotPending,
    /// The respond's digest is not the pending gate's (it changed after it was read,
    /// C8): nothing was recorded.
    StaleGate,
    /// No such row in this project.
    NotFound,
}

/// What a transition did.
#[derive(Debug, Clone)]
pub enum TransitionOutcome {
    /// The row moved.
    Moved(Box<InteractionRecord>),
    /// The row is not in a state that allows this move.
    Conflict,
    /// No such row in this project.
    NotFound,
}

pub(crate) const SELECT_COLUMNS: &str =
    "id, project_id, session_id, turn_id, token, kind, status, data, \
     resolution, flags, tags, meta, created_at, updated_at, created_by_id, updated_by_id, revision";

pub(crate) const INSERT_SQL: &str =
    "INSERT INTO interactions (id, project_id, session_id, turn_id, token, \
     kind, status, data, resolution, flags, delivered_in_band, delivered_webhook, tags, meta, \
     created_at, created_by_id) VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, NULL, $8, $9, \
     $10, $11, $12, $13, $14) ON CONFLICT (project_id, session_id, token) DO NOTHING";

/// Bind-ready columns of a new row.
pub(crate) struct InsertArgs {
    pub id: String,
    pub project_id: String,
    pub session_id: String,
    pub turn_id: Option<String>,
    pub token: String,
    pub kind: String,
    pub data: String,
    pub flags: String,
    pub in_band: i64,
    pub webhook: i64,
    pub tags: Option<String>,
    pub meta: Option<String>,
    pub created_at: String,
    pub created_by_id: Option<String>,
}

impl InsertArgs {
    pub(crate) fn new(new: &NewInteraction) -> Self {
        let mut data = new.data.clone();
        data.resolution = None;
        Self {
            id: new_id(),
            project_id: new.project_id.clone(),
            session_id: new.session_id.clone(),
            turn_id: new.turn_id.clone(),
            token: new.token.clone(),
            kind: new.kind.as_str().to_string(),
            data: to_json_text(&data),
            flags: to_json_text(&new.flags),
            in_band: i64::from(new.flags.delivered_in_band),
            webhook: i64::from(new.flags.delivered_webhook),
            tags: new.tags.as_ref().map(to_json_text),
            meta: new.meta.as_ref().map(to_json_text),
            created_at: now_text(),
            created_by_id: new.created_by_id.clone(),
        }
    }
}

/// Insert (or find) a row inside an open transaction / on a pool.
macro_rules! insert_interaction {
    ($exec:expr, $args:expr) => {{
        let a = $args;
        let inserted = sqlx::query($crate::interactions::store::rows::INSERT_SQL)
            .bind(&a.id)
            .bind(&a.project_id)
            .bind(&a.session_id)
            .bind(&a.turn_id)
            .bind(&a.token)
            .bind(&a.kind)
            .bind(&a.data)
            .bind(&a.flags)
            .bind(a.in_band)
            .bind(a.webhook)
            .bind(&a.tags)
            .bind(&a.meta)
            .bind(&a.created_at)
            .bind(&a.created_by_id)
            .execute(&mut *$exec)
            .await?
            .rows_affected()
            == 1;
        let sql = format!(
            "SELECT {} FROM interactions WHERE project_id = $1 AND session_id = $2 AND token = $3",
            $crate::interactions::store::rows::SELECT_COLUMNS
        );
        let row = sqlx::query(&sql)
            .bind(&a.project_id)
            .bind(&a.session_id)
            .bind(&a.token)
            .fetch_one(&mut *$exec)
            .await?;
        Ok::<_, $crate::db::StoreError>($crate::interactions::store::rows::CreateOutcome {
            record: $crate::interactions::store::rows::interaction_from_row(&row)?,
            created: inserted,
        })
    }};
}
pub(crate) use insert_interaction;

/// Insert (or find) a row inside an announced transaction (`in_announced_tx!`), and add
/// its opening to the write's changes when it was created: the one place a new gate is
/// written and announced. Evaluates to its [`CreateOutcome`].
macro_rules! insert_gate {
    ($tx:ident, $args:expr, $changes:ident) => {{
        let outcome = $crate::interactions::store::rows::insert_interaction!($tx, $args)?;
        if outcome.created {
            $changes.push(outcome.record.change());
        }
        outcome
    }};
}
pub(crate) use insert_gate;

/// One gate's compare-and-set respond inside the caller's transaction `$tx` (an
/// `in_tx!` body); evaluates to `Result<RespondOutcome, StoreError>`. The batch respond
/// applies the same rule to each of its items in order (`batch.rs`, `plan`);
/// `tests/batch_idempotency.rs` holds the two to the same outcomes.
macro_rules! respond_one {
    ($tx:ident, $project_id:expr, $id:expr, $answer:expr, $actor:expr, $idempotency:expr, $digest:expr, $now:expr) => {{
        let outcome: Result<RespondOutcome, StoreError> = async {
            let project_id: &str = $project_id;
            let id: &str = $id;
            let actor: &str = $actor;
            let idempotency: Option<(&str, &str)> = $idempotency;
            let digest: Option<&str> = $digest;
            let now: String = $now.to_string();
            let mut resolution = JsonObject::new();
            resolution.insert(
                "answer".to_string(),
                serde_json::Value::Object($answer.clone()),
            );
            let resolution_text = to_json_text(&resolution);
            // With a digest, the flip also requires the revision it was checked against
            // (C8): a change that lands between the check and the flip fails the flip.
            let update_sql = format!(
                "UPDATE interactions SET status = 'responded', resolution = $1, updated_at = $2, \
                 updated_by_id = $3 WHERE id = $4 AND project_id = $5 AND status = 'pending' \
                 AND ($6 < 0 OR revision = $6) RETURNING {SELECT_COLUMNS}"
            );
            if let Some((key, hash)) = idempotency {
                // Claim the key before touching the row. A concurrent request with the
                // same key waits on this uncommitted claim (Postgres) or on the single
                // writer (SQLite), then finds it taken and reads what this one did: a
                // replay, or a typed "key reused" for another gate, never a unique-key
                // failure. A request that does not win the row gives the key back.
                // (A claim given back between our insert and our read is claimed again.)
                let mut attempts = 0;
                loop {
                    attempts += 1;
                    let claimed = sqlx::query(
                        "INSERT INTO idempotency_keys (project_id, idem_key, interaction_id, \
                         request_hash, response, created_at) VALUES ($1, $2, $3, $4, '', $5) \
                         ON CONFLICT (project_id, idem_key) DO NOTHING",
                    )
                    .bind(project_id)
                    .bind(key)
                    .bind(id)
                    .bind(hash)
                    .bind(now.as_str())
                    .execute(&mut *$tx)
                    .await?
                    .rows_affected()
                        == 1;
                    if claimed {
                        break;
                    }
                    let row = sqlx::query(
                        "SELECT interaction_id, request_hash, response FROM idempotency_keys \
                         WHERE project_id = $1 AND idem_key = $2",
                    )
                    .bind(project_id)
                    .bind(key)
                    .fetch_optional(&mut *$tx)
                    .await?;
                    match row {
                        Some(row) => {
                            let same = row.text("interaction_id")? == id
                                && row.text("request_hash")? == hash;
                            let response = row.text("response")?;
                            // Only committed claims are visible, and a committed claim
                            // holds its answer: an empty one cannot be replayed.
                            return Ok(if same && !response.is_empty() {
                                RespondOutcome::Replayed { response }
                            } else {
                                RespondOutcome::KeyReused
                            });
                        }
                        None if attempts < 3 => continue,
                        None => return Ok(RespondOutcome::KeyReused),
                    }
                }
            }
            // The digest, checked against the gate as this transaction holds it (locked
            // on PostgreSQL; SQLite's writer holds the file): a stale one records
            // nothing and gives the key back.
            let mut checked_revision: i64 = -1;
            if let Some(digest) = digest {
                let sql = format!(
                    "SELECT {SELECT_COLUMNS} FROM interactions WHERE id = $1 AND project_id = $2{}",
                    Tx::from(&mut *$tx).lock_clause()
                );
                let current = sqlx::query(&sql)
                    .bind(id)
                    .bind(project_id)
                    .fetch_optional(&mut *$tx)
                    .await?;
                if let Some(current) = current {
                    let current = interaction_from_row(&current)?;
                    if current.status == "pending" && current.digest() != digest {
                        if let Some((key, _)) = idempotency {
                            sqlx::query("DELETE FROM idempotency_keys WHERE project_id = $1 AND idem_key = $2")
                                .bind(project_id)
                                .bind(key)
                                .execute(&mut *$tx)
                                .await?;
                        }
                        return Ok(RespondOutcome::StaleGate);
                    }
                    checked_revision = current.revision;
                }
            }
            let row = sqlx::query(&update_sql)
                .bind(&resolution_text)
                .bind(now.as_str())
                .bind(actor)
                .bind(id)
                .bind(project_id)
                .bind(checked_revision)
                .fetch_optional(&mut *$tx)
                .await?;
            let Some(row) = row else {
                if let Some((key, _)) = idempotency {
                    sqlx::query("DELETE FROM idempotency_keys WHERE project_id = $1 AND idem_key = $2")
                        .bind(project_id)
                        .bind(key)
                        .execute(&mut *$tx)
                        .await?;
                }
                let status = sqlx::query("SELECT status FROM interactions WHERE id = $1 AND project_id = $2")
                    .bind(id)
                    .bind(project_id)
                    .fetch_optional(&mut *$tx)
                    .await?;
                return Ok(match status {
                    None => RespondOutcome::NotFound,
                    // Still pending: only the revision checked above can have failed the flip.
                    Some(row) if row.text("status")? == "pending" => RespondOutcome::StaleGate,
                    Some(_) => RespondOutcome::NotPending,
                });
            };
            let record = interaction_from_row(&row)?;
            if let Some((key, _)) = idempotency {
                sqlx::query(
                    "UPDATE idempotency_keys SET response = $1 WHERE project_id = $2 AND idem_key = $3",
                )
                .bind(record.response_body())
                .bind(project_id)
                .bind(key)
                .execute(&mut *$tx)
                .await?;
            }
            sqlx::query(
                "INSERT INTO resume_jobs (interaction_id, project_id, state, created_at) \
                 VALUES ($1, $2, 'queued', $3) ON CONFLICT (interaction_id) DO NOTHING",
            )
            .bind(id)
            .bind(project_id)
            .bind(now.as_str())
            .execute(&mut *$tx)
            .await?;
            Ok(RespondOutcome::Won { record: Box::new(record) })
        }
        .await;
        outcome
    }};
}

impl InteractionStore {
    /// Create an interaction, or return the existing row for a repeated
    /// `(project, session_id, token)` unchanged.
    pub async fn create_interaction(
        &self,
        new: &NewInteraction,
    ) -> Result<CreateOutcome, StoreError> {
        let args = InsertArgs::new(new);
        in_announced_tx!(self.db, self.announce, tx, changes => {
            Ok(insert_gate!(tx, &args, changes))
        })
    }

    /// One row of a project.
    pub async fn get_interaction(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<InteractionRecord>, StoreError> {
        let sql =
            format!("SELECT {SELECT_COLUMNS} FROM interactions WHERE id = $1 AND project_id = $2");
        with_pool!(self.db, pool => {
            let row = sqlx::query(&sql).bind(id).bind(project_id).fetch_optional(pool).await?;
            row.as_ref().map(interaction_from_row).transpose()
        })
    }

    /// The row of a session with this token (the key of a transition).
    pub async fn find_by_token(
        &self,
        project_id: &str,
        session_id: &str,
        token: &str,
    ) -> Result<Option<InteractionRecord>, StoreError> {
        let sql = format!(
            "SELECT {SELECT_COLUMNS} FROM interactions WHERE project_id = $1 AND session_id = $2 \
             AND token = $3"
        );
        with_pool!(self.db, pool => {
            let row = sqlx::query(&sql)
                .bind(project_id)
                .bind(session_id)
                .bind(token)
                .fetch_optional(pool)
                .await?;
            row.as_ref().map(interaction_from_row).transpose()
        })
    }

    /// A row by id regardless of project (the dispatcher's own lookups).
    pub(crate) async fn get_interaction_any(
        &self,
        id: &str,
    ) -> Result<Option<InteractionRecord>, StoreError> {
        let sql = format!("SELECT {SELECT_COLUMNS} FROM interactions WHERE id = $1");
        with_pool!(self.db, pool => {
            let row = sqlx::query(&sql).bind(id).fetch_optional(pool).await?;
            row.as_ref().map(interaction_from_row).transpose()
        })
    }

    /// Forget at most `batch` idempotency keys recorded before `before` (the store's time
    /// format), in one short statement: how many were deleted ([`crate::retention`] calls
    /// it until fewer than `batch` are). A key's record holds the answered row, so kept
    /// forever they grew with every answer.
    pub async fn prune_idempotency_keys(
        &self,
        before: &str,
        batch: u32,
    ) -> Result<u64, StoreError> {
        let sql = format!(
            "DELETE FROM idempotency_keys WHERE (project_id, idem_key) IN \
             (SELECT project_id, idem_key FROM idempotency_keys WHERE created_at < $1 LIMIT {batch})"
        );
        with_pool!(self.db, pool => {
            let done = sqlx::query(&sql).bind(before).execute(pool).await?;
            Ok(done.rows_affected())
        })
    }

    /// Rows of a project matching `filter`, windowed.
    pub async fn query_interactions(
        &self,
        project_id: &str,
        filter: &InteractionFilter,
    ) -> Result<Vec<InteractionRecord>, StoreError> {
        let (sql, texts) = Self::query_interactions_sql(project_id, filter);
        with_pool!(self.db, pool => {
            let mut query = sqlx::query(&sql);
            for text in &texts {
                query = query.bind(text);
            }
            let rows = query.fetch_all(pool).await?;
            rows.iter().map(interaction_from_row).collect()
        })
    }

    /// The statement [`query_interactions`](Self::query_interactions) runs and its text
    /// parameters (`$1`, `$2`, ...): public so a test can read its query plan (every
    /// filter the API offers is served by an index).
    pub fn query_interactions_sql(
        project_id: &str,
        filter: &InteractionFilter,
    ) -> (String, Vec<String>) {
        let mut sql = format!("SELECT {SELECT_COLUMNS} FROM interactions WHERE project_id = $1");
        let mut texts: Vec<String> = vec![project_id.to_string()];
        let mut push = |sql: &mut String, clause: &str, value: String| {
            texts.push(value);
            sql.push_str(&clause.replace('?', &format!("${}", texts.len())));
        };
        if let Some(session) = &filter.session_id {
            push(&mut sql, " AND session_id = ?", session.clone());
        }
        if let Some(turn) = &filter.turn_id {
            push(&mut sql, " AND turn_id = ?", turn.clone());
        }
        if let Some(kind) = &filter.kind {
            push(&mut sql, " AND kind = ?", kind.as_str().to_string());
        }
        if !filter.statuses.is_empty() {
            sql.push_str(" AND status IN (");
            for (i, status) in filter.statuses.iter().enumerate() {
                if i > 0 {
                    sql.push_str(", ");
                }
                push(&mut sql, "?", status.as_str().to_string());
            }
            sql.push(')');
        }
        if let Some(flag) = filter.delivered_in_band {
            sql.push_str(if flag {
                " AND delivered_in_band = 1"
            } else {
                " AND delivered_in_band = 0"
            });
        }
        if let Some(flag) = filter.delivered_webhook {
            sql.push_str(if flag {
                " AND delivered_webhook = 1"
            } else {
                " AND delivered_webhook = 0"
            });
        }
        if let Some(oldest) = &filter.oldest {
            push(&mut sql, " AND created_at >= ?", oldest.clone());
        }
        if let Some(newest) = &filter.newest {
            push(&mut sql, " AND created_at <= ?", newest.clone());
        }
        let descending = filter.order == Some(Order::Descending);
        if let Some(next) = &filter.next {
            let clause = if descending {
                " AND id < ?"
            } else {
                " AND id > ?"
            };
            push(&mut sql, clause, next.clone());
        }
        sql.push_str(if descending {
            " ORDER BY id DESC"
        } else {
            " ORDER BY id ASC"
        });
        sql.push_str(&format!(" LIMIT {}", filter.limit));
        (sql, texts)
    }

    /// The compare-and-set respond (C1). In ONE transaction: replay check for the
    /// idempotency key, the `digest` when given (C8: the gate as the client read it, else
    /// [`RespondOutcome::StaleGate`]), `UPDATE ... WHERE status = 'pending'` (and the
    /// revision checked), the idempotency record, and the resume job. Exactly one of N
    /// concurrent callers wins.
    pub async fn respond(
        &self,
        project_id: &str,
        id: &str,
        answer: &JsonObject,
        actor: &str,
        idempotency: Option<(&str, &str)>,
        digest: Option<&str>,
    ) -> Result<RespondOutcome, StoreError> {
        let now = now_text();
        in_announced_tx!(self.db, self.announce, tx, changes => {
            let outcome = respond_one!(tx, project_id, id, answer, actor, idempotency, digest, &now)?;
            if let RespondOutcome::Won { record } = &outcome {
                changes.push(record.change());
            }
            Ok(outcome)
        })
    }

    /// Change what a pending gate asks (its `data.request`) and move its revision on, in
    /// one compare-and-set on `pending`: the one write that does (C8), so a respond that
    /// carries the digest of the gate as it was is refused (`STALE_GATE`), never applied
    /// to what the person did not see. `None` when the gate is not pending (or unknown).
    /// No route calls it yet: it is the seam the items that revise a gate (a runner
    /// asking again, an operator's edit) write through; the tests use it to change a
    /// gate under a reader. Not announced: the watch's `interaction` events carry status
    /// changes, and this is none.
    pub async fn revise_pending_request(
        &self,
        project_id: &str,
        id: &str,
        request: &gatehouse_wire::interaction::InteractionRequest,
        actor: &str,
    ) -> Result<Option<InteractionRecord>, StoreError> {
        let now = now_text();
        crate::db::in_tx!(self.db, tx => {
            let sql = format!(
                "SELECT {SELECT_COLUMNS} FROM interactions WHERE id = $1 AND project_id = $2 \
                 AND status = 'pending'{}",
                Tx::from(&mut *tx).lock_clause()
            );
            let row = sqlx::query(&sql).bind(id).bind(project_id).fetch_optional(&mut *tx).await?;
            let Some(row) = row else { return Ok(None) };
            let current = interaction_from_row(&row)?;
            let mut data = current.data.clone();
            data.request = Some(request.clone());
            let update = format!(
                "UPDATE interactions SET data = $1, revision = revision + 1, updated_at = $2, \
                 updated_by_id = $3 WHERE id = $4 AND project_id = $5 AND status = 'pending' \
                 AND revision = $6 RETURNING {SELECT_COLUMNS}"
            );
            let row = sqlx::query(&update)
                .bind(to_json_text(&data))
                .bind(&now)
                .bind(actor)
                .bind(id)
                .bind(project_id)
                .bind(current.revision)
                .fetch_optional(&mut *tx)
                .await?;
            row.as_ref().map(interaction_from_row).transpose()
        })
    }

    /// The stored answer of an `Idempotency-Key`: `Some(Ok(body))` when it was used for
    /// this same request, `Some(Err(()))` when for another one, `None` when unused.
    pub async fn idempotent_replay(
        &self,
        project_id: &str,
        key: &str,
        interaction_id: &str,
        request_hash: &str,
    ) -> Result<Option<Result<String, ()>>, StoreError> {
        with_pool!(self.db, pool => {
            let row = sqlx::query(
                "SELECT interaction_id, request_hash, response FROM idempotency_keys \
                 WHERE project_id = $1 AND idem_key = $2",
            )
            .bind(project_id)
            .bind(key)
            .fetch_optional(pool)
            .await?;
            match row {
                Some(row) => {
                    let same = row.text("interaction_id")? == interaction_id
                        && row.text("request_hash")? == request_hash;
                    Ok(Some(if same { Ok(row.text("response")?) } else { Err(()) }))
                }
                None => Ok(None),
            }
        })
    }

    /// Runner-side transition keyed by `(session_id, token)`: `resolved` from `pending` or
    /// `responded` (keeping the stored answer and adding `verdict`/`tool_call_id`), or
    /// `cancelled` from `pending`.
    pub async fn transition(
        &self,
        project_id: &str,
        session_id: &str,
        token: &str,
        target: InteractionStatus,
        resolution: Option<&JsonObject>,
        actor: &str,
    ) -> Result<TransitionOutcome, StoreError> {
        let now = now_text();
        let select = format!(
            "SELECT {SELECT_COLUMNS} FROM interactions WHERE project_id = $1 AND session_id = $2 \
             AND token = $3"
        );
        let from: &[&str] = match target {
            InteractionStatus::Resolved => &["pending", "responded"],
            InteractionStatus::Cancelled => &["pending"],
            // How Agenta's web app records a `client_tool` or `user_input` answer (no
            // resume job: a transition never continues a turn).
            InteractionStatus::Responded => &["pending"],
            _ => &[],
        };
        in_announced_tx!(self.db, self.announce, tx, changes => {
            let row = sqlx::query(&select)
                .bind(project_id)
                .bind(session_id)
                .bind(token)
                .fetch_optional(&mut *tx)
                .await?;
            let Some(row) = row else { return Ok(TransitionOutcome::NotFound) };
            let current = interaction_from_row(&row)?;
            if !from.contains(&current.status.as_str()) {
                return Ok(TransitionOutcome::Conflict);
            }
            let merged = current.resolution_with(resolution.cloned().unwrap_or_default());
            let merged_text = if merged.is_empty() { None } else { Some(to_json_text(&merged)) };
            let update = format!(
                "UPDATE interactions SET status = $1, resolution = $2, updated_at = $3, \
                 updated_by_id = $4 WHERE id = $5 AND status = $6 RETURNING {SELECT_COLUMNS}"
            );
            let row = sqlx::query(&update)
                .bind(target.as_str())
                .bind(&merged_text)
                .bind(&now)
                .bind(actor)
                .bind(&current.id)
                .bind(&current.status)
                .fetch_optional(&mut *tx)
                .await?;
            match row {
                Some(row) => {
                    let moved = interaction_from_row(&row)?;
                    changes.push(moved.change());
                    // An answer to one of the several gates of a parked turn: its resume
                    // job, so the answer that completes the set continues the turn
                    // (a transition of any other row continues nothing).
                    if matches!(target, InteractionStatus::Resolved | InteractionStatus::Responded) {
                        if let Some(turn_id) = &moved.turn_id {
                            let tokens =
                                several_gate_tokens(&mut Tx::from(&mut *tx), project_id, turn_id).await?;
                            if tokens.is_some_and(|tokens| tokens.contains(&moved.token)) {
                                sqlx::query(
                                    "INSERT INTO resume_jobs (interaction_id, project_id, state, created_at) \
                                     VALUES ($1, $2, 'queued', $3) ON CONFLICT (interaction_id) DO NOTHING",
                                )
                                .bind(&moved.id)
                                .bind(project_id)
                                .bind(&now)
                                .execute(&mut *tx)
                                .await?;
                            }
                        }
                    }
                    Ok(TransitionOutcome::Moved(Box::new(moved)))
                }
                None => Ok(TransitionOutcome::Conflict),
            }
        })
    }

    /// Cancel the pending gates of a session's other turns (optionally only `tokens`).
    /// Returns the cancelled rows.
    ///
    /// A token list of any length is processed in chunks of `CANCEL_STALE_CHUNK` (500)
    /// (far below SQLite's variable limit and Postgres's bind-parameter limit), all in one
    /// transaction: the whole list is cancelled, or nothing.
    pub async fn cancel_stale(
        &self,
        project_id: &str,
        session_id: &str,
        live_turn_id: &str,
        tokens: Option<&[String]>,
        actor: &str,
    ) -> Result<Vec<InteractionRecord>, StoreError> {
        let now = now_text();
        let base =
            "UPDATE interactions SET status = 'cancelled', updated_at = $1, updated_by_id = $2 \
             WHERE project_id = $3 AND session_id = $4 AND status = 'pending' \
             AND (turn_id IS NULL OR turn_id <> $5)";
        // `None`: every stale gate, one statement. `Some`: only these tokens (deduplicated).
        let chunks: Vec<Vec<&String>> = match tokens {
            None => vec![Vec::new()],
            Some(tokens) => {
                let mut seen = std::collections::HashSet::new();
                let unique: Vec<&String> = tokens.iter().filter(|t| seen.insert(*t)).collect();
                unique
                    .chunks(CANCEL_STALE_CHUNK)
                    .map(<[&String]>::to_vec)
                    .collect()
            }
        };
        in_announced_tx!(self.db, self.announce, tx, changes => {
            let mut cancelled = Vec::new();
            for chunk in &chunks {
                let mut sql = String::from(base);
                if !chunk.is_empty() {
                    sql.push_str(" AND token IN (");
                    for i in 0..chunk.len() {
                        if i > 0 {
                            sql.push_str(", ");
                        }
                        sql.push_str(&format!("${}", i + 6));
                    }
                    sql.push(')');
                }
                sql.push_str(&format!(" RETURNING {SELECT_COLUMNS}"));
                let mut query = sqlx::query(&sql)
                    .bind(&now)
                    .bind(actor)
                    .bind(project_id)
                    .bind(session_id)
                    .bind(live_turn_id);
                for token in chunk {
                    query = query.bind(*token);
                }
                let rows = query.fetch_all(&mut *tx).await?;
                for row in &rows {
                    let record = interaction_from_row(row)?;
                    changes.push(record.change());
                    cancelled.push(record);
                }
            }
            Ok(cancelled)
        })
    }
}

/// How many tokens one `cancel-stale` statement binds (see [`InteractionStore::cancel_stale`]).
pub const CANCEL_STALE_CHUNK: usize = 500;

/// Fresh id for a new gate token.
pub(crate) fn new_token() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl NewInteraction {
    /// A gate a turn opens.
    pub(crate) fn gate(
        project_id: &str,
        session_id: &str,
        turn_id: &str,
        data: InteractionData,
        actor: &str,
    ) -> Self {
        Self {
            project_id: project_id.to_string(),
            session_id: session_id.to_string(),
            turn_id: Some(turn_id.to_string()),
            token: new_token(),
            kind: InteractionKind::UserApproval,
            data,
            flags: InteractionFlags::default(),
            tags: None,
            meta: None,
            created_by_id: Some(actor.to_string()),
        }
    }
}

impl InteractionRecord {
    /// This row's change, as just written with its status: what its webhook event
    /// (`interaction.opened` for `pending`, `interaction.responded`, `.resolved`,
    /// `.cancelled`) and its watch event say. Ids, kind and status, and a resolution's
    /// verdict and error code.
    pub(crate) fn change(&self) -> Change {
        let resolution = self.resolution.as_ref();
        let verdict = resolution
            .and_then(|r| r.get("verdict"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let error_code = resolution
            .and_then(|r| r.get("error"))
            .and_then(|e| e.get("code"))
            .and_then(Value::as_str)
            .map(str::to_string);
        Change::Interaction(InteractionChange {
            project_id: self.project_id.clone(),
            session_id: self.session_id.clone(),
            interaction_id: self.id.clone(),
            turn_id: self.turn_id.clone(),
            kind: self.kind.clone(),
            status: self.status.clone(),
            verdict,
            error_code,
        })
    }
}
