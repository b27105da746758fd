//! A turn parked on several gates (the asking calls of one `parallel` step): which
//! rows are its gates, read from its parked state (`gates[].token`); their lock is
//! `commands.rs`'s (`lock_turn_gates`). It reads no row: the row modules use it.
//! The turn continues once all of them are answered; the durable respond and the
//! transition find here whether an answer completes the set.

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
