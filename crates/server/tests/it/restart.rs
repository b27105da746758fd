//! Durability: a server restarted between gate and answer still answers and resumes once.

use crate::common::Harness;
use gatehouse_server::testing::TestServerOptions;

#[tokio::test]
async fn restart_between_gate_and_answer_resumes_once() {
    let h = Harness::legacy().await;
    let id = h.park("durable", "m-durable").await;

    let h = h.restart().await;
    let row = h.interaction(&id).await;
    assert_eq!(row["status"], "pending");
    assert_eq!(
        row["data"]["parameters"]["agent"]["llm"]["model"],
        "m-durable"
    );
    let (status, body) = h.respond(&id, true).await;
    assert_eq!(status, 200, "{body}");
    h.wait_resolved(&id).await;
    let turns = h.turns("durable").await;
    assert_eq!(turns["count"], 2, "{turns}");
    assert_eq!(turns["turns"][1]["model"], "m-durable");
}

/// An answer queued while no dispatcher runs is picked up by the next server's
/// dispatcher at startup.
#[tokio::test]
async fn queued_resume_survives_a_restart() {
    let h = Harness::with(TestServerOptions {
        run_dispatcher: false,
        ..crate::common::legacy_options()
    })
    .await;
    let id = h.park("queued", "m-queued").await;
    let (status, _) = h.respond(&id, true).await;
    assert_eq!(status, 200);
    assert_eq!(h.interaction(&id).await["status"], "responded");
    let mut h = h;
    h.server.options.run_dispatcher = true;
    let h = h.restart().await;
    h.wait_resolved(&id).await;
    let turns = h.turns("queued").await;
    assert_eq!(turns["count"], 2, "{turns}");
    let h = h.restart().await;
    assert_eq!(
        h.turns("queued").await["count"],
        2,
        "no second resume after another restart"
    );
}

/// A worker that claimed the resume and died (its lease ran out) is replaced: the next
/// dispatcher reclaims the job and resumes exactly once.
#[tokio::test]
async fn crashed_claim_is_retried_once() {
    let h = Harness::with(TestServerOptions {
        run_dispatcher: false,
        ..crate::common::legacy_options()
    })
    .await;
    let id = h.park("crashed", "m-crash").await;
    let (status, _) = h.respond(&id, true).await;
    assert_eq!(status, 200);
    // The "crashed" worker: claims with a lease that has already run out, never completes.
    let store = h.server.server.state().interactions.clone();
    let dead = store
        .claim_job(-1)
        .await
        .unwrap()
        .expect("the queued resume");
    assert_eq!(dead.interaction_id, id);

    let mut h = h;
    h.server.options.run_dispatcher = true;
    let h = h.restart().await;
    h.wait_resolved(&id).await;
    let turns = h.turns("crashed").await;
    assert_eq!(turns["count"], 2, "{turns}");
    assert_eq!(turns["turns"][1]["model"], "m-crash");
    let store = &h.server.server.state().interactions;
    let (state, resume_turn, attempts) = store.job_state(&id).await.unwrap().unwrap();
    assert_eq!((state.as_str(), attempts), ("done", 2));
    assert_eq!(
        resume_turn.as_deref(),
        turns["turns"][1]["turn_id"].as_str()
    );
    // The dead worker's late completion is refused.
    let late = store
        .complete_job(&dead, &Default::default(), None)
        .await
        .unwrap();
    assert!(matches!(
        late,
        gatehouse_server::interactions::store::CompleteOutcome::LeaseLost
    ));
}
