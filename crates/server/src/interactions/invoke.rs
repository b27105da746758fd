//! The service tier's routes: invoke, the turns listing, and workflow commits.

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use gatehouse_wire::error::GatehouseCode;
use gatehouse_wire::invoke::{
    CommitRevisionRequest, CommitRevisionResponse, EntityRef, InvokeRequest, InvokeResponse,
    RevisionRef, ToolRunEntry, Turn, TurnsResponse,
};
use gatehouse_wire::JsonObject;

use super::config::redact_for_storage;
use super::store::TurnRecord;
use super::turn::{begin_turn, end_turn, TurnInput, TurnWrite};
use crate::api::extract::{ActorName, JsonBody, ProjectId, PythonJsonBody};
use crate::api::reply::json;
use crate::db::StoreError;
use crate::error::{ApiError, ApiResult};
use crate::AppState;

/// The service-tier routes (relative to `/api`).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/invoke", post(invoke))
        .route("/sessions/{session_id}/turns", get(turns))
        .route("/workflows/revisions/commit", post(commit))
}

async fn invoke(
    State(state): State<AppState>,
    ProjectId(project_id): ProjectId,
    ActorName(actor): ActorName,
    body: PythonJsonBody<InvokeRequest>,
) -> ApiResult<Response> {
    // Read as Agenta's API reads it (Python's json.loads): the infinities are kept (a
    // stamp writes them as Python does), NaN is refused by the reader's typed form, and a
    // lone surrogate is refused here rather than changed. Agenta's API cannot post either
    // to its runner nor keep it in a row (CONTRACT.md, differences from Agenta).
    if let Some(path) = body.read.lone_surrogate_path() {
        let mut loc = vec![serde_json::Value::String("body".to_string())];
        loc.extend(path.into_iter().map(serde_json::Value::String));
        return Err(ApiError::validation_at(
            loc,
            "a lone surrogate escape (\\ud800-\\udfff without its pair) cannot be kept in a stored config",
            "value_error",
        ));
    }
    let mut request = body.value;
    if request
        .session_id
        .as_deref()
        .is_some_and(|s| s.trim().is_empty())
    {
        request.session_id = None;
    }
    if let Some(session_id) = &request.session_id {
        super::api::no_control_characters(session_id, &["body", "session_id"])?;
    }
    let session_id = request.session_id.clone().unwrap_or_else(crate::db::new_id);
    request.session_id = Some(session_id.clone());
    let executed = begin_turn(
        &state,
        &session_id,
        TurnInput {
            project_id: project_id.clone(),
            actor,
            invoke: request,
            resume: None,
            job: None,
            turn_id: None,
        },
    )
    .await?;
    let recorded = state
        .interactions
        .record_fresh_turn(&executed.turn, &executed.gates, executed.joined_write())
        .await;
    let (gates, cancelled) = match recorded {
        Ok(recorded) => recorded,
        Err(StoreError::Fenced(why)) => {
            end_turn(&state, &session_id, &executed, TurnWrite::NotWritten).await;
            return Err(ApiError::new(
                GatehouseCode::InvalidState,
                format!(
                    "The turn was not recorded: its execution session was taken over while it ran ({why}); nothing of it applies"
                ),
            ));
        }
        Err(err) => {
            end_turn(&state, &session_id, &executed, TurnWrite::NotWritten).await;
            return Err(err.into());
        }
    };
    for stale in &cancelled {
        tracing::info!(interaction_id = %stale.id, "cancelled a stale gate: a new turn started");
    }
    end_turn(&state, &session_id, &executed, TurnWrite::Written).await;
    let execution = executed.hook.execution().await;
    Ok(json(&InvokeResponse {
        status: executed.status,
        session_id,
        turn_id: executed.turn.id.clone(),
        model: executed.model,
        output: Some(executed.output),
        interaction_ids: gates.into_iter().map(|g| g.id).collect(),
        execution,
        extra: JsonObject::new(),
    }))
}

fn wire_turn(record: &TurnRecord) -> Turn {
    let mut extra = JsonObject::new();
    if let Some(by) = &record.resumed_by_turn_id {
        extra.insert(
            "resumed_by_turn_id".to_string(),
            serde_json::Value::String(by.clone()),
        );
    }
    Turn {
        turn_id: record.id.clone(),
        status: record.status(),
        model: record.model.clone(),
        output: record.output.clone(),
        resumed: record.resumed,
        resumed_from_interaction_id: record.resumed_from_interaction_id.clone(),
        created_at: Some(record.created_at.clone()),
        extra,
    }
}

async fn turns(
    State(state): State<AppState>,
    ProjectId(project_id): ProjectId,
    Path(session_id): Path<String>,
) -> ApiResult<Response> {
    let records = state
        .interactions
        .list_turns(&project_id, &session_id)
        .await?;
    if records.is_empty() {
        return Err(ApiError::new(GatehouseCode::NotFound, "Session not found"));
    }
    let tool_runs = state
        .interactions
        .tool_runs(&project_id, &session_id)
        .await?
        .into_iter()
        .map(|run| ToolRunEntry {
            tool_call_id: run.tool_call_id,
            tool: run.tool,
            turn_id: run.turn_id,
            interaction_id: run.interaction_id,
            ran_at: run.ran_at,
        })
        .collect();
    Ok(json(&TurnsResponse {
        session_id,
        count: records.len() as u64,
        turns: records.iter().map(wire_turn).collect(),
        tool_runs,
    }))
}

async fn commit(
    State(state): State<AppState>,
    ProjectId(project_id): ProjectId,
    body: JsonBody<CommitRevisionRequest>,
) -> ApiResult<Response> {
    let body = body.value;
    for (value, loc) in [
        (&body.workflow.slug, ["body", "workflow", "slug"]),
        (&body.variant.slug, ["body", "variant", "slug"]),
    ] {
        if value.trim().is_empty() {
            return Err(ApiError::validation(
                &loc,
                "must not be empty",
                "value_error",
            ));
        }
    }
    // Stored redacted: no secret the redaction strips is kept at rest.
    let parameters = redact_for_storage(body.parameters, "workflow revision");
    let (workflow, variant, revision) = state
        .interactions
        .commit_revision(
            &project_id,
            body.workflow.slug.trim(),
            body.variant.slug.trim(),
            &parameters,
        )
        .await?;
    Ok(json(&CommitRevisionResponse {
        workflow: EntityRef {
            id: workflow.id,
            slug: workflow.slug,
        },
        variant: EntityRef {
            id: variant.id,
            slug: variant.slug,
        },
        revision: RevisionRef {
            id: revision.id,
            slug: revision.slug,
            version: revision.version.to_string(),
        },
    }))
}
