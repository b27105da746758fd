//! The store's two guards behind "one resume per parked turn, one run per approved call"
//! (issue 23, items 1 and 2), below the HTTP routes: a parked turn is claimed by one
//! answered gate's resume, fenced by its lease, and only that resume records itself on
//! the turn; the tool-run ledger compares the call (tool and arguments) under a key, not
//! only the key. `GATEHOUSE_TEST_DATABASE_URL=postgres://...` runs them on PostgreSQL.

use gatehouse_server::interactions::store::{
    args_digest, ClaimedJob, CompleteOutcome, InteractionStore, JobCompletion, NewTurn, ToolRun,
    ToolRunFence, ToolRunPermit, TurnClaim,
};
use serde_json::json;

const PROJECT: &str = "p";
/// The agent session of `crate::common::approved_gate`.
const SESSION: &str = "s";

fn turn(id: &str, status: &str, parked: bool) -> NewTurn {
    NewTurn {
        id: id.into(),
        project_id: PROJECT.into(),
        session_id: SESSION.into(),
        status: status.into(),
        model: None,
        output: Some(format!("turn {id}")),
        resumed_from_interaction_id: None,
        messages: Vec::new(),
        parked_state: parked.then(|| json!({"config_redacted": true})),
        stopped_by: None,
    }
}

/// Claim every queued job for a minute: `interaction id -> job`.
async fn claim_all(store: &InteractionStore) -> std::collections::HashMap<String, ClaimedJob> {
    let mut jobs = std::collections::HashMap::new();
    while let Some(job) = store.claim_job(60_000).await.unwrap() {
        jobs.insert(job.interaction_id.clone(), job);
    }
    jobs
}

fn completion(resume_turn: &str, parked_turn: &str) -> JobCompletion {
    let mut resolution = serde_json::Map::new();
    resolution.insert("verdict".into(), "approved".into());
    JobCompletion {
        turn: Some(turn(resume_turn, "completed", false)),
        parked_turn_id: Some(parked_turn.into()),
        resolution: Some(resolution),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_parked_turn_is_claimed_once_and_only_its_claimant_completes() {
    let (_dir, store) = crate::common::fresh_store("claims.db").await;
    store
        .record_turn(&turn("parked", "parked", true), None)
        .await
        .unwrap();
    let first = crate::common::approved_gate(&store, PROJECT, "tok-1", Some("parked")).await;
    let second = crate::common::approved_gate(&store, PROJECT, "tok-2", Some("parked")).await;
    let jobs = claim_all(&store).await;
    let (a, b) = (&jobs[&first], &jobs[&second]);

    assert_eq!(
        store.claim_parked_turn(a, "parked").await.unwrap(),
        TurnClaim::Claimed
    );
    // Every attempt of the same job holds the claim.
    assert_eq!(
        store.claim_parked_turn(a, "parked").await.unwrap(),
        TurnClaim::Claimed
    );
    assert_eq!(
        store.claim_parked_turn(b, "parked").await.unwrap(),
        TurnClaim::ClaimedByOther {
            interaction_id: Some(first.clone()),
            resumed_by_turn_id: None,
        }
    );
    // A completion that does not hold the claim writes nothing.
    assert!(matches!(
        store
            .complete_job(b, &completion("resume-b", "parked"), None)
            .await
            .unwrap(),
        CompleteOutcome::LeaseLost
    ));
    assert!(store.get_turn(PROJECT, "resume-b").await.unwrap().is_none());
    let (state, _, _) = store.job_state(&second).await.unwrap().unwrap();
    assert_eq!(state, "queued");

    assert!(matches!(
        store
            .complete_job(a, &completion("resume-a", "parked"), None)
            .await
            .unwrap(),
        CompleteOutcome::Completed { .. }
    ));
    let parked = store.get_turn(PROJECT, "parked").await.unwrap().unwrap();
    assert_eq!(parked.resumed_by_turn_id.as_deref(), Some("resume-a"));
    assert_eq!(
        store.claim_parked_turn(b, "parked").await.unwrap(),
        TurnClaim::ClaimedByOther {
            interaction_id: Some(first),
            resumed_by_turn_id: Some("resume-a".into()),
        }
    );
}

#[tokio::test]
async fn a_claim_needs_a_live_lease() {
    let (_dir, store) = crate::common::fresh_store("claims.db").await;
    store
        .record_turn(&turn("parked-stale", "parked", true), None)
        .await
        .unwrap();
    crate::common::approved_gate(&store, PROJECT, "tok-stale", Some("parked-stale")).await;
    // Claimed with a lease that is already over (a stalled worker).
    let stale = store.claim_job(-1).await.unwrap().expect("a job");
    assert_eq!(
        store
            .claim_parked_turn(&stale, "parked-stale")
            .await
            .unwrap(),
        TurnClaim::LeaseLost
    );
    let parked = store
        .get_turn(PROJECT, "parked-stale")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(parked.resumed_by_turn_id, None);
}

fn run(tool: &str, args: serde_json::Value) -> ToolRun {
    ToolRun {
        project_id: PROJECT.into(),
        session_id: SESSION.into(),
        tool_call_id: "toolu_00_abc".into(),
        tool: tool.into(),
        args_digest: args_digest(&args),
        turn_id: "t-1".into(),
        interaction_id: None,
    }
}

#[tokio::test]
async fn the_ledger_compares_the_call_under_a_key() {
    let (_dir, store) = crate::common::fresh_store("claims.db").await;
    let fence = ToolRunFence::default();
    let bash = run("Bash", json!({"command": "make release"}));
    assert_eq!(
        store.begin_tool_run(&bash, &fence).await.unwrap(),
        ToolRunPermit::Run
    );
    assert!(matches!(
        store.begin_tool_run(&bash, &fence).await.unwrap(),
        ToolRunPermit::AlreadyRan { .. }
    ));
    for other in [
        run("Deploy", json!({"target": "prod"})),
        run("Bash", json!({"command": "rm -rf /"})),
    ] {
        assert_eq!(
            store.begin_tool_run(&other, &fence).await.unwrap(),
            ToolRunPermit::Conflict {
                tool: "Bash".into(),
                turn_id: "t-1".into(),
            },
            "{other:?}"
        );
    }
    let rows = store.tool_runs(PROJECT, SESSION).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].tool, "Bash");
}

/// A turn parked on several gates (a `parallel` step) whose claimed resume gives up: the
/// turn's other gates, which their own jobs left to that resume, are resolved with the
/// same `RESUME_FAILED` error as the claimant's; a job that gives up without the claim
/// resolves only its own row.
#[tokio::test]
async fn a_parallel_resume_that_gives_up_resolves_every_gate_it_claimed() {
    use gatehouse_server::interactions::store::MAX_ATTEMPTS;
    let (_dir, store) = crate::common::fresh_store("giveup.db").await;
    let parked_on_two = |id: &str, a: &str, b: &str| {
        let mut parked = turn(id, "parked", true);
        let gate = json!({"step_index": 0, "tool": "Bash", "args": {}, "tool_call_id": "x"});
        parked.parked_state = Some(json!({"config_redacted": true, "gates": [
            {"token": a, "gate": gate}, {"token": b, "gate": gate}
        ]}));
        parked
    };
    for (turn_id, a, b) in [
        ("claimed", "tok-a", "tok-b"),
        ("unclaimed", "tok-c", "tok-d"),
    ] {
        store
            .record_turn(&parked_on_two(turn_id, a, b), None)
            .await
            .unwrap();
    }
    let a = crate::common::approved_gate(&store, PROJECT, "tok-a", Some("claimed")).await;
    let b = crate::common::approved_gate(&store, PROJECT, "tok-b", Some("claimed")).await;
    let c = crate::common::approved_gate(&store, PROJECT, "tok-c", Some("unclaimed")).await;
    let d = crate::common::approved_gate(&store, PROJECT, "tok-d", Some("unclaimed")).await;
    let jobs = claim_all(&store).await;
    // b's and d's jobs leave their rows to their turn's resume.
    for left in [&b, &d] {
        let note = JobCompletion {
            note: Some("left to the turn's resume".into()),
            ..Default::default()
        };
        assert!(matches!(
            store.complete_job(&jobs[left], &note, None).await.unwrap(),
            CompleteOutcome::Completed { .. }
        ));
    }
    assert_eq!(
        store.claim_parked_turn(&jobs[&a], "claimed").await.unwrap(),
        TurnClaim::Claimed
    );
    for failing in [&a, &c] {
        let last = ClaimedJob {
            attempts: MAX_ATTEMPTS,
            ..jobs[failing].clone()
        };
        store.fail_job(&last, "boom").await.unwrap();
    }
    let code = |id: String| {
        let store = &store;
        async move {
            let row = store.get_interaction(PROJECT, &id).await.unwrap().unwrap();
            let code = row
                .resolution
                .as_ref()
                .and_then(|r| r.get("error"))
                .and_then(|e| e.get("code"))
                .and_then(|c| c.as_str())
                .map(str::to_string);
            (row.status, code)
        }
    };
    let failed = ("resolved".to_string(), Some("RESUME_FAILED".to_string()));
    assert_eq!(code(a).await, failed);
    assert_eq!(code(b).await, failed, "the claimed turn's other gate");
    assert_eq!(code(c).await, failed);
    assert_eq!(
        code(d).await,
        ("responded".to_string(), None),
        "not the failing job's turn claim: untouched"
    );
}
