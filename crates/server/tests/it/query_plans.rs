//! Issue 37, item 7: every filter the API offers is served by an index, so a filter's
//! cost does not grow with the history of the project. The test reads the plan of the
//! very statement the store runs (`query_interactions_sql`, `list_outbox_sql`) on the
//! database the suite runs on: SQLite's `EXPLAIN QUERY PLAN`, PostgreSQL's `EXPLAIN`
//! (sequential scans disabled). A filter is served when its column is in the condition
//! of an index search and the page needs no sort (a `LIMIT` page read in index order
//! stops after `limit` rows). Timings are `cargo xtask bench`'s business, not a test's.

use crate::common::db::Db;
use crate::common::Harness;
use gatehouse_server::interactions::store::{InteractionFilter, InteractionStore};
use gatehouse_server::webhooks::store::DeliveryStore;
use gatehouse_wire::interaction::{InteractionKind, InteractionStatus, Order};

/// Panics unless `plan` searches `table` through an index whose condition holds every
/// one of `columns`, with no full scan of it and no sort.
fn assert_served_by_index(what: &str, plan: &[String], table: &str, columns: &[&str]) {
    let text = plan.join("\n");
    let postgres = text.contains("cost=");
    let index_lines: Vec<&String> = if postgres {
        plan.iter().filter(|l| l.contains("Index Cond")).collect()
    } else {
        plan.iter()
            .filter(|l| l.starts_with(&format!("SEARCH {table} USING")) && l.contains("INDEX"))
            .collect()
    };
    assert!(!index_lines.is_empty(), "{what}: no index search:\n{text}");
    for column in columns {
        let needle = if postgres {
            format!("{column} =")
        } else {
            format!("{column}=?")
        };
        assert!(
            index_lines.iter().any(|l| l.contains(&needle)),
            "{what}: `{column}` is not in an index condition:\n{text}"
        );
    }
    let full_scan = if postgres {
        text.contains("Seq Scan")
    } else {
        plan.iter().any(|l| l.starts_with(&format!("SCAN {table}")))
    };
    assert!(!full_scan, "{what}: a full scan of {table}:\n{text}");
    let sorts = if postgres {
        plan.iter()
            .any(|l| l.trim_start().starts_with("Sort") || l.contains("-> Sort"))
    } else {
        text.contains("TEMP B-TREE")
    };
    assert!(
        !sorts,
        "{what}: the page is sorted, not read in index order:\n{text}"
    );
}

/// 4,000 interaction rows and 4,000 outbox rows, `ANALYZE`d, so each planner weighs its
/// indexes by real statistics: project `p` holds one row in ten (the rest is another
/// project's history), and each value a case filters on one of `p`'s rows in ten.
async fn populate(db: &Db) {
    let (series, number, pad) = match db {
        Db::Sqlite(..) => (
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 4000) ",
            "n",
            "printf('%08d', i)",
        ),
        Db::Postgres(_) => (
            "",
            "generate_series(1, 4000) AS n(i)",
            "lpad(i::text, 8, '0')",
        ),
    };
    db.execute(
        &format!(
            "{series}INSERT INTO interactions (id, project_id, session_id, turn_id, token, kind, \
             status, data, flags, delivered_in_band, delivered_webhook, created_at) \
             SELECT {pad}, CASE WHEN i % 10 = 0 THEN 'p' ELSE 'q' END, \
             CASE WHEN i % 100 = 10 THEN 's' ELSE 'session-' || (i % 50) END, \
             CASE WHEN i % 100 = 20 THEN 't' ELSE 'turn-' || i END, 'token-' || i, \
             CASE WHEN i % 100 = 30 THEN 'user_approval' ELSE 'user_input' END, \
             CASE WHEN i % 100 = 40 THEN 'pending' ELSE 'responded' END, '{{}}', '{{}}', \
             CASE WHEN i % 100 = 50 THEN 0 ELSE 1 END, CASE WHEN i % 100 = 60 THEN 1 ELSE 0 END, \
             '2026-12-07T15:00:00Z' FROM {number}"
        ),
        &[],
    )
    .await;
    db.execute(
        &format!(
            "{series}INSERT INTO webhook_outbox (id, event_id, endpoint, project_id, event_type, \
             subject_id, payload, state, next_attempt_ms, created_at) \
             SELECT {pad}, 'msg_' || i, 'e', CASE WHEN i % 10 = 0 THEN 'p' ELSE 'q' END, \
             'interaction.opened', 'x', '{{}}', \
             CASE WHEN i % 100 = 10 THEN 'pending' WHEN i % 100 = 20 THEN 'failed' \
             ELSE 'delivered' END, 0, '2026-12-07T15:00:00Z' FROM {number}"
        ),
        &[],
    )
    .await;
    db.execute("ANALYZE", &[]).await;
}

fn page(order: Option<Order>) -> InteractionFilter {
    InteractionFilter {
        limit: 100,
        order,
        ..InteractionFilter::default()
    }
}

#[tokio::test]
async fn every_interaction_filter_is_served_by_an_index() {
    let h = Harness::start().await;
    let db = Db::open(&h.server).await;
    populate(&db).await;
    let project = "p";
    let descending = Some(Order::Descending);
    let cases: Vec<(&str, InteractionFilter, Vec<&str>)> = vec![
        (
            "the first page, newest first",
            page(descending),
            vec!["project_id"],
        ),
        (
            "the first page, oldest first",
            page(Some(Order::Ascending)),
            vec!["project_id"],
        ),
        ("the first page, unwindowed", page(None), vec!["project_id"]),
        (
            "session_id",
            InteractionFilter {
                session_id: Some("s".into()),
                ..page(descending)
            },
            vec!["project_id", "session_id"],
        ),
        (
            "turn_id",
            InteractionFilter {
                turn_id: Some("t".into()),
                ..page(descending)
            },
            vec!["project_id", "turn_id"],
        ),
        (
            "kind",
            InteractionFilter {
                kind: Some(InteractionKind::UserApproval),
                ..page(descending)
            },
            vec!["project_id", "kind"],
        ),
        (
            "status (and actionable_only)",
            InteractionFilter {
                statuses: vec![InteractionStatus::Pending],
                ..page(descending)
            },
            vec!["project_id", "status"],
        ),
        (
            "flags.delivered_in_band",
            InteractionFilter {
                delivered_in_band: Some(false),
                ..page(descending)
            },
            vec!["project_id", "delivered_in_band"],
        ),
        (
            "flags.delivered_webhook",
            InteractionFilter {
                delivered_webhook: Some(true),
                ..page(descending)
            },
            vec!["project_id", "delivered_webhook"],
        ),
        (
            "the next page of a session",
            InteractionFilter {
                session_id: Some("s".into()),
                next: Some("01a24fc2-915c-7a52-a2d7-5c74a7f60ae1".into()),
                ..page(descending)
            },
            vec!["project_id", "session_id"],
        ),
    ];
    for (what, filter, columns) in cases {
        let (sql, params) = InteractionStore::query_interactions_sql(project, &filter);
        let plan = db.explain(&sql, &params).await;
        assert_served_by_index(what, &plan, "interactions", &columns);
    }
}

#[tokio::test]
async fn the_deliveries_lists_are_served_by_an_index() {
    let h = Harness::start().await;
    let db = Db::open(&h.server).await;
    populate(&db).await;
    for state in ["pending", "failed"] {
        let (sql, params) = DeliveryStore::list_outbox_sql(Some("p"), Some(state), 100);
        let plan = db.explain(&sql, &params).await;
        assert_served_by_index(state, &plan, "webhook_outbox", &["project_id", "state"]);
        // The plan PostgreSQL keeps for the statement after five runs, made without the
        // bound values: the state must still be the index's (a bound state was planned
        // as the average one, and the pending list walked the whole outbox).
        let generic = db.explain_with(&sql, &params, true).await;
        assert_served_by_index(state, &generic, "webhook_outbox", &["project_id", "state"]);
    }
    let (sql, params) = DeliveryStore::list_outbox_sql(Some("p"), None, 100);
    let plan = db.explain(&sql, &params).await;
    assert_served_by_index("every state", &plan, "webhook_outbox", &["project_id"]);
}
