//! The interaction endpoints of CONTRACT.md A5 and the SSE watch stream.

use std::convert::Infallible;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use futures::Stream;
use gatehouse_wire::error::GatehouseCode;
use gatehouse_wire::interaction::{
    CancelStaleRequest, CancelStaleResponse, CreateInteractionRequest, FieldProblem,
    InteractionKind, InteractionQuery, InteractionQueryFlags, InteractionQueryRequest,
    InteractionResponse, InteractionStatus, InteractionsResponse, Resolution, RespondRequest,
    SessionInteraction, TransitionRequest, WatchEvent, Windowing,
};
use gatehouse_wire::JsonObject;
use sha2::{Digest, Sha256};
use tokio::sync::broadcast::error::RecvError;
use tokio_stream::StreamExt as _;

use super::store::{
    BatchRespondItem, InteractionFilter, NewInteraction, RespondOutcome, TransitionOutcome,
};
use crate::api::extract::{parse_uuid, ActorName, JsonBody, OptionalJsonBody, ProjectId};
use crate::api::reply::{agenta_api_json, json, json_text};
use crate::config::AgentaContract;
use crate::error::{ApiError, ApiResult};
use crate::uri::query_map;
use crate::AppState;
use gatehouse_wire::batch::{
    BatchError, BatchOutcome, BatchRespondRequest, BatchRespondResponse, BatchResult,
    MAX_BATCH_ANSWERS,
};

/// Largest page a query returns.
pub const MAX_PAGE: u32 = 1000;

/// The A5 routes (relative to `/api`), but the respond: its contract's route is chosen
/// by [`super::routes`] (this one's [`respond`], or `super::durable`'s).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/sessions/interactions/query", post(query))
        .route("/sessions/interactions/", post(create))
        .route("/sessions/interactions", post(create))
        .route("/sessions/interactions/transition", post(transition))
        .route("/sessions/interactions/cancel-stale", post(cancel_stale))
        .route("/sessions/interactions/{id}", get(get_one))
        .route("/sessions/interactions/respond-batch", post(respond_batch))
        .route("/sessions/streams/watch", get(watch))
}

fn parse_time(value: &str, loc: &[&str]) -> ApiResult<String> {
    chrono::DateTime::parse_from_rfc3339(value)
        .map(|t| crate::db::format_time(t.with_timezone(&chrono::Utc)))
        .map_err(|err| {
            ApiError::validation(
                loc,
                format!("invalid RFC 3339 time {value:?}: {err}"),
                "datetime_parsing",
            )
        })
}

/// 422 listing `problems` (FastAPI's `[{loc, msg, type}]`), each under `prefix`.
fn problems_error(prefix: &[&str], problems: &[FieldProblem]) -> ApiError {
    let detail: Vec<serde_json::Value> = problems
        .iter()
        .map(|problem| {
            let loc: Vec<&str> = prefix
                .iter()
                .copied()
                .chain(problem.path.iter().map(String::as_str))
                .collect();
            serde_json::json!({"loc": loc, "msg": problem.message, "type": problem.kind})
        })
        .collect();
    ApiError {
        code: GatehouseCode::ValidationError,
        detail: serde_json::Value::Array(detail),
        shape: crate::error::ErrorShape::Agenta,
    }
}

/// 422 for an enum value Agenta's model does not list (pydantic's `enum` error).
fn known_or_422(loc: &[&str], known: bool, allowed: &[&str]) -> ApiResult<()> {
    if known {
        return Ok(());
    }
    let listed: Vec<String> = allowed.iter().map(|v| format!("'{v}'")).collect();
    let message = match listed.split_last() {
        Some((last, [])) => format!("Input should be {last}"),
        Some((last, rest)) => format!("Input should be {} or {last}", rest.join(", ")),
        None => "Input should be a known value".to_string(),
    };
    Err(ApiError::validation(loc, message, "enum"))
}

/// 422 `extra_forbidden` (pydantic's word) naming the first key of `value`, an object at
/// `loc`, that is not one of `known`. A misspelt filter would otherwise be ignored and
/// the query answer every row of the project (issue 37). Not an object: the typed decode
/// refuses it.
fn refuse_unknown_key(value: &serde_json::Value, loc: &[&str], known: &[&str]) -> ApiResult<()> {
    let Some(map) = value.as_object() else {
        return Ok(());
    };
    match map.keys().find(|key| !known.contains(&key.as_str())) {
        Some(key) => {
            let mut at = loc.to_vec();
            at.push(key);
            Err(ApiError::validation(
                &at,
                "Extra inputs are not permitted",
                "extra_forbidden",
            ))
        }
        None => Ok(()),
    }
}

/// Every key of a query body at every level is one the API knows.
fn refuse_unknown_query_keys(body: &serde_json::Value) -> ApiResult<()> {
    refuse_unknown_key(body, &["body"], InteractionQueryRequest::KEYS)?;
    if let Some(query) = body.get("query") {
        refuse_unknown_key(query, &["body", "query"], InteractionQuery::KEYS)?;
        if let Some(flags) = query.get("flags") {
            refuse_unknown_key(
                flags,
                &["body", "query", "flags"],
                InteractionQueryFlags::KEYS,
            )?;
        }
    }
    if let Some(windowing) = body.get("windowing") {
        refuse_unknown_key(windowing, &["body", "windowing"], Windowing::KEYS)?;
    }
    Ok(())
}

async fn query(
    State(state): State<AppState>,
    ProjectId(project_id): ProjectId,
    OptionalJsonBody(raw): OptionalJsonBody<serde_json::Value>,
) -> ApiResult<Response> {
    refuse_unknown_query_keys(&raw)?;
    let body: InteractionQueryRequest =
        gatehouse_wire::from_json_value(raw).map_err(|err| ApiError::from_decode(&err))?;
    let query = body.query.unwrap_or_default();
    // Agenta orders a window newest first unless it says otherwise; a body with no
    // window at all lists in the order rows were written.
    let windowed = body.windowing.is_some();
    let windowing = body.windowing.unwrap_or_default();
    // Agenta's models: the enums are closed, and `Windowing` checks its own fields.
    if let Some(kind) = &query.kind {
        known_or_422(
            &["body", "query", "kind"],
            kind.is_known(),
            InteractionKind::KNOWN,
        )?;
    }
    if let Some(status) = &query.status {
        known_or_422(
            &["body", "query", "status"],
            status.is_known(),
            InteractionStatus::KNOWN,
        )?;
    }
    let problems = windowing.problems();
    if !problems.is_empty() {
        return Err(problems_error(&["body", "windowing"], &problems));
    }
    let mut filter = InteractionFilter {
        session_id: query.session_id,
        turn_id: query.turn_id,
        kind: query.kind,
        statuses: query.status.into_iter().collect(),
        delivered_in_band: query.flags.as_ref().and_then(|f| f.delivered_in_band),
        delivered_webhook: query.flags.as_ref().and_then(|f| f.delivered_webhook),
        oldest: None,
        newest: None,
        next: windowing.next.filter(|n| !n.is_empty()),
        limit: windowing.limit.unwrap_or(MAX_PAGE).clamp(1, MAX_PAGE),
        order: windowing
            .order
            .or(windowed.then_some(gatehouse_wire::interaction::Order::Descending)),
    };
    if query.actionable_only {
        if filter
            .statuses
            .iter()
            .any(|s| *s != InteractionStatus::Pending)
        {
            // `actionable_only` with another status selects nothing.
            return Ok(agenta_api_json(&InteractionsResponse {
                count: 0,
                interactions: Vec::new(),
                extra: JsonObject::new(),
            }));
        }
        filter.statuses = vec![InteractionStatus::Pending];
    }
    if let Some(oldest) = windowing.oldest.as_deref() {
        filter.oldest = Some(parse_time(oldest, &["body", "windowing", "oldest"])?);
    }
    if let Some(newest) = windowing.newest.as_deref() {
        filter.newest = Some(parse_time(newest, &["body", "windowing", "newest"])?);
    }
    let rows = state
        .interactions
        .query_interactions(&project_id, &filter)
        .await?;
    Ok(agenta_api_json(&InteractionsResponse {
        count: rows.len() as u64,
        interactions: rows.iter().map(|r| r.to_wire()).collect(),
        extra: JsonObject::new(),
    }))
}

async fn get_one(
    State(state): State<AppState>,
    ProjectId(project_id): ProjectId,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = parse_uuid(&id, &["path", "id"])?;
    match state.interactions.get_interaction(&project_id, &id).await? {
        Some(record) => Ok(json_text(record.response_body())),
        None => Err(ApiError::interaction_not_found()),
    }
}

/// A runner names its gate by session and token (create, transition): both non-blank,
/// neither with a control character.
fn check_gate_key(session_id: &str, token: &str) -> ApiResult<()> {
    non_blank(session_id, &["body", "session_id"])?;
    non_blank(token, &["body", "token"])?;
    no_control_characters(session_id, &["body", "session_id"])?;
    no_control_characters(token, &["body", "token"])
}

/// An identifier (an id, a token, a tool name) never needs a control character, and one
/// shown to an operator could rewrite what is shown (an ESC sequence can make a `Bash`
/// gate read as `Read`): refused 422 where it comes in. Free text (arguments, messages)
/// may keep them; the CLI shows them escaped.
pub(crate) fn no_control_characters(value: &str, loc: &[&str]) -> ApiResult<()> {
    match value.chars().find(|c| c.is_control()) {
        Some(c) => Err(ApiError::validation(
            loc,
            format!(
                "must not contain control characters (found U+{:04X})",
                u32::from(c)
            ),
            "value_error",
        )),
        None => Ok(()),
    }
}

fn non_blank(value: &str, loc: &[&str]) -> ApiResult<()> {
    if value.trim().is_empty() {
        Err(ApiError::validation(
            loc,
            "must not be empty",
            "value_error",
        ))
    } else {
        Ok(())
    }
}

async fn create(
    State(state): State<AppState>,
    ProjectId(project_id): ProjectId,
    ActorName(actor): ActorName,
    body: JsonBody<CreateInteractionRequest>,
) -> ApiResult<Response> {
    let body = body.value;
    check_gate_key(&body.session_id, &body.token)?;
    if let Some(turn_id) = &body.turn_id {
        no_control_characters(turn_id, &["body", "turn_id"])?;
    }
    if let Some(request) = body.data.as_ref().and_then(|d| d.request.as_ref()) {
        if let Some(tool) = &request.tool {
            no_control_characters(tool, &["body", "data", "request", "tool"])?;
        }
        if let Some(tool_call_id) = &request.tool_call_id {
            no_control_characters(tool_call_id, &["body", "data", "request", "tool_call_id"])?;
        }
    }
    known_or_422(
        &["body", "kind"],
        body.kind.is_known(),
        InteractionKind::KNOWN,
    )?;
    let mut data = body.data.unwrap_or_default();
    // A stamp is a non-empty object: `null` and `{}` are stored as no stamp.
    data.parameters = data.stamped_parameters().cloned().map(Some);
    let new = NewInteraction {
        project_id: project_id.clone(),
        session_id: body.session_id,
        turn_id: body.turn_id,
        token: body.token,
        kind: body.kind,
        data,
        flags: body.flags.unwrap_or_default(),
        tags: body.tags,
        meta: body.meta,
        created_by_id: Some(actor),
    };
    let outcome = state.interactions.create_interaction(&new).await?;
    Ok(json_text(outcome.record.response_body()))
}

/// The `Idempotency-Key` header, when present (1..=255 visible characters).
fn idempotency_key(headers: &HeaderMap) -> ApiResult<Option<String>> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let text = value.to_str().map_err(|_| {
        ApiError::validation(
            &["header", "Idempotency-Key"],
            "must be visible ASCII",
            "value_error",
        )
    })?;
    let text = text.trim();
    if text.is_empty() || text.len() > 255 {
        return Err(ApiError::validation(
            &["header", "Idempotency-Key"],
            "must be 1 to 255 characters",
            "value_error",
        ));
    }
    Ok(Some(text.to_string()))
}

pub(super) async fn respond(
    State(state): State<AppState>,
    ProjectId(project_id): ProjectId,
    ActorName(actor): ActorName,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: JsonBody<RespondRequest>,
) -> ApiResult<Response> {
    let id = parse_uuid(&id, &["path", "id"])?;
    let key = idempotency_key(&headers)?;
    // As Agenta's router: `body.answer or {}`. Any object is an answer (an approval is
    // read by truthiness when the resume is built: `{}` denies).
    let answer = body.value.answer_or_empty();
    if let Some(gated) = other_call_named(&state, &project_id, &id, &answer).await? {
        return Err(ApiError::validation(
            &["body", "answer", "tool_call_id"],
            other_call_message(&gated),
            "value_error",
        ));
    }
    let hash = key.as_ref().map(|_| respond_hash(&id, &body.raw));
    let idempotency = key.as_deref().zip(hash.as_deref());
    record_admission(&state, state.backlog.admit().await);
    let outcome = state
        .interactions
        .respond(
            &project_id,
            &id,
            &answer,
            &actor,
            idempotency,
            body.value.digest.as_deref(),
        )
        .await?;
    let outcome = recheck_key(&state, &project_id, &id, idempotency, outcome).await?;
    match settle_answer(&state, outcome) {
        RespondOutcome::Won { record } => {
            state.dispatch_wakeup.notify_one();
            Ok(json_text(record.response_body()))
        }
        RespondOutcome::Replayed { response } => Ok(json_text(response)),
        RespondOutcome::KeyReused => Err(ApiError::new(
            GatehouseCode::IdempotencyKeyReused,
            "Idempotency-Key was already used for a different request",
        )),
        RespondOutcome::NotPending => Err(ApiError::not_pending()),
        RespondOutcome::StaleGate => Err(ApiError::stale_gate()),
        RespondOutcome::NotFound => Err(ApiError::interaction_not_found()),
    }
}

/// The rule for an approval answer's `tool_call_id` (CONTRACT.md A6): it may name only
/// the call its gate names (`data.request.tool_call_id`), or none. The call a resume runs
/// is always the gate's (the server's record, never a client's word), so an answer naming
/// another call is refused with nothing written, rather than approving something else
/// than it says. `Some(the gate's call id)` when `answer` names another call.
pub(super) async fn other_call_named(
    state: &AppState,
    project_id: &str,
    id: &str,
    answer: &JsonObject,
) -> ApiResult<Option<String>> {
    let named = answer
        .get("tool_call_id")
        .and_then(serde_json::Value::as_str)
        .filter(|named| !named.trim().is_empty());
    let Some(named) = named else {
        return Ok(None);
    };
    // An unknown row is answered 404 by the respond itself.
    let Some(row) = state.interactions.get_interaction(project_id, id).await? else {
        return Ok(None);
    };
    if row.kind != InteractionKind::UserApproval.as_str() {
        return Ok(None);
    }
    let gated = row
        .data
        .request
        .as_ref()
        .and_then(|request| request.tool_call_id.as_deref())
        .filter(|gated| !gated.trim().is_empty());
    Ok(gated.filter(|gated| *gated != named).map(str::to_string))
}

pub(super) fn other_call_message(gated: &str) -> String {
    format!("names another tool call than its gate's ({gated}); send that id, or none")
}

/// What one answer came to, settled alike for a single respond and a batch item: a won
/// answer counts toward the resume backlog (its store announced it).
fn settle_answer(state: &AppState, outcome: RespondOutcome) -> RespondOutcome {
    if let RespondOutcome::Won { .. } = &outcome {
        state.backlog.answered(1);
    }
    outcome
}

/// A single respond's `NotPending` under an `Idempotency-Key`, looked up once more: a
/// concurrent request with the same key may have won after our check (its replay, or
/// "key reused"). A batch needs no second look: its transaction decided each item's
/// key in order, and a later item's key must not change an earlier item's outcome.
async fn recheck_key(
    state: &AppState,
    project_id: &str,
    id: &str,
    idempotency: Option<(&str, &str)>,
    outcome: RespondOutcome,
) -> ApiResult<RespondOutcome> {
    let (RespondOutcome::NotPending, Some((key, hash))) = (&outcome, idempotency) else {
        return Ok(outcome);
    };
    let replay = state
        .interactions
        .idempotent_replay(project_id, key, id, hash)
        .await?;
    Ok(match replay {
        Some(Ok(response)) => RespondOutcome::Replayed { response },
        Some(Err(())) => RespondOutcome::KeyReused,
        None => RespondOutcome::NotPending,
    })
}

/// The request hash an `Idempotency-Key` is bound to: the gate and the respond body,
/// as a single respond and a batch item compute it alike (a key used by one replays in
/// the other).
fn respond_hash(id: &str, raw_body: &serde_json::Value) -> String {
    let canonical = serde_json::to_string(raw_body).unwrap_or_default();
    hex::encode(Sha256::digest(format!("{id}\n{canonical}").as_bytes()))
}

fn batch_error(code: GatehouseCode, detail: impl Into<String>) -> Option<BatchError> {
    Some(BatchError {
        code: code.as_str().to_string(),
        detail: detail.into(),
    })
}

fn batch_result(
    id: &str,
    outcome: BatchOutcome,
    interaction: Option<SessionInteraction>,
    error: Option<BatchError>,
) -> BatchResult {
    BatchResult {
        id: id.to_string(),
        outcome,
        interaction,
        error,
        extra: JsonObject::new(),
    }
}

/// A batch item refused before it is answered: `invalid`, `VALIDATION_ERROR`, `detail`.
fn invalid_item(id: &str, detail: impl Into<String>) -> BatchResult {
    batch_result(
        id,
        BatchOutcome::Invalid,
        None,
        batch_error(GatehouseCode::ValidationError, detail),
    )
}

/// `POST /sessions/interactions/respond-batch` (a Gatehouse route, C4): answer up to
/// [`MAX_BATCH_ANSWERS`] gates in one request and one transaction, each item exactly as
/// the single respond would answer it after the items before it (duplicates included),
/// each with its own outcome.
async fn respond_batch(
    State(state): State<AppState>,
    ProjectId(project_id): ProjectId,
    ActorName(actor): ActorName,
    body: JsonBody<BatchRespondRequest>,
) -> ApiResult<Response> {
    let answers = &body.value.answers;
    if answers.is_empty() || answers.len() > MAX_BATCH_ANSWERS {
        return Err(ApiError::validation(
            &["body", "answers"],
            format!("must hold 1 to {MAX_BATCH_ANSWERS} answers (split a larger set into batches)"),
            "value_error",
        ));
    }
    // Validate each item; a refused item is answered `invalid`, the others go on.
    let mut results: Vec<Option<BatchResult>> = vec![None; answers.len()];
    struct Valid {
        index: usize,
        id: String,
        answer: JsonObject,
        key: Option<(String, String)>,
        digest: Option<String>,
    }
    let mut valid = Vec::with_capacity(answers.len());
    for (index, item) in answers.iter().enumerate() {
        let id = match parse_uuid(&item.id, &["body", "answers", "id"]) {
            Ok(id) => id,
            Err(_) => {
                results[index] = Some(invalid_item(&item.id, "id is not a UUID"));
                continue;
            }
        };
        let key = match item.idempotency_key.as_deref().map(str::trim) {
            None => None,
            Some(key) if key.is_empty() || key.len() > 255 || !key.is_ascii() => {
                results[index] = Some(invalid_item(
                    &item.id,
                    "idempotency_key must be 1 to 255 ASCII characters",
                ));
                continue;
            }
            Some(key) => {
                // The body a single respond of this answer sends: `{"answer": ...}`.
                let raw = body.raw["answers"][index]
                    .get("answer")
                    .map(|answer| serde_json::json!({ "answer": answer }))
                    .unwrap_or_else(|| serde_json::json!({}));
                Some((key.to_string(), respond_hash(&id, &raw)))
            }
        };
        let answer = item.answer.clone().unwrap_or_default();
        if let Some(gated) = other_call_named(&state, &project_id, &id, &answer).await? {
            let detail = format!("answer.tool_call_id {}", other_call_message(&gated));
            results[index] = Some(invalid_item(&item.id, detail));
            continue;
        }
        valid.push(Valid {
            index,
            id,
            answer,
            key,
            digest: item.digest.clone(),
        });
    }
    // In the request's order: the store decides each item after the ones before it
    // (and takes its locks in its own order).
    let items: Vec<BatchRespondItem<'_>> = valid
        .iter()
        .map(|v| BatchRespondItem {
            id: &v.id,
            answer: &v.answer,
            idempotency: v.key.as_ref().map(|(k, h)| (k.as_str(), h.as_str())),
            digest: v.digest.as_deref(),
        })
        .collect();
    record_admission(&state, state.backlog.admit().await);
    let mut attempt = 0;
    let outcomes = loop {
        attempt += 1;
        // A durable host admits each turn's gates as Agenta's durable respond does, and
        // delivers each continuation after its commit.
        let outcome = match state.config.agenta_contract {
            AgentaContract::Durable => {
                match state
                    .interactions
                    .respond_batch_durable(&project_id, &items, &actor)
                    .await
                {
                    Ok(batch) => {
                        deliver_continuations(&state, &project_id, &batch.continuations).await;
                        Ok(batch.outcomes)
                    }
                    Err(err) => Err(err),
                }
            }
            AgentaContract::Legacy => {
                state
                    .interactions
                    .respond_batch(&project_id, &items, &actor)
                    .await
            }
        };
        match outcome {
            Err(err) if err.is_concurrent_conflict() && attempt < 4 => continue,
            other => break other?,
        }
    };
    let mut answered_any = false;
    for (item, outcome) in valid.iter().zip(outcomes) {
        let sent_id = &answers[item.index].id;
        let result = match settle_answer(&state, outcome) {
            RespondOutcome::Won { record } => {
                answered_any = true;
                batch_result(
                    sent_id,
                    BatchOutcome::Answered,
                    Some(record.to_wire()),
                    None,
                )
            }
            RespondOutcome::Replayed { response } => replayed(sent_id, &response),
            RespondOutcome::KeyReused => batch_result(
                sent_id,
                BatchOutcome::Invalid,
                None,
                batch_error(
                    GatehouseCode::IdempotencyKeyReused,
                    "idempotency_key was already used for a different request",
                ),
            ),
            RespondOutcome::NotPending => batch_result(
                sent_id,
                BatchOutcome::AlreadyAnswered,
                None,
                batch_error(
                    GatehouseCode::AlreadyAnswered,
                    gatehouse_wire::error::messages::INTERACTION_NOT_PENDING,
                ),
            ),
            RespondOutcome::StaleGate => batch_result(
                sent_id,
                BatchOutcome::Invalid,
                None,
                batch_error(
                    GatehouseCode::StaleGate,
                    gatehouse_wire::error::messages::GATE_CHANGED,
                ),
            ),
            RespondOutcome::NotFound => batch_result(
                sent_id,
                BatchOutcome::NotFound,
                None,
                batch_error(
                    GatehouseCode::NotFound,
                    gatehouse_wire::error::messages::INTERACTION_NOT_FOUND,
                ),
            ),
        };
        results[item.index] = Some(result);
    }
    if answered_any {
        state.dispatch_wakeup.notify_waiters();
        state.dispatch_wakeup.notify_one();
    }
    let results: Vec<BatchResult> = results.into_iter().flatten().collect();
    Ok(agenta_api_json(&BatchRespondResponse {
        count: results.len() as u64,
        results,
    }))
}

/// Deliver the continuations a durable batch admitted (their resume jobs), after its
/// commits: a failure leaves one recoverable, redelivered by the dispatcher or by
/// `POST /sessions/{id}/continuations/resume`.
async fn deliver_continuations(
    state: &AppState,
    project_id: &str,
    continuations: &[(String, Vec<String>)],
) {
    for (command_id, gates) in continuations {
        state.backlog.answered(gates.len() as u64);
        if let Err(err) = state
            .interactions
            .deliver_continuation(project_id, gates)
            .await
        {
            tracing::warn!(error = %err, %command_id, code = "continuation_delivery_failed", "delivering the continuation failed; it is recoverable");
        }
    }
}

/// A replayed answer: the stored single-respond body's row.
fn replayed(id: &str, response: &str) -> BatchResult {
    let row = serde_json::from_str::<InteractionResponse>(response)
        .ok()
        .and_then(|r| r.interaction);
    batch_result(id, BatchOutcome::Answered, row, None)
}

async fn transition(
    State(state): State<AppState>,
    ProjectId(project_id): ProjectId,
    ActorName(actor): ActorName,
    body: JsonBody<TransitionRequest>,
) -> ApiResult<Response> {
    let body = body.value;
    check_gate_key(&body.session_id, &body.token)?;
    known_or_422(
        &["body", "status"],
        body.status.is_known(),
        InteractionStatus::KNOWN,
    )?;
    // Agenta's request model: a resolution only on `responded` or `resolved`.
    let problems = body.problems();
    if !problems.is_empty() {
        return Err(problems_error(&["body"], &problems));
    }
    if !matches!(
        body.status,
        InteractionStatus::Resolved | InteractionStatus::Cancelled | InteractionStatus::Responded
    ) {
        return Err(ApiError::validation(
            &["body", "status"],
            "a transition moves a row to `responded`, `resolved` or `cancelled`",
            "value_error",
        ));
    }
    // Agenta's router: `resolved` is for approval rows only, and an approval row's
    // resolution is exactly `{verdict, tool_call_id}`.
    let resolution = body.resolution.as_ref();
    if resolution.is_some() || body.status == InteractionStatus::Resolved {
        let Some(row) = state
            .interactions
            .find_by_token(&project_id, &body.session_id, &body.token)
            .await?
        else {
            return Err(ApiError::new(
                GatehouseCode::NotFound,
                "Interaction not found or already terminal",
            ));
        };
        let is_approval = row.kind == InteractionKind::UserApproval.as_str();
        if body.status == InteractionStatus::Resolved && !is_approval {
            return Err(ApiError::new(
                GatehouseCode::Conflict,
                format!("Resolved status is not valid for {} interactions", row.kind),
            ));
        }
        if let (Some(resolution), true) = (resolution, is_approval) {
            if let Err(problems) = Resolution::from_object(resolution) {
                return Err(problems_error(&["body", "resolution"], &problems));
            }
        }
    }
    let outcome = state
        .interactions
        .transition(
            &project_id,
            &body.session_id,
            &body.token,
            body.status.clone(),
            resolution,
            &actor,
        )
        .await?;
    match outcome {
        TransitionOutcome::Moved(record) => {
            // It may have completed the answers of a turn parked on several gates (its
            // store queued the resume).
            state.dispatch_wakeup.notify_one();
            Ok(json_text(record.response_body()))
        }
        TransitionOutcome::Conflict => Err(ApiError::not_pending()),
        TransitionOutcome::NotFound => Err(ApiError::interaction_not_found()),
    }
}

async fn cancel_stale(
    State(state): State<AppState>,
    ProjectId(project_id): ProjectId,
    ActorName(actor): ActorName,
    body: JsonBody<CancelStaleRequest>,
) -> ApiResult<Response> {
    let body = body.value;
    non_blank(&body.session_id, &["body", "session_id"])?;
    if body.tokens.as_ref().is_some_and(Vec::is_empty) {
        // "Only these tokens", and the list is empty: nothing to cancel.
        return Ok(json(&CancelStaleResponse { cancelled: 0 }));
    }
    let cancelled = state
        .interactions
        .cancel_stale(
            &project_id,
            &body.session_id,
            &body.turn_id,
            body.tokens.as_deref(),
            &actor,
        )
        .await?;
    Ok(json(&CancelStaleResponse {
        cancelled: cancelled.len() as u64,
    }))
}

fn sse_event(event: &WatchEvent) -> Event {
    let data = serde_json::to_string(event).unwrap_or_else(|_| "{}".to_string());
    Event::default().event(event.event_name()).data(data)
}

async fn watch(
    State(state): State<AppState>,
    ProjectId(project_id): ProjectId,
    request: axum::extract::Request,
) -> ApiResult<Response> {
    let (parts, _) = request.into_parts();
    let query = query_map(&parts);
    let session_id = match query.get("session_id").map(|s| s.trim()) {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => {
            return Err(ApiError::new(
                GatehouseCode::BadRequest,
                "session_id is required: GET /api/sessions/streams/watch?session_id=...",
            ))
        }
    };
    if !is_streamable_session_id(&session_id) {
        return Err(ApiError::new(
            GatehouseCode::BadRequest,
            "session_id contains invalid characters or is empty.",
        ));
    }
    // One of the open-stream slots (crate::limits) for as long as the stream is open.
    let Some(slot) = state.watchers.acquire() else {
        return Ok(crate::limits::streams_full(
            &state.watchers,
            crate::error::ErrorShape::Agenta,
        ));
    };
    let stream = slot.hold(watch_stream(state.clone(), project_id, session_id));
    let keep_alive = KeepAlive::new()
        .interval(state.config.heartbeat)
        .text("heartbeat");
    Ok(Sse::new(stream).keep_alive(keep_alive).into_response())
}

/// Agenta's allowlist for a session it streams (`^[a-zA-Z0-9_\-]{1,128}$`): anything
/// else is refused 400 before a stream opens.
pub(super) fn is_streamable_session_id(session_id: &str) -> bool {
    (1..=128).contains(&session_id.len())
        && session_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn watch_stream(
    state: AppState,
    project_id: String,
    session_id: String,
) -> impl Stream<Item = Result<Event, Infallible>> {
    // Its own session's channel: another session's event never wakes this stream.
    let receiver = state
        .announce
        .watch()
        .subscribe_session(&project_id, &session_id);
    let ready = WatchEvent::Ready {
        session_id: Some(session_id.clone()),
    };
    let ready = sse_event(&ready).retry(state.config.sse_retry);
    // Read by the connection as it writes (no task, no channel of its own: an idle
    // watcher is its connection, this stream's state and its session's subscription,
    // BENCHMARKS.md row 14). A watcher that falls behind lags on its session's channel
    // and is told to revalidate.
    let watching = Watching {
        receiver,
        shutdown: state.shutdown.clone(),
        session_id,
    };
    let events = futures::stream::unfold(watching, |mut watching| async move {
        let event = watching.next().await?;
        Some((Ok(sse_event(&event)), watching))
    });
    futures::stream::once(async move { Ok(ready) }).chain(events)
}

/// A watch stream's state between two events.
struct Watching {
    receiver: crate::announce::SessionReceiver,
    shutdown: tokio::sync::watch::Receiver<bool>,
    session_id: String,
}

impl Watching {
    /// The session's next event; `None` when the server shuts down.
    async fn next(&mut self) -> Option<WatchEvent> {
        tokio::select! {
            next = self.receiver.recv() => match next {
                Ok(bus) => Some(bus.event),
                // Missed events: tell the client to revalidate.
                Err(RecvError::Lagged(_)) => Some(WatchEvent::RecordsChanged {
                    session_id: self.session_id.clone(),
                }),
                Err(RecvError::Closed) => None,
            },
            _ = self.shutdown.wait_for(|stop| *stop) => None,
        }
    }
}

/// A stream fed by a producer task through a small channel; the task ends when the
/// client goes away (the receiver is dropped).
pub(super) fn async_stream<F, Fut>(producer: F) -> impl Stream<Item = Result<Event, Infallible>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<Event>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (sender, receiver) = tokio::sync::mpsc::channel::<Event>(64);
    tokio::spawn(producer(sender));
    tokio_stream::wrappers::ReceiverStream::new(receiver).map(Ok)
}

/// Count an answer that had to wait for the resume backlog.
pub(super) fn record_admission(state: &AppState, admission: super::admission::Admission) {
    use super::admission::Admission;
    match admission {
        Admission::AtOnce => {}
        Admission::AfterBacklogShrank(waited) => state.metrics.admission_wait(true, waited),
        Admission::WaitedTooLong(waited) => state.metrics.admission_wait(false, waited),
    }
}
