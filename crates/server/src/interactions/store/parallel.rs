//! A turn parked on several gates (the asking calls of one `parallel` step): which
//! rows are its gates, read from its parked state (`gates[].token`), and their lock.
//! The turn continues once all of them are answered; the durable respond and the
//! transition find here whether an answer completes the set.

use super::rows::{interaction_from_row, InteractionRecord, SELECT_COLUMNS};
use crate::db::{from_json_text, with_tx, RowExt, StoreError, Tx};

/// The tokens of the gates of the parked turn `turn_id` when it is parked on several
/// and not yet resumed; `None` for a turn parked on one gate (or none, or not here).
pub(crate) async fn several_gate_tokens(
    tx: &mut Tx<'_>,
    project_id: &str,
    turn_id: &str,
) -> Result<Option<Vec<String>>, StoreError> {
    let sql = "SELECT parked_state FROM turns WHERE id = $1 AND project_id = $2 \
               AND parked_state IS NOT NULL AND resumed_by_turn_id IS NULL";
    let state = with_tx!(tx, conn => {
        let row = sqlx::query(sql)
            .bind(turn_id)
            .bind(project_id)
            .fetch_optional(&mut **conn)
            .await?;
        match row {
            Some(row) => Ok::<_, StoreError>(row.opt_text("parked_state")?),
            None => Ok(None),
        }
    })?;
    let Some(state) = state else {
        return Ok(None);
    };
    let state: serde_json::Value = from_json_text("turns.parked_state", &state)?;
    let tokens: Vec<String> = state
        .get("gates")
        .and_then(serde_json::Value::as_array)
        .map(|gates| {
            gates
                .iter()
                .filter_map(|g| g.get("token").and_then(serde_json::Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Ok((tokens.len() > 1).then_some(tokens))
}

/// The gate rows of a turn parked on several (`tokens`, of its session), read and, on
/// PostgreSQL, locked in id order for the rest of the transaction: two answers to
/// gates of one turn decide one after the other, so the later sees the earlier's flip
/// (one of them completes the set). SQLite's writer holds the whole file already.
pub(crate) async fn lock_turn_gates(
    tx: &mut Tx<'_>,
    project_id: &str,
    session_id: &str,
    turn_id: &str,
    tokens: &[String],
) -> Result<Vec<InteractionRecord>, StoreError> {
    let placeholders: Vec<String> = (0..tokens.len()).map(|i| format!("${}", i + 4)).collect();
    let sql = format!(
        "SELECT {SELECT_COLUMNS} FROM interactions WHERE project_id = $1 AND session_id = $2 \
         AND turn_id = $3 AND token IN ({}) ORDER BY id{}",
        placeholders.join(", "),
        tx.lock_clause(),
    );
    with_tx!(tx, conn => {
        let mut query = sqlx::query(&sql).bind(project_id).bind(session_id).bind(turn_id);
        for token in tokens {
            query = query.bind(token);
        }
        let rows = query.fetch_all(&mut **conn).await?;
        rows.iter().map(interaction_from_row).collect()
    })
}
