//! The follow loop of the streaming commands (`interactions watch`, `interventions
//! events --follow`): read a stream until it ends, Ctrl-C, or enough items were shown.

use std::future::Future;

use futures::{Stream, StreamExt};

use crate::exit::{client_error, CliResult};

/// Hand each item of `stream` to `show` until the stream ends, Ctrl-C is pressed, or
/// `max_items` items counted (each call of `show` says whether its item counts: a watch
/// counts its events, not its reconnects). A stream error ends the follow as the error.
pub async fn follow_stream<S, T, F, Fut>(
    stream: S,
    max_items: Option<usize>,
    mut show: F,
) -> CliResult
where
    S: Stream<Item = Result<T, gatehouse_client::Error>>,
    F: FnMut(T) -> Fut,
    Fut: Future<Output = CliResult<bool>>,
{
    let mut stream = std::pin::pin!(stream);
    let mut counted = 0usize;
    loop {
        if max_items.is_some_and(|max| counted >= max) {
            return Ok(());
        }
        let next = tokio::select! {
            next = stream.next() => next,
            _ = tokio::signal::ctrl_c() => return Ok(()),
        };
        let Some(item) = next else {
            return Ok(());
        };
        if show(item.map_err(client_error)?).await? {
            counted += 1;
        }
    }
}
