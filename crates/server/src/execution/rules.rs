//! The rules of B3 as pure functions over a session document: no I/O, no clock (the
//! caller passes `now`). The store loads a session, applies one of these, and writes the
//! result back with a compare-and-set on `revision`.

use chrono::{DateTime, Utc};
use gatehouse_wire::error::{messages, GatehouseCode};
use gatehouse_wire::execution::{
    Checkpoint, CheckpointProgress, ExecutionEvent, ExecutionEventType, ExecutionSession,
    ExecutionSessionStatus, Intervention, InterventionStatus, SessionOutcome,
    MAX_INTERVENTIONS_PER_SESSION, MAX_LEASE_MS, MIN_LEASE_MS,
};
use gatehouse_wire::JsonObject;
use serde_json::Value;

use crate::db::format_time;

/// A refusal of an execution-session operation: a machine code and the upstream message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ExecError {
    /// Gatehouse's machine code (decides the HTTP status).
    pub code: GatehouseCode,
    /// The message (AgentPlat's exact text where it has one).
    pub message: String,
}

impl ExecError {
    /// An error with `code` and `message`.
    pub fn new(code: GatehouseCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// 404 "Execution session not found".
    pub fn not_found() -> Self {
        Self::new(
            GatehouseCode::NotFound,
            messages::EXECUTION_SESSION_NOT_FOUND,
        )
    }

    /// 409 "Execution session revision conflict".
    pub fn revision_conflict() -> Self {
        Self::new(GatehouseCode::RevisionConflict, messages::REVISION_CONFLICT)
    }

    /// 409 "Execution session changed concurrently" (a lost compare-and-set race).
    pub fn changed_concurrently() -> Self {
        Self::new(
            GatehouseCode::RevisionConflict,
            messages::CHANGED_CONCURRENTLY,
        )
    }

    /// 409: the operation id is bound to another request.
    pub fn operation_conflict() -> Self {
        Self::new(
            GatehouseCode::OperationConflict,
            messages::OPERATION_CONFLICT,
        )
    }

    /// 409: the dispatch token does not own the claim.
    pub fn ownership_lost() -> Self {
        Self::new(
            GatehouseCode::DispatchOwnershipLost,
            messages::DISPATCH_OWNERSHIP_LOST,
        )
    }

    /// 409: already resolved to the other outcome.
    pub fn resolved_differently() -> Self {
        Self::new(
            GatehouseCode::ResolvedDifferently,
            messages::RESOLVED_DIFFERENTLY,
        )
    }

    /// True for the lost-race conflict (internal writers retry it).
    pub fn is_lost_race(&self) -> bool {
        self.code == GatehouseCode::RevisionConflict
            && self.message == messages::CHANGED_CONCURRENTLY
    }
}

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Append an event with the next sequence number.
pub fn push_event(
    session: &mut ExecutionSession,
    event_type: ExecutionEventType,
    now: DateTime<Utc>,
    operation_id: Option<&str>,
    checkpoint: Option<Checkpoint>,
    details: Option<Value>,
) {
    let sequence = session.events.last().map(|e| e.sequence).unwrap_or(0) + 1;
    session.events.push(ExecutionEvent {
        sequence,
        event_type,
        occurred_at: format_time(now),
        operation_id: operation_id.map(str::to_string),
        checkpoint,
        details,
        extra: JsonObject::new(),
    });
}

/// `POST .../interventions` as the route read it (B3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewIntervention {
    /// The session revision the caller saw; `None` when the body named none (or not as
    /// a non-negative integer), which matches no revision: only a replay succeeds
    /// without one, as in AgentPlat.
    pub expected_revision: Option<u64>,
    /// The caller's idempotency id.
    pub operation_id: String,
    /// What to do (stored trimmed, as AgentPlat stores it).
    pub instruction: String,
    /// Where to apply it.
    pub checkpoint: Checkpoint,
}

/// `POST .../authority` (a Gatehouse route) as the route read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorityChange {
    /// The session revision the caller saw; `None` as in [`NewIntervention`].
    pub expected_revision: Option<u64>,
    /// The authority revision now in force.
    pub authority_revision: Option<String>,
    /// The role revision now in force.
    pub role_revision: Option<String>,
}

/// What a write did: changed the document (store it, revision + 1), or nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied<T> {
    /// The document changed.
    Write(T),
    /// Nothing changed (a replay, a no-op); nothing is written.
    NoWrite(T),
}

/// A client's write needs the session still running and at the revision it read:
/// the state is checked first, then the revision. No `expected_revision` (the body named
/// none, or not as a non-negative integer) matches no revision, as in AgentPlat, which
/// compares what it was sent with the session's revision.
fn writable_at(
    session: &ExecutionSession,
    expected_revision: Option<u64>,
) -> Result<(), ExecError> {
    if session.status.is_terminal() {
        return Err(ExecError::new(
            GatehouseCode::SessionNotActive,
            messages::SESSION_NOT_ACTIVE,
        ));
    }
    if expected_revision != Some(session.revision) {
        return Err(ExecError::revision_conflict());
    }
    Ok(())
}

/// `POST .../interventions`: the idempotent, compare-and-set request (B3), in AgentPlat's
/// order: replay check (same operation id, instruction and requester returns the
/// session unchanged, even with a stale revision or another checkpoint, as AgentPlat
/// compares only those two), operation-id conflict, the 256 limit, state check,
/// revision check.
pub fn request_intervention(
    session: &mut ExecutionSession,
    expected_revision: Option<u64>,
    operation_id: &str,
    instruction: &str,
    checkpoint: Checkpoint,
    requester: &str,
    now: DateTime<Utc>,
) -> Result<Applied<()>, ExecError> {
    if let Some(existing) = session.intervention(operation_id) {
        let same = existing.instruction == instruction
            && existing.requested_by_participant_id == requester;
        return if same {
            Ok(Applied::NoWrite(()))
        } else {
            Err(ExecError::operation_conflict())
        };
    }
    if session.interventions.len() >= MAX_INTERVENTIONS_PER_SESSION {
        return Err(ExecError::new(
            GatehouseCode::InterventionLimit,
            messages::INTERVENTION_LIMIT,
        ));
    }
    writable_at(session, expected_revision)?;
    session.interventions.push(Intervention {
        operation_id: operation_id.to_string(),
        requested_by_participant_id: requester.to_string(),
        instruction: instruction.to_string(),
        checkpoint: checkpoint.clone(),
        status: InterventionStatus::Pending,
        attempts: 0,
        dispatch_token: None,
        dispatch_lease_expires_at: None,
        requested_at: format_time(now),
        resolved_at: None,
        resolution_reason: None,
        session_revision: Some(session.revision),
        authority_revision: session.authority_revision.clone(),
        role_revision: session.role_revision.clone(),
        extra: JsonObject::new(),
    });
    push_event(
        session,
        ExecutionEventType::InterventionRequested,
        now,
        Some(operation_id),
        Some(checkpoint),
        Some(
            serde_json::json!({ "instruction": instruction, "requestedByParticipantId": requester }),
        ),
    );
    Ok(Applied::Write(()))
}

/// A claim a dispatcher holds: apply the instruction, then resolve with the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The execution session.
    pub session_id: String,
    /// The claimed intervention.
    pub operation_id: String,
    /// What to apply.
    pub instruction: String,
    /// Where.
    pub checkpoint: Checkpoint,
    /// The token that must accompany the resolve.
    pub dispatch_token: String,
    /// Claims so far, this one included.
    pub attempts: u32,
    /// When the lease runs out (RFC 3339).
    pub lease_expires_at: String,
}

/// Check a lease length against B3's bounds (1 ms .. 300 s).
pub fn check_lease_ms(lease_ms: u64) -> Result<u64, ExecError> {
    if (MIN_LEASE_MS..=MAX_LEASE_MS).contains(&lease_ms) {
        Ok(lease_ms)
    } else {
        Err(ExecError::new(
            GatehouseCode::BadRequest,
            format!(
                "lease must be between {MIN_LEASE_MS} ms and {MAX_LEASE_MS} ms, not {lease_ms} ms"
            ),
        ))
    }
}

/// True when `intervention` may be claimed now: `pending`, or `dispatching` with an
/// expired (or unreadable) lease.
fn claimable(intervention: &Intervention, now: DateTime<Utc>) -> bool {
    match intervention.status {
        InterventionStatus::Pending => true,
        InterventionStatus::Dispatching => match intervention
            .dispatch_lease_expires_at
            .as_deref()
            .and_then(parse_time)
        {
            Some(expires) => expires <= now,
            None => true,
        },
        // Final, or a status this version does not know: never claimed (fail closed).
        _ => false,
    }
}

/// Why `intervention` may not be applied under the session's authority now: it was
/// requested under another authority or role revision (B1). `None` when it may.
pub fn authority_moved(session: &ExecutionSession, intervention: &Intervention) -> Option<String> {
    // A request stored by an older version recorded no binding: nothing to compare.
    intervention.session_revision?;
    let same = intervention.authority_revision == session.authority_revision
        && intervention.role_revision == session.role_revision;
    if same {
        return None;
    }
    let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".to_string());
    Some(format!(
        "requested under authority revision {} and role revision {}; the session is now under \
         authority revision {} and role revision {}: a request made before an authority change \
         is not applied under the new authority",
        show(&intervention.authority_revision),
        show(&intervention.role_revision),
        show(&session.authority_revision),
        show(&session.role_revision),
    ))
}

/// Reject every claimable intervention for `checkpoint` whose authority moved on since it
/// was requested ([`authority_moved`]), with that reason. True when one was.
fn reject_superseded(
    session: &mut ExecutionSession,
    checkpoint: &Checkpoint,
    now: DateTime<Utc>,
) -> bool {
    let mut superseded = Vec::new();
    for intervention in &session.interventions {
        if &intervention.checkpoint == checkpoint && claimable(intervention, now) {
            if let Some(why) = authority_moved(session, intervention) {
                superseded.push((intervention.operation_id.clone(), why));
            }
        }
    }
    for (operation_id, why) in &superseded {
        reject_now(session, operation_id, why, now);
    }
    !superseded.is_empty()
}

/// Mark one unresolved intervention `rejected` with `why` (and its event).
fn reject_now(session: &mut ExecutionSession, operation_id: &str, why: &str, now: DateTime<Utc>) {
    let Some(intervention) = session
        .interventions
        .iter_mut()
        .find(|i| i.operation_id == operation_id)
    else {
        return;
    };
    let checkpoint = intervention.checkpoint.clone();
    intervention.status = InterventionStatus::Rejected;
    intervention.dispatch_token = None;
    intervention.dispatch_lease_expires_at = None;
    intervention.resolved_at = Some(format_time(now));
    intervention.resolution_reason = Some(why.to_string());
    push_event(
        session,
        ExecutionEventType::InterventionRejected,
        now,
        Some(operation_id),
        Some(checkpoint),
        Some(serde_json::json!({ "reason": why })),
    );
}

/// Claim the first claimable intervention for `checkpoint` under a lease of `lease_ms`:
/// a fresh token, `attempts + 1`, an `intervention_claimed` event. `None` when there is
/// nothing to claim (the session is untouched).
pub fn claim(
    session: &mut ExecutionSession,
    checkpoint: Checkpoint,
    lease_ms: u64,
    now: DateTime<Utc>,
) -> Result<Applied<Option<Claim>>, ExecError> {
    claim_with_prefix(session, checkpoint, lease_ms, now, None, &[])
}

/// The dispatch-token prefix of the claims a run attempt makes at its own checkpoints:
/// `run:<run token>:`. A retry of the run recognises its dead predecessors' claims by it
/// ([`release_run_claims`]); claims of any other dispatcher carry plain tokens.
pub fn run_claim_prefix(run_token: &str) -> String {
    format!("run:{run_token}:")
}

/// True when any intervention is claimable for `checkpoint` now (a read-only look, so
/// that a checkpoint with nothing to do writes nothing).
pub fn has_claimable(
    session: &ExecutionSession,
    checkpoint: &Checkpoint,
    now: DateTime<Utc>,
    skip: &[String],
) -> bool {
    session.interventions.iter().any(|i| {
        &i.checkpoint == checkpoint && claimable(i, now) && !skip.contains(&i.operation_id)
    })
}

/// Make the claims of an earlier attempt of this run claimable at once (their leases
/// end now): that attempt died or was taken over, and the retry re-runs the step from
/// its last durable checkpoint, so it must meet those interventions again. Claims whose
/// token is not a run claim, or is `current`'s own, are left alone. True when one
/// changed.
pub fn release_run_claims(
    session: &mut ExecutionSession,
    current_prefix: &str,
    now: DateTime<Utc>,
) -> bool {
    let mut changed = false;
    for intervention in &mut session.interventions {
        let earlier_run_claim = intervention.status == InterventionStatus::Dispatching
            && intervention
                .dispatch_token
                .as_deref()
                .is_some_and(|t| t.starts_with("run:") && !t.starts_with(current_prefix));
        if earlier_run_claim {
            intervention.dispatch_lease_expires_at = Some(format_time(now));
            changed = true;
        }
    }
    changed
}

/// [`claim`], with a dispatch token that starts with `prefix` when given, passing over
/// the interventions in `skip` (a run attempt's own, applied but not yet resolved: they
/// are resolved with its commit, and must not be claimed twice meanwhile).
pub fn claim_with_prefix(
    session: &mut ExecutionSession,
    checkpoint: Checkpoint,
    lease_ms: u64,
    now: DateTime<Utc>,
    prefix: Option<&str>,
    skip: &[String],
) -> Result<Applied<Option<Claim>>, ExecError> {
    let lease_ms = check_lease_ms(lease_ms)?;
    // A request made under another authority is rejected, never claimed (B1).
    let rejected = reject_superseded(session, &checkpoint, now);
    let Some(index) = session.interventions.iter().position(|i| {
        i.checkpoint == checkpoint && claimable(i, now) && !skip.contains(&i.operation_id)
    }) else {
        return Ok(if rejected {
            Applied::Write(None)
        } else {
            Applied::NoWrite(None)
        });
    };
    let token = format!("{}{}", prefix.unwrap_or(""), uuid::Uuid::new_v4());
    let expires = now + chrono::Duration::milliseconds(i64::try_from(lease_ms).unwrap_or(i64::MAX));
    let session_id = session.session_id.clone();
    let intervention = &mut session.interventions[index];
    intervention.status = InterventionStatus::Dispatching;
    intervention.attempts = intervention.attempts.saturating_add(1);
    intervention.dispatch_token = Some(token.clone());
    intervention.dispatch_lease_expires_at = Some(format_time(expires));
    let claim = Claim {
        session_id,
        operation_id: intervention.operation_id.clone(),
        instruction: intervention.instruction.clone(),
        checkpoint: checkpoint.clone(),
        dispatch_token: token,
        attempts: intervention.attempts,
        lease_expires_at: format_time(expires),
    };
    push_event(
        session,
        ExecutionEventType::InterventionClaimed,
        now,
        Some(&claim.operation_id),
        Some(checkpoint),
        Some(
            serde_json::json!({ "attempts": claim.attempts, "leaseExpiresAt": claim.lease_expires_at }),
        ),
    );
    Ok(Applied::Write(Some(claim)))
}

/// How a dispatcher resolves its claim.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// Applied at the checkpoint; `details` is the evidence (step, effect).
    Applied {
        /// What the runtime did (e.g. `{"effect": "halted", "step": 2}`).
        details: Value,
    },
    /// Not applied.
    Rejected {
        /// Why.
        reason: String,
    },
}

impl Resolution {
    fn status(&self) -> InterventionStatus {
        match self {
            Self::Applied { .. } => InterventionStatus::Applied,
            Self::Rejected { .. } => InterventionStatus::Rejected,
        }
    }
}

/// Resolve a claimed intervention, once. Already resolved to the same outcome: a no-op;
/// to the other outcome: 409 `RESOLVED_DIFFERENTLY`. Otherwise the token must be the
/// current claim's, else 409 `DISPATCH_OWNERSHIP_LOST`.
pub fn resolve(
    session: &mut ExecutionSession,
    operation_id: &str,
    dispatch_token: &str,
    resolution: &Resolution,
    now: DateTime<Utc>,
) -> Result<Applied<()>, ExecError> {
    let Some(index) = session
        .interventions
        .iter()
        .position(|i| i.operation_id == operation_id)
    else {
        return Err(ExecError::new(
            GatehouseCode::NotFound,
            format!("Run intervention {operation_id:?} not found"),
        ));
    };
    let intervention = &mut session.interventions[index];
    if intervention.status.is_final() {
        return if intervention.status == resolution.status() {
            Ok(Applied::NoWrite(()))
        } else {
            Err(ExecError::resolved_differently())
        };
    }
    if intervention.status != InterventionStatus::Dispatching
        || intervention.dispatch_token.as_deref() != Some(dispatch_token)
    {
        return Err(ExecError::ownership_lost());
    }
    if matches!(resolution, Resolution::Applied { .. }) {
        // Claimed under one authority, resolved under another: not applied (B1).
        if let Some(why) = authority_moved(session, &session.interventions[index]) {
            return Err(ExecError::new(GatehouseCode::InvalidState, why));
        }
    }
    let intervention = &mut session.interventions[index];
    let checkpoint = intervention.checkpoint.clone();
    intervention.status = resolution.status();
    intervention.dispatch_token = None;
    intervention.dispatch_lease_expires_at = None;
    intervention.resolved_at = Some(format_time(now));
    let (event_type, details) = match resolution {
        Resolution::Applied { details } => {
            intervention.resolution_reason = details
                .get("effect")
                .and_then(Value::as_str)
                .map(|effect| format!("applied at {}: {effect}", checkpoint.as_str()));
            (ExecutionEventType::InterventionApplied, details.clone())
        }
        Resolution::Rejected { reason } => {
            intervention.resolution_reason = Some(reason.clone());
            (
                ExecutionEventType::InterventionRejected,
                serde_json::json!({ "reason": reason }),
            )
        }
    };
    push_event(
        session,
        event_type,
        now,
        Some(operation_id),
        Some(checkpoint),
        Some(details),
    );
    Ok(Applied::Write(()))
}

/// `POST .../authority` (a Gatehouse route): compare-and-set the session's authority and
/// role revisions. Interventions requested before the change are rejected when their
/// checkpoint comes ([`authority_moved`]). A session that ended refuses.
pub fn change_authority(
    session: &mut ExecutionSession,
    expected_revision: Option<u64>,
    authority_revision: Option<String>,
    role_revision: Option<String>,
) -> Result<Applied<()>, ExecError> {
    writable_at(session, expected_revision)?;
    if session.authority_revision == authority_revision && session.role_revision == role_revision {
        return Ok(Applied::NoWrite(()));
    }
    session.authority_revision = authority_revision;
    session.role_revision = role_revision;
    Ok(Applied::Write(()))
}

/// Count a reached checkpoint in `checkpointProgress`.
pub fn record_progress(session: &mut ExecutionSession, checkpoint: Checkpoint) {
    let progress = session
        .checkpoint_progress
        .get_or_insert_with(CheckpointProgress::default);
    match checkpoint {
        Checkpoint::PreStep => progress.pre_step += 1,
        Checkpoint::PostOutput => progress.post_output += 1,
        Checkpoint::PreAction => progress.pre_action += 1,
        // The server's own runs reach only the three it knows.
        _ => {}
    }
    progress.last = Some(checkpoint);
}

/// The reason an unreached intervention is rejected with when its run ends.
pub fn unreached_reason(intervention: &Intervention, status: &ExecutionSessionStatus) -> String {
    let how = match status {
        ExecutionSessionStatus::Completed => "completed",
        ExecutionSessionStatus::Failed => "failed",
        ExecutionSessionStatus::Canceled => "was canceled",
        _ => "ended",
    };
    format!(
        "the run {how} before reaching checkpoint {}",
        intervention.checkpoint.as_str()
    )
}

/// Terminal reconciliation: set the terminal status and outcome, reject every
/// intervention that never reached its checkpoint (with a reason), append
/// `session_reconciled`. A session already terminal is left alone.
pub fn reconcile(
    session: &mut ExecutionSession,
    status: ExecutionSessionStatus,
    reason: Option<&str>,
    details: Option<Value>,
    now: DateTime<Utc>,
) -> Applied<()> {
    if session.status.is_terminal() || !status.is_terminal() {
        return Applied::NoWrite(());
    }
    let mut rejected = Vec::new();
    for index in 0..session.interventions.len() {
        let intervention = &session.interventions[index];
        if intervention.status.is_final() {
            continue;
        }
        let why = unreached_reason(intervention, &status);
        let operation_id = intervention.operation_id.clone();
        reject_now(session, &operation_id, &why, now);
        rejected.push(Value::String(operation_id));
    }
    session.status = status.clone();
    session.outcome = Some(SessionOutcome {
        status: status.clone(),
        reason: reason.map(str::to_string),
        ended_at: Some(format_time(now)),
    });
    let mut event_details = serde_json::json!({
        "status": status.as_str(),
        "rejectedOperationIds": rejected,
    });
    if let Some(reason) = reason {
        event_details["reason"] = Value::String(reason.to_string());
    }
    if let Some(Value::Object(extra)) = details {
        if let Value::Object(map) = &mut event_details {
            map.extend(extra);
        }
    }
    push_event(
        session,
        ExecutionEventType::SessionReconciled,
        now,
        None,
        None,
        Some(event_details),
    );
    Applied::Write(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> ExecutionSession {
        ExecutionSession {
            tenant_id: "t".into(),
            room_id: "r".into(),
            session_id: "s".into(),
            run_id: "run".into(),
            task_id: "task".into(),
            participant_id: "agent".into(),
            agent_revision_id: Some("rev".into()),
            agent_revision_digest: Some("sha256:00".into()),
            predecessor_session_id: None,
            runtime_profile: None,
            authority_revision: None,
            role_revision: None,
            revision: 1,
            status: ExecutionSessionStatus::Active,
            checkpoint_progress: None,
            outcome: None,
            interventions: Vec::new(),
            events: Vec::new(),
            created_at: None,
            updated_at: None,
            extra: JsonObject::new(),
        }
    }

    #[test]
    fn replay_comes_before_the_revision_check() {
        let mut s = session();
        let now = Utc::now();
        let first =
            request_intervention(&mut s, Some(1), "op", "stop", Checkpoint::PreStep, "h", now);
        assert_eq!(first, Ok(Applied::Write(())));
        s.revision = 2;
        let replay =
            request_intervention(&mut s, Some(1), "op", "stop", Checkpoint::PreStep, "h", now);
        assert_eq!(replay, Ok(Applied::NoWrite(())));
        let other =
            request_intervention(&mut s, Some(2), "op", "go", Checkpoint::PreStep, "h", now);
        assert_eq!(other, Err(ExecError::operation_conflict()));
        let other_requester =
            request_intervention(&mut s, Some(2), "op", "stop", Checkpoint::PreStep, "x", now);
        assert_eq!(other_requester, Err(ExecError::operation_conflict()));
        let stale = request_intervention(
            &mut s,
            Some(1),
            "op2",
            "stop",
            Checkpoint::PreStep,
            "h",
            now,
        );
        assert_eq!(stale, Err(ExecError::revision_conflict()));
        // AgentPlat compares instruction and requester only: another checkpoint replays.
        let other_checkpoint = request_intervention(
            &mut s,
            Some(1),
            "op",
            "stop",
            Checkpoint::PostOutput,
            "h",
            now,
        );
        assert_eq!(other_checkpoint, Ok(Applied::NoWrite(())));
        // A session that ended refuses before the revision is looked at.
        s.status = ExecutionSessionStatus::Completed;
        let ended = request_intervention(
            &mut s,
            Some(1),
            "op3",
            "stop",
            Checkpoint::PreStep,
            "h",
            now,
        );
        assert_eq!(
            ended.map_err(|e| (e.code, e.message)),
            Err((
                GatehouseCode::SessionNotActive,
                messages::SESSION_NOT_ACTIVE.to_string()
            ))
        );
    }

    #[test]
    fn no_expected_revision_is_a_revision_conflict_unless_it_replays() {
        let mut s = session();
        let now = Utc::now();
        let first =
            request_intervention(&mut s, Some(1), "op", "stop", Checkpoint::PreStep, "h", now);
        assert_eq!(first, Ok(Applied::Write(())));
        let replay =
            request_intervention(&mut s, None, "op", "stop", Checkpoint::PreStep, "h", now);
        assert_eq!(replay, Ok(Applied::NoWrite(())));
        let new = request_intervention(&mut s, None, "op2", "go", Checkpoint::PreStep, "h", now);
        assert_eq!(new, Err(ExecError::revision_conflict()));
        assert_eq!(
            change_authority(&mut s, None, Some("a2".into()), None),
            Err(ExecError::revision_conflict())
        );
    }

    #[test]
    fn claim_resolve_once_and_lease_expiry() {
        let mut s = session();
        let now = Utc::now();
        let _ = request_intervention(&mut s, Some(1), "op", "hi", Checkpoint::PreAction, "h", now);
        assert_eq!(
            claim(&mut s, Checkpoint::PreStep, 50, now),
            Ok(Applied::NoWrite(None))
        );
        let Ok(Applied::Write(Some(first))) = claim(&mut s, Checkpoint::PreAction, 50, now) else {
            panic!("no claim")
        };
        assert_eq!(
            claim(&mut s, Checkpoint::PreAction, 50, now),
            Ok(Applied::NoWrite(None))
        );
        let later = now + chrono::Duration::milliseconds(51);
        let Ok(Applied::Write(Some(second))) = claim(&mut s, Checkpoint::PreAction, 50, later)
        else {
            panic!("no reclaim")
        };
        assert_eq!(second.attempts, 2);
        let applied = Resolution::Applied {
            details: serde_json::json!({"effect": "injected"}),
        };
        assert_eq!(
            resolve(&mut s, "op", &first.dispatch_token, &applied, later),
            Err(ExecError::ownership_lost())
        );
        assert_eq!(
            resolve(&mut s, "op", &second.dispatch_token, &applied, later),
            Ok(Applied::Write(()))
        );
        assert_eq!(
            resolve(&mut s, "op", &second.dispatch_token, &applied, later),
            Ok(Applied::NoWrite(()))
        );
        let rejected = Resolution::Rejected {
            reason: "no".into(),
        };
        assert_eq!(
            resolve(&mut s, "op", &second.dispatch_token, &rejected, later),
            Err(ExecError::resolved_differently())
        );
        assert_eq!(
            check_lease_ms(0).map_err(|e| e.code),
            Err(GatehouseCode::BadRequest)
        );
        assert!(check_lease_ms(300_001).is_err());
    }

    #[test]
    fn reconcile_rejects_unreached_with_reason() {
        let mut s = session();
        let now = Utc::now();
        let _ = request_intervention(&mut s, Some(1), "op", "hi", Checkpoint::PreAction, "h", now);
        let out = reconcile(&mut s, ExecutionSessionStatus::Completed, None, None, now);
        assert_eq!(out, Applied::Write(()));
        let i = &s.interventions[0];
        assert_eq!(i.status, InterventionStatus::Rejected);
        assert_eq!(
            i.resolution_reason.as_deref(),
            Some("the run completed before reaching checkpoint pre_action")
        );
        assert_eq!(
            s.events.last().map(|e| e.event_type.clone()),
            Some(ExecutionEventType::SessionReconciled)
        );
        let again = reconcile(&mut s, ExecutionSessionStatus::Failed, None, None, now);
        assert_eq!(again, Applied::NoWrite(()));
    }
}
