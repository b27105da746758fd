//! The batch respond (C4): many gates answered in ONE transaction, each item exactly as
//! the single respond ([`InteractionStore::respond`]) would answer it at its place in the request,
//! duplicates included (the same gate twice, one key on two gates, a gate under two
//! keys).
//!
//! The transaction first claims the batch's idempotency keys and locks its gates (keys,
//! then rows, each in sorted order: the single respond takes a key before its row too,
//! so overlapping requests wait instead of deadlocking). Then [`plan`] decides every
//! item in the request's order, in memory, from what the keys and gates held at the
//! start and what the earlier items did. Then a handful of set-based statements write
//! the plan (not four per gate): the winners' flips, their keys bound to their answers,
//! the other claimed keys given back, their resumes queued. A key is given back only
//! when no item of the batch won under it, so no later item undoes an earlier one.

use std::collections::{BTreeMap, HashMap, HashSet};

use gatehouse_wire::JsonObject;

use super::rows::{interaction_from_row, InteractionRecord, RespondOutcome, SELECT_COLUMNS};
use super::InteractionStore;
use crate::announce::in_announced_tx;
use crate::db::{now_text, to_json_text, RowExt, StoreError, Tx};

/// One gate of a batch respond ([`InteractionStore::respond_batch`]).
#[derive(Debug, Clone, Copy)]
pub struct BatchRespondItem<'a> {
    /// The row's id.
    pub id: &'a str,
    /// The answer.
    pub answer: &'a JsonObject,
    /// `(idempotency key, request hash)`, when the item carries a key.
    pub idempotency: Option<(&'a str, &'a str)>,
    /// The gate's digest as the client read it (C8), when the item carries one.
    pub digest: Option<&'a str>,
}

/// An idempotency key of the batch as the transaction found it.
#[derive(Debug, Clone, PartialEq)]
enum KeyAtStart {
    /// Nobody held it: this batch claimed it.
    Claimed,
    /// An earlier request holds it: its gate, its request hash, its stored answer.
    Held {
        interaction_id: String,
        request_hash: String,
        response: String,
    },
    /// Taken and given back under us on every try: refused, as the single respond
    /// refuses it then.
    Lost,
}

/// What one item comes to.
#[derive(Debug, Clone, PartialEq)]
enum Decision {
    /// It flips its gate (the first item to reach a pending gate).
    Win,
    /// It repeats the request stored under its key before the batch: that answer.
    ReplayStored(String),
    /// It repeats an earlier item of this batch (its index) under the same key.
    ReplayItem(usize),
    /// Its key holds another request.
    KeyReused,
    /// Its gate is no longer pending.
    NotPending,
    /// Its digest is not its pending gate's (C8): nothing recorded, its key stays free.
    StaleGate,
    /// No such gate in the project.
    NotFound,
}

/// Every item's decision, in order, and what becomes of the keys this batch claimed:
/// bound to the item that won under it, or given back.
#[derive(Debug, Default, PartialEq)]
struct Plan {
    decisions: Vec<Decision>,
    /// `(key, winning item)`.
    bound: Vec<(String, usize)>,
    released: Vec<String>,
}

/// Decide each item in order, as a sequence of single responds would: a key held by an
/// earlier request (before the batch, or an earlier item that won under it) replays
/// when the gate and request are the same and is refused otherwise; an item whose key
/// is free flips its gate if it is still pending, else it is `NotPending` or
/// `NotFound` and its key stays free for the items after it.
fn plan(
    items: &[BatchRespondItem<'_>],
    pending: &HashMap<String, String>,
    existing: &HashSet<String>,
    keys: &HashMap<String, KeyAtStart>,
) -> Plan {
    let mut still_pending: HashSet<&str> = pending.keys().map(String::as_str).collect();
    let mut won_under_key: HashMap<&str, usize> = HashMap::new();
    let mut decisions = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        if let Some((key, hash)) = item.idempotency {
            let held = match keys.get(key) {
                Some(KeyAtStart::Claimed) => won_under_key.get(key).map(|&winner| {
                    let same = items[winner].id == item.id
                        && items[winner].idempotency.map(|(_, h)| h) == Some(hash);
                    if same {
                        Decision::ReplayItem(winner)
                    } else {
                        Decision::KeyReused
                    }
                }),
                Some(KeyAtStart::Held {
                    interaction_id,
                    request_hash,
                    response,
                }) => {
                    // An empty stored answer cannot be replayed (the single respond's rule).
                    let same = interaction_id == item.id && request_hash == hash;
                    Some(if same && !response.is_empty() {
                        Decision::ReplayStored(response.clone())
                    } else {
                        Decision::KeyReused
                    })
                }
                Some(KeyAtStart::Lost) | None => Some(Decision::KeyReused),
            };
            if let Some(decision) = held {
                decisions.push(decision);
                continue;
            }
        }
        let stale = item.digest.is_some_and(|digest| {
            pending
                .get(item.id)
                .is_some_and(|current| current != digest)
        });
        let decision = if stale && still_pending.contains(item.id) {
            Decision::StaleGate
        } else if still_pending.remove(item.id) {
            if let Some((key, _)) = item.idempotency {
                won_under_key.insert(key, index);
            }
            Decision::Win
        } else if existing.contains(item.id) {
            Decision::NotPending
        } else {
            Decision::NotFound
        };
        decisions.push(decision);
    }
    let mut bound: Vec<(String, usize)> = won_under_key
        .iter()
        .map(|(key, index)| (key.to_string(), *index))
        .collect();
    bound.sort();
    let mut released: Vec<String> = keys
        .iter()
        .filter(|(key, at_start)| {
            **at_start == KeyAtStart::Claimed && !won_under_key.contains_key(key.as_str())
        })
        .map(|(key, _)| key.clone())
        .collect();
    released.sort();
    Plan {
        decisions,
        bound,
        released,
    }
}

/// `rows` value tuples for a multi-row statement, placeholders numbered from `first`,
/// `width` parameters per row: `row(base)` writes one tuple.
fn rows_of(rows: usize, width: usize, first: usize, row: impl Fn(usize) -> String) -> String {
    (0..rows)
        .map(|n| row(first + n * width))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How often the batch tries to claim or read a key that is given back under it (as the
/// single respond tries).
const KEY_ATTEMPTS: usize = 3;

impl InteractionStore {
    /// Answer many gates in ONE transaction (a batch respond): outcomes in the order of
    /// `items`, each what [`respond`](Self::respond) would answer for it after the items
    /// before it (see the module docs).
    pub async fn respond_batch(
        &self,
        project_id: &str,
        items: &[BatchRespondItem<'_>],
        actor: &str,
    ) -> Result<Vec<RespondOutcome>, StoreError> {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let now = now_text();
        // Each key with the first item that names it: a claim records that item's gate
        // and hash until the plan binds the key to the item that won under it.
        let mut first_use: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
        for item in items {
            if let Some((key, hash)) = item.idempotency {
                first_use.entry(key).or_insert((item.id, hash));
            }
        }
        let gate_ids: Vec<&str> = {
            let mut ids: Vec<&str> = items.iter().map(|item| item.id).collect();
            ids.sort_unstable();
            ids.dedup();
            ids
        };
        in_announced_tx!(self.db, self.announce, tx, changes => {
            // 1. The keys, in key order: claimed, or read from the request holding them.
            let mut keys: HashMap<String, KeyAtStart> = HashMap::new();
            let mut unsettled: Vec<&str> = first_use.keys().copied().collect();
            for _ in 0..KEY_ATTEMPTS {
                if unsettled.is_empty() {
                    break;
                }
                let sql = format!(
                    "INSERT INTO idempotency_keys (project_id, idem_key, interaction_id, request_hash, \
                     response, created_at) VALUES {} ON CONFLICT (project_id, idem_key) DO NOTHING \
                     RETURNING idem_key",
                    rows_of(unsettled.len(), 3, 3, |at| format!("($1, ${at}, ${}, ${}, '', $2)", at + 1, at + 2))
                );
                let mut query = sqlx::query(&sql).bind(project_id).bind(&now);
                for key in &unsettled {
                    let (id, hash) = first_use.get(key).copied().unwrap_or_default();
                    query = query.bind(*key).bind(id).bind(hash);
                }
                for row in query.fetch_all(&mut *tx).await? {
                    keys.insert(row.text("idem_key")?, KeyAtStart::Claimed);
                }
                unsettled.retain(|key| !keys.contains_key(*key));
                if unsettled.is_empty() {
                    break;
                }
                let sql = format!(
                    "SELECT idem_key, interaction_id, request_hash, response FROM idempotency_keys \
                     WHERE project_id = $1 AND idem_key IN ({})",
                    rows_of(unsettled.len(), 1, 2, |at| format!("${at}"))
                );
                let mut query = sqlx::query(&sql).bind(project_id);
                for key in &unsettled {
                    query = query.bind(*key);
                }
                for row in query.fetch_all(&mut *tx).await? {
                    keys.insert(
                        row.text("idem_key")?,
                        KeyAtStart::Held {
                            interaction_id: row.text("interaction_id")?,
                            request_hash: row.text("request_hash")?,
                            response: row.text("response")?,
                        },
                    );
                }
                unsettled.retain(|key| !keys.contains_key(*key));
            }
            for key in unsettled {
                keys.insert(key.to_string(), KeyAtStart::Lost);
            }
            // 2. The gates, in id order, locked (Postgres; SQLite's writer holds the
            //    file) so that none changes before the plan is written; a pending
            //    gate's digest (C8) is what an item's digest is checked against.
            let sql = format!(
                "SELECT {SELECT_COLUMNS} FROM interactions WHERE project_id = $1 AND id IN ({}) ORDER BY id{}",
                rows_of(gate_ids.len(), 1, 2, |at| format!("${at}")),
                Tx::from(&mut *tx).lock_clause(),
            );
            let mut query = sqlx::query(&sql).bind(project_id);
            for id in &gate_ids {
                query = query.bind(*id);
            }
            let mut existing: HashSet<String> = HashSet::new();
            let mut pending: HashMap<String, String> = HashMap::new();
            for row in query.fetch_all(&mut *tx).await? {
                let gate = interaction_from_row(&row)?;
                if gate.status == "pending" {
                    pending.insert(gate.id.clone(), gate.digest());
                }
                existing.insert(gate.id);
            }
            // 3. Every item in order.
            let plan = plan(items, &pending, &existing, &keys);
            // 4. The winners' flips.
            let winners: Vec<usize> = (0..items.len())
                .filter(|i| plan.decisions[*i] == Decision::Win)
                .collect();
            let mut won: HashMap<String, InteractionRecord> = HashMap::new();
            if !winners.is_empty() {
                let sql = format!(
                    "WITH v(vid, vresolution) AS (VALUES {}) UPDATE interactions SET status = 'responded', \
                     resolution = v.vresolution, updated_at = $2, updated_by_id = $3 FROM v \
                     WHERE interactions.id = v.vid AND interactions.project_id = $1 \
                     AND interactions.status = 'pending' RETURNING {SELECT_COLUMNS}",
                    rows_of(winners.len(), 2, 4, |at| format!("(${at}, ${})", at + 1)),
                );
                let mut query = sqlx::query(&sql).bind(project_id).bind(&now).bind(actor);
                for i in &winners {
                    query = query.bind(items[*i].id).bind(resolution_text(items[*i].answer));
                }
                for row in query.fetch_all(&mut *tx).await? {
                    let record = interaction_from_row(&row)?;
                    changes.push(record.change());
                    won.insert(record.id.clone(), record);
                }
            }
            let won_record = |i: usize| -> Result<&InteractionRecord, StoreError> {
                // The gate was read pending under the lock this transaction holds, so
                // its flip returned it; a missing one is a fault, not an outcome.
                won.get(items[i].id)
                    .ok_or_else(|| StoreError::Database(sqlx::Error::RowNotFound))
            };
            // 5. The claimed keys: bound to the answer won under them, or given back.
            if !plan.bound.is_empty() {
                let sql = format!(
                    "WITH v(vkey, vid, vhash, vresponse) AS (VALUES {}) UPDATE idempotency_keys \
                     SET interaction_id = v.vid, request_hash = v.vhash, response = v.vresponse \
                     FROM v WHERE idempotency_keys.project_id = $1 AND idempotency_keys.idem_key = v.vkey",
                    rows_of(plan.bound.len(), 4, 2, |at| {
                        format!("(${at}, ${}, ${}, ${})", at + 1, at + 2, at + 3)
                    })
                );
                let mut query = sqlx::query(&sql).bind(project_id);
                for (key, i) in &plan.bound {
                    let hash = items[*i].idempotency.map(|(_, hash)| hash).unwrap_or_default();
                    query = query
                        .bind(key.as_str())
                        .bind(items[*i].id)
                        .bind(hash)
                        .bind(won_record(*i)?.response_body());
                }
                query.execute(&mut *tx).await?;
            }
            if !plan.released.is_empty() {
                let sql = format!(
                    "DELETE FROM idempotency_keys WHERE project_id = $1 AND idem_key IN ({})",
                    rows_of(plan.released.len(), 1, 2, |at| format!("${at}"))
                );
                let mut query = sqlx::query(&sql).bind(project_id);
                for key in &plan.released {
                    query = query.bind(key.as_str());
                }
                query.execute(&mut *tx).await?;
            }
            // 6. The winners' resumes, queued once each.
            if !winners.is_empty() {
                let sql = format!(
                    "INSERT INTO resume_jobs (interaction_id, project_id, state, created_at) VALUES {} \
                     ON CONFLICT (interaction_id) DO NOTHING",
                    rows_of(winners.len(), 1, 3, |at| format!("(${at}, $1, 'queued', $2)"))
                );
                let mut query = sqlx::query(&sql).bind(project_id).bind(&now);
                for i in &winners {
                    query = query.bind(items[*i].id);
                }
                query.execute(&mut *tx).await?;
            }
            let mut outcomes = Vec::with_capacity(items.len());
            for (i, decision) in plan.decisions.iter().enumerate() {
                outcomes.push(match decision {
                    Decision::Win => RespondOutcome::Won { record: Box::new(won_record(i)?.clone()) },
                    Decision::ReplayStored(response) => RespondOutcome::Replayed { response: response.clone() },
                    Decision::ReplayItem(winner) => RespondOutcome::Replayed {
                        response: won_record(*winner)?.response_body(),
                    },
                    Decision::KeyReused => RespondOutcome::KeyReused,
                    Decision::NotPending => RespondOutcome::NotPending,
                    Decision::StaleGate => RespondOutcome::StaleGate,
                    Decision::NotFound => RespondOutcome::NotFound,
                });
            }
            Ok(outcomes)
        })
    }
}

/// The stored resolution of an answer: `{"answer": ...}` (as the single respond stores it).
fn resolution_text(answer: &JsonObject) -> String {
    let mut resolution = JsonObject::new();
    resolution.insert(
        "answer".to_string(),
        serde_json::Value::Object(answer.clone()),
    );
    to_json_text(&resolution)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item<'a>(id: &'a str, key: Option<(&'a str, &'a str)>) -> BatchRespondItem<'a> {
        static ANSWER: std::sync::OnceLock<JsonObject> = std::sync::OnceLock::new();
        BatchRespondItem {
            id,
            answer: ANSWER.get_or_init(JsonObject::new),
            idempotency: key,
            digest: None,
        }
    }

    /// Pending gates, each with its digest (`d-<id>`).
    fn pending(ids: &[&str]) -> HashMap<String, String> {
        ids.iter()
            .map(|id| (id.to_string(), format!("d-{id}")))
            .collect()
    }

    #[test]
    fn a_stale_digest_records_nothing_and_leaves_the_gate_to_the_next_item() {
        let mut stale = item("g", Some(("k", "h")));
        stale.digest = Some("d-old");
        let mut fresh = item("g", None);
        fresh.digest = Some("d-g");
        let plan = plan(
            &[stale, fresh],
            &pending(&["g"]),
            &set(&["g"]),
            &claimed(&["k"]),
        );
        assert_eq!(plan.decisions, [Decision::StaleGate, Decision::Win]);
        assert_eq!(plan.released, ["k".to_string()]);
    }

    fn set(ids: &[&str]) -> HashSet<String> {
        ids.iter().map(|id| id.to_string()).collect()
    }

    fn claimed(keys: &[&str]) -> HashMap<String, KeyAtStart> {
        keys.iter()
            .map(|key| (key.to_string(), KeyAtStart::Claimed))
            .collect()
    }

    #[test]
    fn the_same_gate_and_key_twice_replays_the_first_and_keeps_the_key() {
        let items = [item("g", Some(("k", "h"))), item("g", Some(("k", "h")))];
        let plan = plan(&items, &pending(&["g"]), &set(&["g"]), &claimed(&["k"]));
        assert_eq!(plan.decisions, [Decision::Win, Decision::ReplayItem(0)]);
        assert_eq!(plan.bound, [("k".to_string(), 0)]);
        assert!(plan.released.is_empty());
    }

    #[test]
    fn one_key_on_two_gates_answers_the_first_only() {
        let items = [item("b", Some(("k", "h1"))), item("a", Some(("k", "h2")))];
        let plan = plan(
            &items,
            &pending(&["a", "b"]),
            &set(&["a", "b"]),
            &claimed(&["k"]),
        );
        assert_eq!(plan.decisions, [Decision::Win, Decision::KeyReused]);
        assert_eq!(plan.bound, [("k".to_string(), 0)]);
    }

    #[test]
    fn a_key_given_back_by_an_item_serves_the_next_one() {
        // The first item's gate is answered already: its key is free for the second.
        let items = [
            item("done", Some(("k", "h1"))),
            item("open", Some(("k", "h2"))),
        ];
        let plan = plan(
            &items,
            &pending(&["open"]),
            &set(&["done", "open"]),
            &claimed(&["k"]),
        );
        assert_eq!(plan.decisions, [Decision::NotPending, Decision::Win]);
        assert_eq!(plan.bound, [("k".to_string(), 1)]);
    }

    #[test]
    fn a_key_no_item_won_under_is_given_back() {
        let items = [
            item("missing", Some(("k", "h"))),
            item("g", None),
            item("g", Some(("j", "h"))),
        ];
        let plan = plan(
            &items,
            &pending(&["g"]),
            &set(&["g"]),
            &claimed(&["k", "j"]),
        );
        assert_eq!(
            plan.decisions,
            [Decision::NotFound, Decision::Win, Decision::NotPending]
        );
        assert!(plan.bound.is_empty());
        assert_eq!(plan.released, ["j".to_string(), "k".to_string()]);
    }

    #[test]
    fn a_key_held_before_the_batch_replays_or_is_refused() {
        let held = |response: &str| KeyAtStart::Held {
            interaction_id: "g".to_string(),
            request_hash: "h".to_string(),
            response: response.to_string(),
        };
        let keys: HashMap<String, KeyAtStart> = [
            ("k".to_string(), held("{}")),
            ("empty".to_string(), held("")),
            ("lost".to_string(), KeyAtStart::Lost),
        ]
        .into_iter()
        .collect();
        let items = [
            item("g", Some(("k", "h"))),
            item("g", Some(("k", "other"))),
            item("x", Some(("k", "h"))),
            item("g", Some(("empty", "h"))),
            item("g", Some(("lost", "h"))),
        ];
        let plan = plan(&items, &pending(&["g", "x"]), &set(&["g", "x"]), &keys);
        assert_eq!(
            plan.decisions,
            [
                Decision::ReplayStored("{}".to_string()),
                Decision::KeyReused,
                Decision::KeyReused,
                Decision::KeyReused,
                Decision::KeyReused,
            ]
        );
        assert!(plan.bound.is_empty() && plan.released.is_empty());
    }
}
