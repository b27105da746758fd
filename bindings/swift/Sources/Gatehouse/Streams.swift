// Hand-written (not generated): a session's watch, an execution session's events and a
// session's durable events as Swift's own `AsyncThrowingStream`, over the Rust core's pull
// streams.
//
// Each element is pulled from Rust only when the consumer asks for it: nothing is read
// ahead or buffered here, so a slow consumer never makes memory grow (the server's bytes
// wait in the socket). The stream is cold: iterating starts the watch. Cancelling the
// consuming task ends the stream (a pending `next()` returns at once) and closes the
// connection, which ends the server-side watch; so does dropping the stream.

import Foundation

extension GatehouseClient {
    /// A session's gates as an `AsyncThrowingStream`: `.connected` after every (re)connect
    /// (re-query the gates then), `.event(...)` for each server event, `.reconnecting(...)`
    /// while it retries by itself. It throws a `GatehouseError` a retry cannot fix
    /// (unauthorized, bad session id, no watch capability) and then ends.
    ///
    /// ```swift
    /// for try await update in client.sessionUpdates(sessionId: id) {
    ///     if case .event(event: .interaction(_, .pending, _, let gate?)) = update { show(gate) }
    /// }
    /// ```
    public func sessionUpdates(sessionId: String) -> AsyncThrowingStream<WatchUpdate, Error> {
        pullStream { try self.openSessionWatch(sessionId: sessionId) }
    }

    /// An execution session's events as an `AsyncThrowingStream`, each once in sequence
    /// order, from the first (or after sequence `after`); it finishes once the session is
    /// reconciled (the log is complete).
    public func executionEvents(
        roomId: String, sessionId: String, after: Int64? = nil
    ) -> AsyncThrowingStream<ExecutionEvent, Error> {
        pullStream { try self.openExecutionEvents(roomId: roomId, sessionId: sessionId, after: after) }
    }

    /// A session's durable events (Agenta's durable session control) as an
    /// `AsyncThrowingStream`: every `SessionEvent` after sequence `after` (0: from the
    /// first), each sequence once, in order: the replay of the session's log, then each new
    /// event as it is recorded; a dropped connection is resumed after the last sequence
    /// seen. It finishes when the host closes the stream for good (e.g. the authorization
    /// was revoked), else when the consuming task is cancelled (the watch is cancelled and
    /// its connection closed at once). It throws a `GatehouseError` a retry cannot fix
    /// (unauthorized, no such route, a negative `after`) and then ends.
    ///
    /// Only durable events are yielded: the connection's state, the end of the replay and
    /// the live frames are on the pull object itself (`openSessionEvents`).
    ///
    /// ```swift
    /// for try await event in client.sessionEvents(sessionId: id, after: lastSeen) {
    ///     lastSeen = event.sequence ?? lastSeen
    ///     if event.eventType == "execution.stopped" { break }
    /// }
    /// ```
    public func sessionEvents(
        sessionId: String, after: Int64 = 0
    ) -> AsyncThrowingStream<SessionEvent, Error> {
        pullStream { DurableEvents(watch: try self.openSessionEvents(sessionId: sessionId, after: after)) }
    }
}

/// The generated pull objects, seen alike.
protocol PullSource: Sendable {
    associatedtype Element: Sendable
    func next() async throws -> Element?
    func cancel()
}

extension SessionWatch: PullSource {}
extension ExecutionEventWatch: PullSource {}

/// A `SessionEventWatch` seen as its durable events only: the other updates are skipped,
/// a `.closed` ends it.
struct DurableEvents: PullSource {
    let watch: SessionEventWatch

    func next() async throws -> SessionEvent? {
        while let update = try await watch.next() {
            switch update {
            case .event(let event): return event
            case .closed: watch.cancel(); return nil
            default: continue
            }
        }
        return nil
    }

    func cancel() { watch.cancel() }
}

/// Opens the source on the first pull (cold), pulls one element per consumer request, and
/// cancels the source when the consuming task is cancelled.
func pullStream<Source: PullSource>(
    _ open: @escaping @Sendable () throws -> Source
) -> AsyncThrowingStream<Source.Element, Error> {
    let opened = OpenOnce(open)
    return AsyncThrowingStream(unfolding: {
        let source = try opened.get()
        return try await withTaskCancellationHandler {
            try await source.next()
        } onCancel: {
            source.cancel()
        }
    })
}

/// The source, opened by the first pull only.
final class OpenOnce<Source: Sendable>: @unchecked Sendable {
    // The lock guards `source`; `open` is only read.
    private let lock = NSLock()
    private let open: @Sendable () throws -> Source
    private var source: Source?

    init(_ open: @escaping @Sendable () throws -> Source) {
        self.open = open
    }

    func get() throws -> Source {
        lock.lock()
        defer { lock.unlock() }
        if let source { return source }
        let opened = try open()
        source = opened
        return opened
    }

    deinit {
        // The stream was dropped: stop the watch now rather than when Rust frees it.
        if let source = source as? any PullSource { source.cancel() }
    }
}
