//! Gatehouse's batch respond (C4) on a host speaking Agenta's durable contract: the
//! batch's gates grouped by turn, each turn's still-pending gates admitted as one durable
//! respond ([`InteractionStore::respond_durable`], in `commands.rs`), each gate reported
//! as the batch reports it. Its continuations are delivered by the caller after the
//! commits, as the durable respond's are.

use serde_json::Value;

use super::batch::BatchRespondItem;
use super::commands::{durable_request_hash, DurableAnswer, DurableOutcome, DurableRespond};
use super::rows::{InteractionRecord, RespondOutcome};
use super::InteractionStore;
use crate::db::StoreError;

/// What a durable batch came to.
#[derive(Debug)]
pub struct DurableBatch {
    /// Each item's outcome, in the request's order.
    pub outcomes: Vec<RespondOutcome>,
    /// The continuations it admitted, to deliver: `(command id, every gate it answers)`.
    pub continuations: Vec<(String, Vec<String>)>,
}

/// How often a batch decides a turn's gates again after a concurrent writer moved one
/// of them (an answer, a cancellation) between its read and its admission.
const BATCH_TURN_ATTEMPTS: usize = 3;

impl InteractionStore {
    /// Gatehouse's batch respond on a durable host (`POST .../respond-batch`, C4): the
    /// outcomes of `items` in their order, as the batch reports them.
    ///
    /// The gates are grouped by their turn, and each turn's still-pending gates are admitted
    /// as ONE durable respond (`answers[]` of them, under a key of its own), so each turn is
    /// settled, continued and delivered exactly as Agenta's durable respond does it: its
    /// answers are recorded; while one of its gates stays pending, nothing more (it waits);
    /// the answer completing its gates settles it and records its continuation. One
    /// transaction PER TURN, not one for the batch: the turn is the durable contract's unit
    /// (its settlement is one compare-and-set, decided again on its own when a concurrent
    /// writer settles it first), so one turn's conflict never rolls back or re-decides
    /// another's, and no transaction holds the gate locks of several turns (two batches
    /// naming the same turns in other orders cannot deadlock). A batch spanning turns is
    /// therefore atomic per turn.
    ///
    /// Each gate is reported as before: `answered` with its row; a gate no longer pending
    /// `already_answered` (or, with an `idempotency_key` and the answer it holds, answered:
    /// the retry of an answer that was taken); an unknown one `not_found`. A gate naming no
    /// turn (an external runner's) continues nothing durable: those go through the legacy
    /// batch, as on a legacy host. The continuations admitted are returned for the caller
    /// to deliver after the commits, as the durable respond delivers its own.
    pub async fn respond_batch_durable(
        &self,
        project_id: &str,
        items: &[BatchRespondItem<'_>],
        actor: &str,
    ) -> Result<DurableBatch, StoreError> {
        let store = self;
        let mut continuations = Vec::new();
        let mut outcomes: Vec<Option<RespondOutcome>> = vec![None; items.len()];
        // A gate named again under the same key with the same answer: the first's answer.
        let mut replays: Vec<(usize, usize)> = Vec::new();
        let mut unlinked: Vec<usize> = Vec::new();
        // Each turn's items, in the order turns first appear: (turn, [item index]).
        let mut turns: Vec<(String, Vec<usize>)> = Vec::new();
        // Each gate's first item, and whether it names a turn.
        let mut first_of: std::collections::HashMap<&str, (usize, bool)> =
            std::collections::HashMap::new();
        for (index, item) in items.iter().enumerate() {
            if let Some(&(first, linked)) = first_of.get(item.id) {
                if !linked {
                    // The legacy batch decides a turnless gate's repeats itself.
                    unlinked.push(index);
                    continue;
                }
                // The same gate again: as a single respond after the first would answer.
                let same = items[first].answer == item.answer
                    && item.idempotency.is_some()
                    && items[first].idempotency.map(|(k, _)| k) == item.idempotency.map(|(k, _)| k);
                if same {
                    replays.push((index, first));
                } else {
                    outcomes[index] = Some(RespondOutcome::NotPending);
                }
                continue;
            }
            let Some(row) = store.get_interaction(project_id, item.id).await? else {
                first_of.insert(item.id, (index, true));
                outcomes[index] = Some(RespondOutcome::NotFound);
                continue;
            };
            first_of.insert(item.id, (index, row.turn_id.is_some()));
            let Some(turn_id) = row.turn_id.clone() else {
                unlinked.push(index);
                continue;
            };
            match turns.iter_mut().find(|(turn, _)| *turn == turn_id) {
                Some((_, members)) => members.push(index),
                None => turns.push((turn_id, vec![index])),
            }
        }
        for (_, members) in &turns {
            let mut open: Vec<usize> = members.clone();
            for _ in 0..BATCH_TURN_ATTEMPTS {
                // Gates no longer pending are reported as such; the rest admitted together.
                let mut pending = Vec::with_capacity(open.len());
                for &index in &open {
                    let item = &items[index];
                    match store.get_interaction(project_id, item.id).await? {
                        None => outcomes[index] = Some(RespondOutcome::NotFound),
                        Some(row) if row.status != "pending" => {
                            outcomes[index] = Some(taken(&row, item));
                        }
                        // Its digest is not the gate's (C8): nothing recorded for it.
                        Some(row) if item.digest.is_some_and(|d| d != row.digest()) => {
                            outcomes[index] = Some(RespondOutcome::StaleGate);
                        }
                        Some(_) => pending.push(index),
                    }
                }
                open = pending;
                if open.is_empty() {
                    break;
                }
                let answers: Vec<DurableAnswer> = open
                    .iter()
                    .map(|&index| DurableAnswer {
                        interaction_id: items[index].id.to_string(),
                        answer: items[index].answer.clone(),
                        digest: items[index].digest.map(str::to_string),
                    })
                    .collect();
                let request = DurableRespond {
                    project_id: project_id.to_string(),
                    anchor_id: items[open[0]].id.to_string(),
                    request_hash: durable_request_hash(&answers, None),
                    answers,
                    expected_execution_id: None,
                    key: format!("respond-batch:{}", uuid::Uuid::new_v4()),
                    actor: actor.to_string(),
                };
                match store.respond_durable(&request).await? {
                    DurableOutcome::Admitted {
                        command, answered, ..
                    } => continuations.push((command.id, answered)),
                    DurableOutcome::Awaiting { .. } | DurableOutcome::Replayed { .. } => {}
                    // A concurrent writer moved a gate: decide again from the rows.
                    _ => continue,
                }
                for &index in &open {
                    outcomes[index] = Some(
                        match store.get_interaction(project_id, items[index].id).await? {
                            Some(row) => RespondOutcome::Won {
                                record: Box::new(row),
                            },
                            None => RespondOutcome::NotFound,
                        },
                    );
                }
                open.clear();
                break;
            }
            // Still moving under us after every attempt: not answered here.
            for index in open {
                outcomes[index] = Some(RespondOutcome::NotPending);
            }
        }
        if !unlinked.is_empty() {
            let legacy: Vec<BatchRespondItem<'_>> = unlinked.iter().map(|&i| items[i]).collect();
            let answered = store.respond_batch(project_id, &legacy, actor).await?;
            for (index, outcome) in unlinked.into_iter().zip(answered) {
                outcomes[index] = Some(outcome);
            }
        }
        for (index, first) in replays {
            outcomes[index] = Some(match &outcomes[first] {
                Some(RespondOutcome::Won { record }) => RespondOutcome::Replayed {
                    response: record.response_body(),
                },
                Some(other) => other.clone(),
                None => RespondOutcome::NotPending,
            });
        }
        Ok(DurableBatch {
            outcomes: outcomes
                .into_iter()
                .map(|o| o.unwrap_or(RespondOutcome::NotPending))
                .collect(),
            continuations,
        })
    }
}

/// A batch item whose gate is no longer pending: the retry of an answer that was taken
/// (it carries a key and the gate holds exactly its answer: answered, with the row),
/// else already answered.
fn taken(row: &InteractionRecord, item: &BatchRespondItem<'_>) -> RespondOutcome {
    let holds = row.resolution.as_ref().and_then(|r| r.get("answer"))
        == Some(&Value::Object(item.answer.clone()));
    if item.idempotency.is_some() && holds && row.status != "cancelled" {
        RespondOutcome::Replayed {
            response: row.response_body(),
        }
    } else {
        RespondOutcome::NotPending
    }
}
