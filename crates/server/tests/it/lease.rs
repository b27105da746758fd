//! The resume queue's lease: an expired claim is reclaimed, and a stale worker's
//! completion is refused (never lost, never applied twice).

use gatehouse_server::interactions::store::{CompleteOutcome, JobCompletion};

#[tokio::test]
async fn expired_lease_is_reclaimed_and_stale_completion_refused() {
    let (_dir, store) = crate::common::fresh_store("lease.db").await;
    let id = crate::common::approved_gate(&store, "p", "tok", None).await;

    // Worker A claims with a lease that is already over (a crashed or stalled worker).
    let a = store.claim_job(-1).await.unwrap().expect("a job");
    assert_eq!(a.interaction_id, id);
    assert_eq!(a.attempts, 1);
    // Worker B reclaims it.
    let b = store
        .claim_job(60_000)
        .await
        .unwrap()
        .expect("the expired job");
    assert_eq!(b.interaction_id, id);
    assert_eq!(b.attempts, 2);
    assert_ne!(a.owner, b.owner);
    // While B holds a live lease, nobody else can claim.
    assert!(store.claim_job(60_000).await.unwrap().is_none());

    // A wakes up and tries to complete: refused, nothing written.
    let completion = JobCompletion {
        note: Some("from A".into()),
        ..Default::default()
    };
    assert!(matches!(
        store.complete_job(&a, &completion, None).await.unwrap(),
        CompleteOutcome::LeaseLost
    ));
    // B completes once.
    let completion = JobCompletion {
        note: Some("from B".into()),
        ..Default::default()
    };
    assert!(matches!(
        store.complete_job(&b, &completion, None).await.unwrap(),
        CompleteOutcome::Completed { .. }
    ));
    // Completing again is refused too (the job is done).
    assert!(matches!(
        store.complete_job(&b, &completion, None).await.unwrap(),
        CompleteOutcome::LeaseLost
    ));
    let (state, _, attempts) = store.job_state(&id).await.unwrap().unwrap();
    assert_eq!((state.as_str(), attempts), ("done", 2));
    assert!(store.claim_job(60_000).await.unwrap().is_none());
}

#[tokio::test]
async fn failed_attempts_retry_then_give_up() {
    let (_dir, store) = crate::common::fresh_store("lease.db").await;
    let id = crate::common::approved_gate(&store, "p", "tok-fail", None).await;
    for attempt in 1..=gatehouse_server::interactions::store::MAX_ATTEMPTS {
        let job = store
            .claim_job(-1)
            .await
            .unwrap()
            .expect("claimable again after a failure");
        assert_eq!(job.attempts, attempt);
        store.fail_job(&job, "boom").await.unwrap();
    }
    let (state, _, _) = store.job_state(&id).await.unwrap().unwrap();
    assert_eq!(state, "failed");
    assert!(store.claim_job(-1).await.unwrap().is_none());
}
