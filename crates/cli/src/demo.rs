//! `gatehouse demo`: the whole story, end to end, against an in-process control plane on a
//! fresh SQLite file. Every call goes through `gatehouse-client` over HTTP, like a real
//! app. Each step checks what it claims; the first failed check stops the demo with a
//! non-zero exit naming the step.

use std::fmt::Display;
use std::time::{Duration, Instant};

use futures::StreamExt;
use gatehouse_client::{
    Answer, Client, Error as ClientError, InterventionHandle, InterventionOutcome,
    InterventionRequest, InterventionState, StopOutcome, StopRequested, WatchStream, WatchUpdate,
};
use gatehouse_server::{AgentaContract, ApiKey, RunningServer, ServerConfig};
use gatehouse_wire::capabilities::{CapabilitiesResponse, Capability};
use gatehouse_wire::execution::{Checkpoint, ExecutionEventType, ExecutionRef};
use gatehouse_wire::interaction::{InteractionStatus, Reference, References, SessionInteraction};
use gatehouse_wire::invoke::{
    CommitRevisionRequest, CommitRevisionResponse, InvokeData, InvokeInputs, InvokeRequest,
    SlugRef, TurnStatus,
};
use gatehouse_wire::run::ChatMessage;
use gatehouse_wire::sessions::{
    DurableEventPayload, SessionCommandState, SessionDurableEvent, SessionExecutionState,
};
use gatehouse_wire::JsonObject;
use serde_json::{json, Value};

use crate::exit::{CliError, CliResult};
use crate::output::{escape, outln};

/// The saved revision v1.
const MODEL_SAVED: &str = "openai/gpt-4.1";
/// Model A: the unsaved draft the turn runs under.
const MODEL_DRAFT: &str = "anthropic/claude-sonnet-4-5";
/// Model B: the revision that becomes HEAD while the turn waits at its gate.
const MODEL_HEAD: &str = "openai/gpt-5";
/// A credential in the draft config that must never reach the interaction row.
const SECRET: &str = "Bearer sk-demo-0000-never-stored";
const WORKFLOW: &str = "support-agent";
const VARIANT: &str = "support-agent.default";
const LAPTOP_KEY: &str = "demo-laptop-key";
const PHONE_KEY: &str = "demo-phone-key";
/// How long a step may wait for the server's background work (the resume dispatcher).
const STEP_WAIT: Duration = Duration::from_secs(15);
/// The slow turn Stop interrupts: this many steps of [`SLOW_STEP_MS`] (it would take 4 s
/// to the end; a Stop ends it at its next step boundary).
const SLOW_STEPS: usize = 40;
const SLOW_STEP_MS: u64 = 100;
/// What the slow turn says last, only if it ran to its end.
const SLOW_DONE: &str = "Reindexed all 40 batches.";

/// The words the story uses that a newcomer may not know, each explained in one line the
/// first time a step uses it (README.md's "Start here" explains the same words).
const GLOSSARY: &[(&str, &str)] = &[
    (
        "variant",
        "a named config of an agent (here support-agent.default); each commit of it is a numbered revision",
    ),
    (
        "HEAD",
        "a variant's newest revision: what a new turn of it runs unless told otherwise",
    ),
    (
        "draft",
        "a config edited but not committed: no revision holds it",
    ),
    (
        "stamped config",
        "the config the turn ran, credentials stripped, kept in its gate's row so the resume runs under it",
    ),
    (
        "execution session",
        "the server's record of one agent run, which instructions and Stops are addressed to; each change bumps its revision",
    ),
    (
        "room",
        "the conversation an execution session belongs to (here one per chat session; AgentPlat's word)",
    ),
    (
        "intervention",
        "an instruction sent to a running agent, to be applied at its next checkpoint",
    ),
    (
        "checkpoint",
        "a point in a run where a requested intervention may be applied (pre_step: before its next step)",
    ),
    (
        "durable contract",
        "Agenta's newer session API (v0.121 and later): Stop, a session snapshot and its events",
    ),
];

/// The numbered narrative: prints steps and turns a failed check into an error naming it.
struct Story {
    step: u32,
    title: String,
    /// The glossary terms already explained.
    glossed: Vec<&'static str>,
}

impl Story {
    fn new() -> Self {
        Self {
            step: 0,
            title: String::new(),
            glossed: Vec::new(),
        }
    }

    /// Explain `term` in one line, the first time only.
    fn gloss(&mut self, term: &'static str) {
        if self.glossed.contains(&term) {
            return;
        }
        if let Some((_, meaning)) = GLOSSARY.iter().find(|(name, _)| *name == term) {
            outln!("      · {term}: {meaning}");
            self.glossed.push(term);
        }
    }

    fn begin(&mut self, title: impl Into<String>) {
        self.step += 1;
        self.title = title.into();
        outln!();
        outln!("{:>2}. {}", self.step, self.title);
    }

    fn show(&self, label: &str, value: impl Display) {
        // A value is one line, whatever the server put in it.
        let value = value.to_string();
        outln!("      {label}: {}", escape(&value));
    }

    fn ok(&self, what: impl Display) {
        outln!("    ✓ {what}");
    }

    fn fail(&self, why: impl Display) -> CliError {
        CliError::other(format!(
            "demo failed at step {} ({}): {why}",
            self.step, self.title
        ))
    }

    fn check(&self, condition: bool, what: impl Display) -> CliResult {
        if condition {
            self.ok(what);
            Ok(())
        } else {
            Err(self.fail(format!("expected {what}")))
        }
    }
}

/// Run the demo.
pub async fn run() -> CliResult {
    let started = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix("gatehouse-demo-")
        .tempdir()
        .map_err(|err| CliError::other(format!("cannot create a temporary directory: {err}")))?;
    let mut story = Story::new();
    outln!("Gatehouse demo: an agent's turn waits at an approval gate (\"may I run this?\"), a");
    outln!("second device answers it, and the turn resumes under the config it was gated with.");
    outln!("Then an instruction and a Stop, each called done only on the server's evidence.");
    outln!("Everything runs in this process on throwaway SQLite files; the agent is the server's");
    outln!("scripted stand-in, which says a line and asks before it runs a tool.");

    let (server, laptop, phone) = start_control_plane(&mut story, dir.path()).await?;
    let outcome = tell_story(&mut story, &laptop, &phone, dir.path()).await;
    server.shutdown().await;
    outcome?;

    outln!();
    outln!(
        "All {} steps passed in {} ms.",
        story.step,
        started.elapsed().as_millis()
    );
    print_next_steps();
    Ok(())
}

/// Where a newcomer goes from here: a server of their own with gates to answer, then the
/// quick start in their language (README.md, "Start here").
fn print_next_steps() {
    outln!();
    outln!("next: answer gates from your own code.");
    outln!("  1. start a server with 3 gates to answer, and leave it running:");
    outln!("       gatehouse serve --demo-gates 3");
    outln!("     (from this checkout: cargo run -p gatehouse-cli -- serve --demo-gates 3)");
    outln!("  2. run the quick start for your language against it: README.md, \"Start here\"");
    outln!("     (Rust, Kotlin, Swift, Python, the command line)");
}

/// Steps 2 to 15, in order: 2 to 11 against the server of step 1, 12 to 15 each against a
/// host of its own. Each step is one function; what
/// a later step needs (the revision, the gate, the intervention) is handed on explicitly.
async fn tell_story(
    story: &mut Story,
    laptop: &Client,
    phone: &Client,
    dir: &std::path::Path,
) -> CliResult {
    let v1 = commit_first_revision(story, laptop).await?;
    let gate = invoke_draft_turn(story, laptop, &v1).await?;
    list_the_stamped_gate(story, laptop, &gate).await?;
    commit_new_head(story, laptop, &v1).await?;
    let watch = phone_approves(story, laptop, phone, &gate).await?;
    resume_under_draft(story, laptop, watch, &gate).await?;
    second_answer_is_already_answered(story, laptop, &gate).await?;
    let intervention = request_intervention_at_gate(story, laptop, &gate.session_id).await?;
    // While the run still waits (a session that ended refuses as not active first).
    stale_revision_is_refused(story, laptop, &intervention).await?;
    approve_and_apply_intervention(story, laptop, phone, &gate.session_id, &intervention).await?;
    host_without_execution(story, dir).await?;
    durable_host_stops_a_running_turn(story, dir).await
}

/// The first turn's session, the gate it parked at and the draft config it was sent.
struct ParkedTurn {
    session_id: String,
    gate_id: String,
    draft: JsonObject,
}

/// The intervention requested in step 9, for steps 10 and 11.
struct RequestedIntervention {
    /// The gate the second turn parked at.
    gate_id: String,
    /// The turn's execution session.
    execution_ref: ExecutionRef,
    handle: InterventionHandle,
    /// The session's revision the request was made at (stale once it is recorded).
    stale_revision: u64,
}

/// Step 1: the control plane on a fresh SQLite file, the two devices' clients, and the
/// capabilities the host serves.
async fn start_control_plane(
    story: &mut Story,
    dir: &std::path::Path,
) -> Result<(RunningServer, Client, Client), CliError> {
    story.begin(
        "Start a control plane (the server every app and agent talks to) in-process on a fresh SQLite file",
    );
    let db_path = dir.join("gatehouse-demo.db");
    let database_url = format!("sqlite://{}", db_path.display());
    let server = start_server(&database_url, true, AgentaContract::Legacy)
        .await
        .map_err(|err| story.fail(err))?;
    story.show("url", server.base_url());
    let project = uuid::Uuid::new_v4().to_string();
    let laptop = client(&server, LAPTOP_KEY, &project).map_err(|err| story.fail(err))?;
    let phone = client(&server, PHONE_KEY, &project).map_err(|err| story.fail(err))?;
    let caps = show_capabilities(story, &laptop).await?;
    story.check(
        caps.has(Capability::Interactions)
            && caps.has(Capability::Invoke)
            && caps.has(Capability::Execution),
        "the host serves interactions, invoke and execution",
    )?;
    Ok((server, laptop, phone))
}

/// Step 2: revision v1 becomes the variant's HEAD.
async fn commit_first_revision(
    story: &mut Story,
    laptop: &Client,
) -> Result<CommitRevisionResponse, CliError> {
    story.begin(format!(
        "Commit revision v1 of the variant {VARIANT} (model {MODEL_SAVED})"
    ));
    story.gloss("variant");
    story.gloss("HEAD");
    let v1 = commit(story, laptop, MODEL_SAVED).await?;
    story.check(v1.revision.version == "1", "the variant's HEAD is v1")?;
    Ok(v1)
}

/// Step 3: a turn under an unsaved draft parks at its approval gate.
async fn invoke_draft_turn(
    story: &mut Story,
    laptop: &Client,
    v1: &CommitRevisionResponse,
) -> Result<ParkedTurn, CliError> {
    story.begin(format!(
        "Invoke a turn under an unsaved draft config (model {MODEL_DRAFT}, a Notion connection with its secret header)"
    ));
    story.gloss("draft");
    let session_id = uuid::Uuid::new_v4().to_string();
    let draft = draft_config(MODEL_DRAFT, "Refund order 1042 for the customer.");
    let request = InvokeRequest {
        session_id: Some(session_id.clone()),
        references: Some(references(v1)),
        data: InvokeData {
            inputs: InvokeInputs {
                messages: vec![ChatMessage::text("user", "Please refund order 1042.")],
                extra: JsonObject::new(),
            },
            parameters: Some(draft.clone()),
            revision: None,
            extra: JsonObject::new(),
        },
    };
    let invoked = laptop
        .service()
        .invoke(&request)
        .await
        .map_err(|err| story.fail(err))?;
    story.show("turn", turn_status(invoked.status));
    show_agent_output(story, invoked.output.as_deref());
    story.check(
        invoked.status == TurnStatus::Parked,
        "the turn parked at an approval gate",
    )?;
    story.check(
        invoked.model.as_deref() == Some(MODEL_DRAFT),
        format!("the turn ran under the draft's model {MODEL_DRAFT}"),
    )?;
    let gate_id = match invoked.interaction_ids.as_slice() {
        [one] => one.clone(),
        other => return Err(story.fail(format!("expected one gate, got {}", other.len()))),
    };
    Ok(ParkedTurn {
        session_id,
        gate_id,
        draft,
    })
}

/// Step 4: the pending row carries the stamped draft config, credentials stripped.
async fn list_the_stamped_gate(story: &mut Story, laptop: &Client, gate: &ParkedTurn) -> CliResult {
    story.begin("The laptop lists pending gates; the gate's row carries the stamped config");
    story.gloss("stamped config");
    let gate_id = &gate.gate_id;
    let pending = laptop
        .interactions()
        .list_pending(Some(&gate.session_id))
        .await
        .map_err(|err| story.fail(err))?;
    let row = pending
        .iter()
        .find(|row| row.id.as_deref() == Some(gate_id.as_str()))
        .ok_or_else(|| story.fail(format!("gate {gate_id} is not listed as pending")))?;
    show_gate(story, row);
    let stamped = row
        .stamped_parameters()
        .ok_or_else(|| story.fail("the row has no data.parameters (no stamped config)"))?;
    let stamped = Value::Object(stamped.clone());
    show_stamp(&Value::Object(gate.draft.clone()), &stamped);
    story.check(
        stamped.pointer("/agent/llm/model") == Some(&json!(MODEL_DRAFT)),
        format!("data.parameters names the draft's model {MODEL_DRAFT}"),
    )?;
    let connection = stamped.pointer("/agent/mcps/0/connection");
    story.check(
        connection.is_some_and(|c| c.get("headers").is_none()),
        "the MCP connection's headers were stripped",
    )?;
    story.check(
        stamped.pointer("/agent/mcps/0/connection/credentials/headers/authorization")
            == Some(&json!("NOTION_TOKEN")),
        "the vault key name (credentials) survived",
    )?;
    let row_text = serde_json::to_string(row).map_err(|err| story.fail(err))?;
    story.check(
        !row_text.contains(SECRET),
        "the secret appears nowhere in the row",
    )?;
    story.check(
        row.data
            .as_ref()
            .and_then(|d| d.references.as_ref())
            .is_some_and(|r| r.workflow_revision.is_none()),
        "the row has no workflow_revision (the config was unsaved)",
    )
}

/// Step 5: v2 becomes HEAD while the turn waits.
async fn commit_new_head(
    story: &mut Story,
    laptop: &Client,
    v1: &CommitRevisionResponse,
) -> CliResult {
    story.begin(format!(
        "Commit revision v2 (model {MODEL_HEAD}) while the turn waits: the variant's HEAD moves"
    ));
    let v2 = commit(story, laptop, MODEL_HEAD).await?;
    story.check(
        v2.revision.version == "2" && v2.variant.id == v1.variant.id,
        format!("HEAD of {VARIANT} is now v2 ({MODEL_HEAD})"),
    )
}

/// Step 6: the phone's approval wins. The laptop's watch, connected before the answer so
/// no event is missed, is handed to step 7.
async fn phone_approves(
    story: &mut Story,
    laptop: &Client,
    phone: &Client,
    gate: &ParkedTurn,
) -> Result<WatchStream, CliError> {
    story.begin("A second client (the phone, another API key) approves the gate");
    let (watch, answered) =
        watch_then_approve(story, laptop, phone, &gate.session_id, &gate.gate_id).await?;
    story.show("status", status_of(&answered));
    story.check(
        matches!(
            answered.status,
            Some(InteractionStatus::Responded | InteractionStatus::Resolved)
        ),
        "the phone's answer won (pending -> responded)",
    )?;
    Ok(watch)
}

/// Step 7: the resumed turn runs under the draft's model, not HEAD's.
async fn resume_under_draft(
    story: &mut Story,
    laptop: &Client,
    mut watch: WatchStream,
    gate: &ParkedTurn,
) -> CliResult {
    story.begin(format!(
        "The turn resumes under the draft config (model {MODEL_DRAFT}), not HEAD ({MODEL_HEAD})"
    ));
    let gate_id = &gate.gate_id;
    let resolved = wait_resolved(laptop, &mut watch, gate_id)
        .await
        .map_err(|err| story.fail(err))?;
    drop(watch);
    story.show("gate", status_of(&resolved));
    let turns = laptop
        .service()
        .turns(&gate.session_id)
        .await
        .map_err(|err| story.fail(err))?;
    let resumed = turns
        .turns
        .iter()
        .find(|t| t.resumed && t.resumed_from_interaction_id.as_deref() == Some(gate_id.as_str()))
        .or_else(|| turns.turns.iter().rev().find(|t| t.resumed))
        .ok_or_else(|| story.fail("no resumed turn is listed"))?;
    story.show(
        "resumed turn",
        format!(
            "{}, model {}",
            turn_status(resumed.status),
            resumed.model.as_deref().unwrap_or("-")
        ),
    );
    show_agent_output(story, resumed.output.as_deref());
    story.check(
        resumed.model.as_deref() == Some(MODEL_DRAFT),
        format!("the resumed turn ran under {MODEL_DRAFT}"),
    )?;
    story.check(
        resumed.status == TurnStatus::Completed,
        "the resumed turn completed (the approved tool ran)",
    )
}

/// Step 8: a second answer to the settled gate is `AlreadyAnswered`.
async fn second_answer_is_already_answered(
    story: &mut Story,
    laptop: &Client,
    gate: &ParkedTurn,
) -> CliResult {
    story.begin("The laptop answers the same gate too: reported as already answered");
    match laptop
        .interactions()
        .respond(&gate.gate_id, &Answer::deny("too late"))
        .await
    {
        Err(ClientError::AlreadyAnswered { detail, .. }) => {
            story.show("server said", detail);
            story.ok("AlreadyAnswered (HTTP 409): benign, the gate is settled");
            Ok(())
        }
        Ok(row) => Err(story.fail(format!(
            "the second answer was accepted (status {})",
            status_of(&row)
        ))),
        Err(other) => Err(story.fail(format!("expected AlreadyAnswered, got: {other}"))),
    }
}

/// Step 9: while a second turn waits at its gate, the laptop requests an intervention;
/// it is reported requested, not applied.
async fn request_intervention_at_gate(
    story: &mut Story,
    laptop: &Client,
    session_id: &str,
) -> Result<RequestedIntervention, CliError> {
    story.begin("Invoke a second turn on the session; while it waits at its gate, the laptop requests an intervention");
    story.gloss("intervention");
    let mut parameters = draft_config(MODEL_DRAFT, "Emailing the customer a receipt.");
    if let Some(Value::Object(agent)) = parameters.get_mut("agent") {
        agent.insert(
            "script".to_string(),
            json!([
                {"say": "Emailing the customer a receipt."},
                {"tool": "Bash", "args": {"command": "mail --to customer@example.com receipt-1042.pdf"}},
                {"say": "Receipt sent."}
            ]),
        );
    }
    let invoked = laptop
        .service()
        .invoke(&InvokeRequest {
            session_id: Some(session_id.to_string()),
            references: None,
            data: InvokeData {
                inputs: InvokeInputs {
                    messages: vec![ChatMessage::text("user", "Please email me the receipt.")],
                    extra: JsonObject::new(),
                },
                parameters: Some(parameters),
                revision: None,
                extra: JsonObject::new(),
            },
        })
        .await
        .map_err(|err| story.fail(err))?;
    story.check(
        invoked.status == TurnStatus::Parked,
        "the second turn parked at its gate",
    )?;
    let gate_id = invoked
        .interaction_ids
        .first()
        .cloned()
        .ok_or_else(|| story.fail("the second turn opened no gate"))?;
    let execution_ref = invoked
        .execution
        .clone()
        .ok_or_else(|| story.fail("the invoke answer carries no execution session"))?;
    story.gloss("execution session");
    story.gloss("room");
    let execution = laptop.execution();
    let before = execution
        .get_session(&execution_ref.room_id, &execution_ref.session_id)
        .await
        .map_err(|err| story.fail(err))?;
    story.show(
        "execution session",
        format!(
            "{} in room {} ({}, revision {})",
            execution_ref.session_id,
            execution_ref.room_id,
            before.status.as_str(),
            before.revision
        ),
    );
    let instruction = "Quote refund number RF-1042 in every message.";
    let request = InterventionRequest::new(before.revision, instruction, Checkpoint::PreStep);
    let handle = execution
        .request_intervention(&execution_ref.room_id, &execution_ref.session_id, request)
        .await
        .map_err(|err| story.fail(err))?;
    story.gloss("checkpoint");
    story.show("instruction", format!("{instruction:?} at pre_step"));
    story.show(
        "state",
        crate::interventions::describe_state(&handle.state()),
    );
    story.check(
        handle.state() == InterventionState::Requested,
        "the client reports it as requested, not applied",
    )?;
    story.check(
        handle
            .session()
            .applied_evidence(handle.operation_id())
            .is_none(),
        "the session holds no intervention_applied event for it",
    )?;
    Ok(RequestedIntervention {
        gate_id,
        execution_ref,
        handle,
        stale_revision: before.revision,
    })
}

/// Step 11: the phone approves; the run applies the intervention at its next checkpoint,
/// with the server's evidence, and the instruction shows in the resumed turn.
async fn approve_and_apply_intervention(
    story: &mut Story,
    laptop: &Client,
    phone: &Client,
    session_id: &str,
    intervention: &RequestedIntervention,
) -> CliResult {
    story.begin(
        "The phone approves; the run reaches its pre_step checkpoint and applies the intervention",
    );
    let gate_id = &intervention.gate_id;
    let handle = &intervention.handle;
    let (mut watch, _answered) =
        watch_then_approve(story, laptop, phone, session_id, gate_id).await?;
    let outcome = handle
        .wait_applied(STEP_WAIT)
        .await
        .map_err(|err| story.fail(err))?;
    let evidence = match outcome {
        InterventionOutcome::Applied { evidence } => evidence,
        other => return Err(story.fail(format!("expected applied, got {other:?}"))),
    };
    story.show(
        "evidence",
        format!(
            "event #{} {} at {} (checkpoint {})",
            evidence.sequence,
            crate::interventions::event_type_name(&evidence),
            evidence.occurred_at,
            evidence
                .checkpoint
                .as_ref()
                .map(|c| c.as_str())
                .unwrap_or("-")
        ),
    );
    story.check(
        evidence.event_type == ExecutionEventType::InterventionApplied
            && evidence.operation_id.as_deref() == Some(handle.operation_id()),
        "applied, on the persisted intervention_applied event",
    )?;
    wait_resolved(laptop, &mut watch, gate_id)
        .await
        .map_err(|err| story.fail(err))?;
    drop(watch);
    let turns = laptop
        .service()
        .turns(session_id)
        .await
        .map_err(|err| story.fail(err))?;
    let resumed = turns
        .turns
        .iter()
        .find(|t| t.resumed_from_interaction_id.as_deref() == Some(gate_id.as_str()))
        .or_else(|| turns.turns.last())
        .ok_or_else(|| story.fail("no turn is listed"))?;
    let output = resumed.output.clone().unwrap_or_default();
    show_agent_output(story, Some(&output));
    story.check(
        output.contains("RF-1042"),
        "the instruction shows in the run's next step",
    )
}

/// Step 10: while the run still waits, a request carrying the revision step 9 read (stale
/// since step 9's request) is refused and changes nothing.
async fn stale_revision_is_refused(
    story: &mut Story,
    laptop: &Client,
    intervention: &RequestedIntervention,
) -> CliResult {
    let stale_revision = intervention.stale_revision;
    let execution_ref = &intervention.execution_ref;
    story.begin(format!(
        "Another request carrying the stale revision {stale_revision} is refused; nothing is added"
    ));
    let execution = laptop.execution();
    let current = execution
        .get_session(&execution_ref.room_id, &execution_ref.session_id)
        .await
        .map_err(|err| story.fail(err))?;
    story.show(
        "session",
        format!(
            "{} at revision {}",
            current.status.as_str(),
            current.revision
        ),
    );
    let stale = InterventionRequest::new(stale_revision, "stop", Checkpoint::PreStep);
    match execution
        .request_intervention(&execution_ref.room_id, &execution_ref.session_id, stale)
        .await
    {
        Err(err @ ClientError::RevisionConflict { .. }) => {
            story.show("client said", &err);
            story.ok("RevisionConflict (HTTP 409, REVISION_CONFLICT)");
        }
        Ok(handle) => {
            return Err(story.fail(format!(
                "the stale request was accepted as {}",
                handle.operation_id()
            )))
        }
        Err(other) => return Err(story.fail(format!("expected RevisionConflict, got: {other}"))),
    }
    let after = execution
        .get_session(&execution_ref.room_id, &execution_ref.session_id)
        .await
        .map_err(|err| story.fail(err))?;
    story.check(
        after.revision == current.revision
            && after.interventions.len() == current.interventions.len(),
        "the session is unchanged (same revision, same interventions)",
    )
}

/// Step 12: a second host, started without the execution service, on its own file.
async fn host_without_execution(story: &mut Story, dir: &std::path::Path) -> CliResult {
    story.begin(
        "A host started without the execution service reports the capability as unavailable",
    );
    let bare_url = format!("sqlite://{}", dir.join("no-execution.db").display());
    let bare = start_server(&bare_url, false, AgentaContract::Legacy)
        .await
        .map_err(|err| story.fail(err))?;
    let outcome = no_execution_checks(story, &bare).await;
    bare.shutdown().await;
    outcome
}

/// Step 12's checks, apart so the bare host is shut down whatever they find.
async fn no_execution_checks(story: &Story, bare: &RunningServer) -> CliResult {
    let project = uuid::Uuid::new_v4().to_string();
    let client = client(bare, LAPTOP_KEY, &project).map_err(|err| story.fail(err))?;
    for attempt in ["first call", "second call"] {
        match client.execution().get_session("room-1", "es-1").await {
            Err(err @ ClientError::CapabilityUnavailable { .. }) => {
                story.show(attempt, &err);
            }
            Ok(_) => return Err(story.fail("the host answered an execution session")),
            Err(other) => {
                return Err(story.fail(format!("expected CapabilityUnavailable, got: {other}")))
            }
        }
    }
    story.ok("CapabilityUnavailable: a fact about the host, cached, never retried");
    let caps = show_capabilities(story, &client).await?;
    story.check(
        !caps.has(Capability::Execution) && caps.has(Capability::Interactions),
        "GET /api/capabilities lists interactions but not execution",
    )
}

/// Steps 13 to 15: a host speaking Agenta's durable contract (its own SQLite file) runs a
/// slow turn; Stop is requested while it runs (requested, not stopped), followed until the
/// session's events say it stopped (with the evidence), and a Stop sent after the turn
/// ended is not reported as stopped.
async fn durable_host_stops_a_running_turn(story: &mut Story, dir: &std::path::Path) -> CliResult {
    story.begin(
        "A host speaking Agenta's durable contract runs a slow turn; the laptop asks it to Stop while it runs",
    );
    story.gloss("durable contract");
    let url = format!("sqlite://{}", dir.join("durable.db").display());
    let host = start_server(&url, true, AgentaContract::Durable)
        .await
        .map_err(|err| story.fail(err))?;
    let outcome = stop_scene(story, &host).await;
    host.shutdown().await;
    outcome
}

/// Steps 13 to 15's calls, apart so the durable host is shut down whatever they find.
async fn stop_scene(story: &mut Story, host: &RunningServer) -> CliResult {
    let project = uuid::Uuid::new_v4().to_string();
    let laptop = client(host, LAPTOP_KEY, &project).map_err(|err| story.fail(err))?;
    let caps = show_capabilities(story, &laptop).await?;
    story.check(
        caps.has(Capability::DurableApprovals),
        "the host lists durable_approvals (Agenta's durable contract: Stop, snapshot, events)",
    )?;
    let session_id = uuid::Uuid::new_v4().to_string();
    let turn = tokio::spawn({
        let laptop = laptop.clone();
        let request = slow_turn(&session_id);
        async move { laptop.service().invoke(&request).await }
    });
    let running = wait_running(&laptop, &session_id, &turn)
        .await
        .map_err(|err| story.fail(err))?;
    story.show(
        "turn",
        format!(
            "execution {running} running (a job of {} s)",
            SLOW_STEPS as u64 * SLOW_STEP_MS / 1000
        ),
    );
    let sessions = laptop.sessions();
    let stop = sessions
        .stop(&session_id, Some(&running))
        .await
        .map_err(|err| story.fail(err))?;
    story.show(
        "stop",
        crate::sessions::describe_requested(&session_id, &stop),
    );
    story.check(
        stop.is_stopping()
            && stop.execution.id.as_deref() == Some(running.as_str())
            && stop.command.state == SessionCommandState::Pending,
        "reported as requested: the 202 records a pending command against the running execution; it does not say the turn stopped",
    )?;
    follow_the_stop(story, &laptop, &session_id, &stop, turn).await?;
    late_stop_is_not_stopped(story, &laptop, &session_id, &running).await
}

/// Step 14: `wait_for_stop` follows the snapshot and the events until the Stop settles.
async fn follow_the_stop(
    story: &mut Story,
    laptop: &Client,
    session_id: &str,
    stop: &StopRequested,
    turn: tokio::task::JoinHandle<Result<gatehouse_wire::invoke::InvokeResponse, ClientError>>,
) -> CliResult {
    story.begin("The laptop follows the Stop until the session's events settle it: stopped, with its evidence");
    let outcome = laptop
        .sessions()
        .wait_for_stop(session_id, stop, STEP_WAIT)
        .await
        .map_err(|err| story.fail(err))?;
    story.show("outcome", crate::sessions::describe_outcome(&outcome));
    let event = match &outcome {
        StopOutcome::Stopped { event, .. } => event,
        other => return Err(story.fail(format!("expected stopped, got {other:?}"))),
    };
    show_stop_evidence(story, event);
    let names_this_stop = match event.typed_payload() {
        Ok(DurableEventPayload::ExecutionStopped(stopped)) => {
            stopped.command_id.as_deref() == Some(stop.command.id.as_str())
        }
        _ => false,
    };
    story.check(
        names_this_stop && Some(event.execution_id.as_str()) == stop.execution.id.as_deref(),
        "stopped, on the session's execution.stopped event naming this Stop's command",
    )?;
    // The turn's own call returns once it stopped; it never reached its last step.
    let answered = tokio::time::timeout(STEP_WAIT, turn)
        .await
        .map_err(|_| story.fail("the stopped turn's invoke did not return"))?
        .map_err(|err| story.fail(err))?;
    if let Err(err) = &answered {
        story.show("the turn's invoke call", err);
    }
    let turns = laptop
        .service()
        .turns(session_id)
        .await
        .map_err(|err| story.fail(err))?;
    for turn in &turns.turns {
        story.show("turn", turn_status(turn.status));
        show_agent_output(story, turn.output.as_deref());
    }
    story.check(
        !turns
            .turns
            .iter()
            .any(|t| t.output.as_deref().is_some_and(|o| o.contains(SLOW_DONE))),
        "the turn did not run to its end (its last step never ran)",
    )
}

/// What more a stop's evidence tells (such as the step), beyond what the outcome line
/// already names (the event, its time, the reason and the command).
fn show_stop_evidence(story: &Story, event: &SessionDurableEvent) {
    if let Ok(DurableEventPayload::ExecutionStopped(stopped)) = event.typed_payload() {
        for (key, value) in &stopped.extra {
            story.show(key, value);
        }
    }
}

/// Step 15: Stops sent after the turn ended: the one naming it, the one naming none.
async fn late_stop_is_not_stopped(
    story: &mut Story,
    laptop: &Client,
    session_id: &str,
    ended: &str,
) -> CliResult {
    story.begin(
        "A second Stop, sent after the turn ended, is reported as not running, never as stopped",
    );
    let sessions = laptop.sessions();
    // As from a screen that still shows the ended turn.
    let named = match sessions.stop(session_id, Some(ended)).await {
        Err(ClientError::StaleExecution {
            current_execution_id,
            ..
        }) => match current_execution_id {
            None => "not running: the turn it names has ended and nothing runs now".to_string(),
            Some(newer) => format!("superseded: execution {newer} runs now"),
        },
        Err(other) => return Err(story.fail(format!("the late Stop failed: {other}"))),
        Ok(stop) => settled_late(story, &sessions, session_id, &stop).await?,
    };
    story.show(format!("Stop of execution {ended}").as_str(), &named);
    // Naming no execution: whatever runs now, which is nothing.
    let stop = sessions
        .stop(session_id, None)
        .await
        .map_err(|err| story.fail(err))?;
    story.show(
        "Stop naming none",
        crate::sessions::describe_requested(session_id, &stop),
    );
    let unnamed = settled_late(story, &sessions, session_id, &stop).await?;
    story.show("outcome", &unnamed);
    story.check(
        !stop.is_stopping(),
        "not running (HTTP 200, command obsolete): neither late Stop is called stopped",
    )
}

/// How a late Stop settled, in words; a late Stop reported stopped fails the step.
async fn settled_late(
    story: &Story,
    sessions: &gatehouse_client::Sessions,
    session_id: &str,
    stop: &StopRequested,
) -> Result<String, CliError> {
    let outcome = sessions
        .wait_for_stop(session_id, stop, STEP_WAIT)
        .await
        .map_err(|err| story.fail(err))?;
    match outcome {
        StopOutcome::NotRunning => Ok("not running".to_string()),
        StopOutcome::SupersededByNewerTurn {
            running_execution_id,
        } => Ok(format!(
            "superseded: execution {running_execution_id} runs now"
        )),
        other => Err(story.fail(format!(
            "a Stop sent after the turn ended was reported as {}",
            crate::sessions::describe_outcome(&other)
        ))),
    }
}

/// The slow turn: it says what it does, works [`SLOW_STEPS`] steps of [`SLOW_STEP_MS`],
/// then says [`SLOW_DONE`]. Nothing in it asks for approval.
fn slow_turn(session_id: &str) -> InvokeRequest {
    let mut script = vec![json!({"say": "Reindexing the catalogue: 40 batches."})];
    script.extend((0..SLOW_STEPS).map(|_| json!({"wait_ms": SLOW_STEP_MS})));
    script.push(json!({ "say": SLOW_DONE }));
    let mut agent = support_agent(MODEL_DRAFT);
    agent.insert(
        "runner".to_string(),
        json!({"permissions": {"default": "allow"}}),
    );
    agent.insert("script".to_string(), Value::Array(script));
    InvokeRequest {
        session_id: Some(session_id.to_string()),
        references: None,
        data: InvokeData {
            inputs: InvokeInputs {
                messages: vec![ChatMessage::text("user", "Reindex the catalogue.")],
                extra: JsonObject::new(),
            },
            parameters: Some(agent_parameters(agent)),
            revision: None,
            extra: JsonObject::new(),
        },
    }
}

/// Wait until the session's snapshot shows a running execution (the slow turn), and
/// return its id; fails if the turn's call returns first.
async fn wait_running(
    laptop: &Client,
    session_id: &str,
    turn: &tokio::task::JoinHandle<Result<gatehouse_wire::invoke::InvokeResponse, ClientError>>,
) -> Result<String, String> {
    let deadline = Instant::now() + STEP_WAIT;
    loop {
        let snapshot = laptop
            .sessions()
            .snapshot(session_id)
            .await
            .map_err(|err| format!("reading the session's snapshot failed: {err}"))?;
        let state = snapshot.execution_state;
        if let (Some(id), SessionExecutionState::Running) = (state.id, state.state) {
            return Ok(id);
        }
        if turn.is_finished() {
            return Err("the slow turn ended before it was seen running".to_string());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the slow turn was not seen running within {STEP_WAIT:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A control plane on `database_url`. Steps 1 to 11 show the contract before Agenta's
/// durable one (a second answer is 409 "already answered"), so their host is pinned to
/// it; steps 13 to 15 show the durable Stop on a host of their own.
async fn start_server(
    database_url: &str,
    execution: bool,
    contract: AgentaContract,
) -> Result<RunningServer, String> {
    let mut config = ServerConfig::new(database_url);
    config.api_keys = vec![
        ApiKey::new("laptop", LAPTOP_KEY),
        ApiKey::new("phone", PHONE_KEY),
    ];
    config.execution = execution;
    config.agenta_contract = contract;
    gatehouse_server::start(config)
        .await
        .map_err(|err| format!("cannot start the control plane: {err}"))
}

fn client(server: &RunningServer, key: &str, project: &str) -> Result<Client, ClientError> {
    Client::builder(server.base_url())
        .api_key(key)
        .project_id(project)
        .timeout(Duration::from_secs(10))
        .build()
}

/// Commit a revision of the variant whose agent runs `model` (it becomes HEAD) and show it.
async fn commit(
    story: &Story,
    client: &Client,
    model: &str,
) -> Result<CommitRevisionResponse, CliError> {
    let parameters = agent_parameters(support_agent(model));
    let committed = client
        .service()
        .commit_revision(&CommitRevisionRequest {
            workflow: SlugRef {
                slug: WORKFLOW.to_string(),
            },
            variant: SlugRef {
                slug: VARIANT.to_string(),
            },
            parameters,
        })
        .await
        .map_err(|err| story.fail(err))?;
    Ok(committed)
}

/// Read the capabilities `client`'s host serves and show their names.
async fn show_capabilities(
    story: &Story,
    client: &Client,
) -> Result<CapabilitiesResponse, CliError> {
    let caps = client
        .capabilities()
        .get()
        .await
        .map_err(|err| story.fail(err))?;
    let names: Vec<&str> = caps.capabilities.iter().map(|c| c.as_str()).collect();
    story.show("capabilities", names.join(", "));
    Ok(caps)
}

/// Workflow and variant references (no revision: the draft is unsaved).
fn references(committed: &CommitRevisionResponse) -> References {
    let reference = |id: &str, slug: &str| Reference {
        id: Some(id.to_string()),
        slug: Some(slug.to_string()),
        version: None,
        extra: JsonObject::new(),
    };
    References {
        workflow: Some(reference(&committed.workflow.id, &committed.workflow.slug)),
        workflow_variant: Some(reference(&committed.variant.id, &committed.variant.slug)),
        workflow_revision: None,
        extra: JsonObject::new(),
    }
}

/// The unsaved draft: model, `ask` permissions, a script with one gated tool call, and an
/// MCP connection carrying a static Authorization header next to a vault key name.
fn draft_config(model: &str, task: &str) -> JsonObject {
    let mut agent = support_agent(model);
    agent.insert(
        "mcps".to_string(),
        json!([{
            "name": "notion",
            "connection": {
                "type": "http",
                "url": "https://mcp.notion.example/sse",
                "headers": {"Authorization": SECRET},
                "credentials": {
                    "type": "header_secret_refs",
                    "headers": {"authorization": "NOTION_TOKEN"}
                }
            }
        }]),
    );
    agent.insert(
        "script".to_string(),
        json!([
            {"say": task},
            {"tool": "Bash", "args": {"command": "billing refund --order 1042"}},
            {"say": "Refund issued."}
        ]),
    );
    agent_parameters(agent)
}

/// The agent every config here starts from: the support agent under `model`, asking
/// before it runs a tool.
fn support_agent(model: &str) -> JsonObject {
    let mut agent = JsonObject::new();
    agent.insert(
        "instructions".to_string(),
        json!("You are the support agent."),
    );
    agent.insert("llm".to_string(), json!({"model": model}));
    agent.insert(
        "runner".to_string(),
        json!({"permissions": {"default": "ask"}}),
    );
    agent
}

/// Config parameters holding `agent`.
fn agent_parameters(agent: JsonObject) -> JsonObject {
    let mut parameters = JsonObject::new();
    parameters.insert("agent".to_string(), Value::Object(agent));
    parameters
}

fn turn_status(status: TurnStatus) -> &'static str {
    match status {
        TurnStatus::Parked => "parked",
        TurnStatus::Completed => "completed",
        TurnStatus::Failed => "failed",
    }
}

fn status_of(row: &SessionInteraction) -> &str {
    row.status.as_ref().map(|s| s.as_str()).unwrap_or("-")
}

/// The gate in one line: its id, status and the tool call it asks to run.
fn show_gate(story: &Story, row: &SessionInteraction) {
    let request = row.data.as_ref().and_then(|d| d.request.as_ref());
    let asks = request.map(|r| {
        format!(
            "{} {}",
            r.tool.as_deref().unwrap_or("-"),
            r.args.as_ref().map(Value::to_string).unwrap_or_default()
        )
    });
    story.show(
        "gate",
        format!(
            "{} ({}), asks to run {}",
            row.id.as_deref().unwrap_or("-"),
            status_of(row),
            asks.as_deref().unwrap_or("-")
        ),
    );
}

/// The three fields of the draft that tell the stamp's story, as sent and as the gate's
/// row keeps them: the model kept, the secret header stripped, the vault key name kept.
/// The rest of the config (the scripted agent's steps) is the same on both sides.
const STAMP_FIELDS: [(&str, &str); 3] = [
    ("agent.llm.model", "/agent/llm/model"),
    (
        "agent.mcps[0].connection.headers",
        "/agent/mcps/0/connection/headers",
    ),
    (
        "agent.mcps[0].connection.credentials.headers",
        "/agent/mcps/0/connection/credentials/headers",
    ),
];

/// The stamp as a before/after: one line per [`STAMP_FIELDS`] entry, the value sent (its
/// secret masked: the demo prints no secret) and the value in the row, or "(stripped)".
fn show_stamp(sent: &Value, stamped: &Value) {
    outln!("      before (the draft sent) -> after (the gate row's data.parameters):");
    let width = STAMP_FIELDS
        .iter()
        .map(|(name, _)| name.len())
        .max()
        .unwrap_or(0);
    for (name, pointer) in STAMP_FIELDS {
        let before = sent.pointer(pointer).map(mask_secret);
        let after = stamped.pointer(pointer).map(Value::to_string);
        outln!(
            "        {name:<width$}  {} -> {}",
            before.as_deref().unwrap_or("(absent)"),
            after.as_deref().unwrap_or("(stripped)")
        );
    }
}

/// `value` as JSON text with the demo's secret masked.
fn mask_secret(value: &Value) -> String {
    value.to_string().replace(SECRET, "Bearer ****")
}

/// The agent's output lines. The scripted agent prefixes each with the model it ran under
/// (`[model=...] `); the demo shows the model on its own line, so the prefix is dropped.
fn show_agent_output(story: &Story, output: Option<&str>) {
    for line in output.unwrap_or_default().lines() {
        let said = match line.strip_prefix("[model=") {
            Some(rest) => rest.split_once("] ").map_or(line, |(_, said)| said),
            None => line,
        };
        story.show("agent said", said);
    }
}

/// The laptop watches `session_id` (connected before the answer, so no event is missed);
/// then the phone approves `gate_id`. The watch, and the phone's answered row.
async fn watch_then_approve(
    story: &Story,
    laptop: &Client,
    phone: &Client,
    session_id: &str,
    gate_id: &str,
) -> Result<(WatchStream, SessionInteraction), CliError> {
    let mut watch = laptop.interactions().watch(session_id);
    wait_connected(&mut watch)
        .await
        .map_err(|err| story.fail(err))?;
    let answered = phone
        .interactions()
        .respond(gate_id, &Answer::approve())
        .await
        .map_err(|err| story.fail(err))?;
    Ok((watch, answered))
}

/// Wait for the watch stream's first (re)connect, so no later event is missed.
async fn wait_connected(watch: &mut gatehouse_client::WatchStream) -> Result<(), String> {
    let connect = async {
        while let Some(update) = watch.next().await {
            match update {
                Ok(WatchUpdate::Connected) => return Ok(()),
                Ok(_) => continue,
                Err(err) => return Err(format!("the watch stream failed: {err}")),
            }
        }
        Err("the watch stream ended before connecting".to_string())
    };
    tokio::time::timeout(STEP_WAIT, connect)
        .await
        .map_err(|_| format!("the watch stream did not connect within {STEP_WAIT:?}"))?
}

/// Wait until the gate is `resolved` (the dispatcher resumed the turn): re-read the row
/// after every watch event.
async fn wait_resolved(
    client: &Client,
    watch: &mut gatehouse_client::WatchStream,
    gate_id: &str,
) -> Result<SessionInteraction, String> {
    let wait = async {
        loop {
            let row = client
                .interactions()
                .get(gate_id)
                .await
                .map_err(|err| err.to_string())?;
            if row.status == Some(InteractionStatus::Resolved) {
                return Ok(row);
            }
            match watch.next().await {
                Some(Ok(_)) => continue,
                Some(Err(err)) => return Err(format!("the watch stream failed: {err}")),
                None => return Err("the watch stream ended".to_string()),
            }
        }
    };
    tokio::time::timeout(STEP_WAIT, wait)
        .await
        .map_err(|_| format!("the gate was not resolved within {STEP_WAIT:?}"))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::Exit;

    #[test]
    fn a_failed_check_names_the_step_and_exits_1() {
        let mut story = Story::new();
        story.begin("First");
        assert!(story.check(true, "fine").is_ok());
        story.begin("Second step");
        let err = story
            .check(false, "the turn parked")
            .expect_err("a false check fails");
        assert_eq!(err.exit, Exit::Other);
        assert_eq!(
            err.message,
            "demo failed at step 2 (Second step): expected the turn parked"
        );
        let other = story.fail("boom");
        assert_eq!(other.message, "demo failed at step 2 (Second step): boom");
    }

    #[test]
    fn the_draft_carries_a_secret_that_stamping_strips() {
        let draft = Value::Object(draft_config(MODEL_DRAFT, "task"));
        assert!(draft.to_string().contains(SECRET));
        let stamped = gatehouse_wire::effective::stamp_effective_parameters(
            draft,
            &gatehouse_wire::effective::StampPolicy::default(),
        )
        .expect("the draft is stamped");
        assert!(!Value::Object(stamped.parameters)
            .to_string()
            .contains(SECRET));
        assert!(stamped.stripped.contains(&"connection.headers".to_string()));
    }
}
