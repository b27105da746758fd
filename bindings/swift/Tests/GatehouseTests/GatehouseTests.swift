// The Swift binding against a live `gatehouse serve` (TestServer.swift): the scenarios of
// the Kotlin and Python suites, the async sequences, hostile servers and 100 concurrent
// calls. Every test uses its own project, so tests never see each other's gates and can
// run in parallel.

import Foundation
import Testing

@testable import Gatehouse

func server() throws -> TestServer { try TestServer.shared.get() }

/// Polls `condition` every 20 ms for up to `seconds`.
func eventually(_ seconds: Double = 10, _ condition: () async throws -> Bool) async rethrows
    -> Bool
{
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(nanoseconds: 20_000_000)
    }
    return try await condition()
}

/// Fails the test when `body` does not finish within `seconds`; unlike a task group, it
/// does not wait for a body that never ends (an uncancellable call would hang the suite).
func within<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T)
    async throws -> T
{
    let once = ResumeOnce<T>()
    return try await withCheckedThrowingContinuation { continuation in
        once.set(continuation)
        Task { once.resume(with: await Result(catching: body)) }
        Task {
            try? await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
            once.resume(with: .failure(TestFailure("did not finish within \(seconds) s")))
        }
    }
}

extension Result where Failure == Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

final class ResumeOnce<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, Error>?

    func set(_ continuation: CheckedContinuation<T, Error>) {
        lock.lock()
        defer { lock.unlock() }
        self.continuation = continuation
    }

    func resume(with result: Result<T, Error>) {
        lock.lock()
        let continuation = self.continuation
        self.continuation = nil
        lock.unlock()
        continuation?.resume(with: result)
    }
}

@Suite struct Interactions {
    @Test func listPendingShowsTheGateWithItsRequestAndStampedConfig() async throws {
        let server = try server()
        let project = newProject()
        let answer = try await server.openGate(project: project)
        let client = try client(for: server, project: project)
        let gates = try await client.listPendingInteractions(sessionId: answer["session_id"] as? String)
        #expect(gates.map(\.id) == [gateId(answer)])
        let gate = try #require(gates.first)
        #expect(gate.kind == .userApproval)
        #expect(gate.status == .pending)
        #expect(gate.request?.tool == "Bash")
        let args = try JSONSerialization.jsonObject(with: Data((gate.request?.args ?? "").utf8))
        #expect((args as? [String: Any])?["command"] as? String == "echo hi")
        // The stamped config the turn ran under, as the row keeps it.
        let parameters = try #require(gate.parameters)
        let config = try JSONSerialization.jsonObject(with: Data(parameters.utf8)) as? [String: Any]
        let llm = (config?["agent"] as? [String: Any])?["llm"] as? [String: Any]
        #expect(llm?["model"] as? String == "swift-model-1")
        #expect(try await client.getInteraction(id: gate.id) == gate)
    }

    @Test func aSecondAnswerIsCaughtByTypeAndARetryWithTheSameKeyIsNot() async throws {
        let server = try server()
        let project = newProject()
        let id = gateId(try await server.openGate(project: project))
        let client = try client(for: server, project: project)
        let key = UUID().uuidString
        let answered = try await client.respondToInteraction(
            id: id, approved: true, message: "go ahead", idempotencyKey: key)
        #expect(answered.id == id)
        #expect(answered.status != .pending)

        // The same answer re-sent with its key (an app restarted after the tap): replayed.
        let replay = try await client.respondToInteraction(
            id: id, approved: true, message: "go ahead", idempotencyKey: key)
        #expect(replay.id == id)

        // Anyone else's answer: AlreadyAnswered, caught by type.
        do {
            _ = try await client.respondToInteraction(id: id, approved: false)
            Issue.record("a second answer was accepted")
        } catch GatehouseError.AlreadyAnswered(let msg, _) {
            #expect(msg.contains("respond_interaction"), "\(msg)")
        }
        do {
            _ = try await client.respondToInteraction(id: id, approved: false)
        } catch let error as GatehouseError {
            #expect(error.kind == .alreadyAnswered)
            #expect(error.retryable == false)
        }
        #expect(try await client.listPendingInteractions().isEmpty)
    }

    @Test func approveAllReportsAnsweredAlreadyAnsweredAndFailedTargets() async throws {
        let server = try server()
        let project = newProject()
        let fresh = gateId(try await server.openGate(project: project))
        let settled = gateId(try await server.openGate(project: project))
        let unknown = UUID().uuidString.lowercased()
        let client = try client(for: server, project: project)
        _ = try await client.respondToInteraction(id: settled, approved: false, message: "no")

        let report = try await client.approveAll(ids: [fresh, settled, unknown], approved: true)
        #expect(report.answered.map(\.id) == [fresh])
        #expect(report.alreadyAnswered == [settled])
        #expect(report.failed.map(\.interactionId) == [unknown])
        #expect(report.failed.first?.kind == .notFound)
        #expect(report.failed.first?.retryable == false)
        #expect(!report.allAlreadyAnswered)

        let again = try await client.approveAll(ids: [fresh, settled], approved: true)
        #expect(again.answered.isEmpty && again.failed.isEmpty)
        #expect(Set(again.alreadyAnswered) == [fresh, settled])
        #expect(again.allAlreadyAnswered)
    }

    @Test func aHundredConcurrentCallsFromTasksShareOneClient() async throws {
        let server = try server()
        let project = newProject()
        let answer = try await server.openGate(project: project)
        let id = gateId(answer)
        let client = try client(for: server, project: project)
        let ids = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 {
                group.addTask { try await client.getInteraction(id: id).id }
            }
            var ids: [String] = []
            for try await id in group { ids.append(id) }
            return ids
        }
        #expect(ids.count == 100 && ids.allSatisfy { $0 == id })
        // And 20 devices racing to answer one gate: exactly one wins.
        let outcomes = await withTaskGroup(of: Bool?.self) { group in
            for index in 0..<20 {
                group.addTask {
                    do {
                        _ = try await client.respondToInteraction(id: id, approved: index % 2 == 0)
                        return true
                    } catch GatehouseError.AlreadyAnswered {
                        return false
                    } catch {
                        return nil
                    }
                }
            }
            var outcomes: [Bool?] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        #expect(outcomes.filter { $0 == true }.count == 1)
        #expect(outcomes.filter { $0 == false }.count == 19)
    }
}

@Suite struct Streams {
    @Test func sessionUpdatesSeeAGateOpenAndClose() async throws {
        let server = try server()
        let project = newProject()
        let session = UUID().uuidString.lowercased()
        let client = try client(for: server, project: project)
        var updates = client.sessionUpdates(sessionId: session).makeAsyncIterator()
        #expect(try await updates.next() == .connected)

        let answer = try await server.openGate(project: project, session: session)
        var opened: String?
        while opened == nil, let update = try await updates.next() {
            if case .event(.interaction(let sid, .pending, let gate, _)) = update {
                #expect(sid == session)
                opened = gate
            }
        }
        #expect(opened == gateId(answer))

        _ = try await client.respondToInteraction(id: gateId(answer), approved: true)
        var closed = false
        while !closed, let update = try await updates.next() {
            if case .event(.interaction(_, let status, _, _)) = update, status != .pending {
                closed = true
            }
        }
        #expect(closed)
    }

    /// A gate opened with the binding's own `invokeTool` arrives on the stream with its
    /// record: a non-optional status, a `Date`, the tool; answering it needs no `_ =`.
    @Test func aWatchEventCarriesTheGateInvokeToolOpened() async throws {
        let server = try server()
        let client = try client(for: server, project: newProject())
        let session = UUID().uuidString.lowercased()
        var updates = client.sessionUpdates(sessionId: session).makeAsyncIterator()
        #expect(try await updates.next() == .connected)
        let opened = try await client.invokeTool(
            prompt: "clean up", tool: "Bash", args: #"{"command":"rm -rf /tmp/cache"}"#,
            sessionId: session)
        #expect(opened.status == .parked)
        #expect(opened.interactionIds.count == 1)
        var shown: Interaction?
        while shown == nil, let update = try await updates.next() {
            if case .event(.interaction(_, .pending, _, let gate?)) = update { shown = gate }
        }
        let gate = try #require(shown)
        #expect(gate.id == opened.interactionIds.first)
        let status: InteractionStatus = gate.status
        #expect(status == .pending)
        #expect(gate.request?.tool == "Bash")
        struct Command: Decodable { let command: String }
        #expect(try gate.request?.args(as: Command.self)?.command == "rm -rf /tmp/cache")
        #expect(try gate.parameters()?["agent"] != nil)
        let created: Date = try #require(gate.createdAt)
        #expect(abs(created.timeIntervalSinceNow) < 3600)
        try await client.respondToInteraction(id: gate.id, approved: true)
    }

    @Test func cancellingTheTaskEndsTheStreamAndTheServerSideWatch() async throws {
        // Its own server: the connection count below is this test's alone.
        let server = try TestServer.start(noExecution: false).get()
        let client = try client(for: server, project: newProject())
        let connected = AsyncStream<Void>.makeStream()
        let consumer = Task {
            var count = 0
            for try await update in client.sessionUpdates(sessionId: UUID().uuidString.lowercased()) {
                if update == .connected { connected.continuation.yield() }
                count += 1
            }
            return count
        }
        var signals = connected.stream.makeAsyncIterator()
        await signals.next()
        #expect(establishedConnections(port: server.port) >= 2)  // both ends of the watch
        consumer.cancel()
        let seen = try await within(5) { try await consumer.value }
        #expect(seen >= 1)
        // The client closed the connection, and the server ended its watch: no
        // connection to the server is left, on either end.
        #expect(await eventually(10) { establishedConnections(port: server.port) == 0 })
    }

    @Test func aStreamIsColdAndARefusedOneThrowsTheTypedError() async throws {
        let server = try server()
        let client = try client(for: server, project: newProject(), key: "not-the-key")
        let stream = client.sessionUpdates(sessionId: UUID().uuidString.lowercased())
        // Nothing was sent yet: creating the sequence opened nothing.
        do {
            for try await _ in stream { Issue.record("a refused watch yielded an update") }
            Issue.record("a refused watch ended without an error")
        } catch GatehouseError.Unauthorized(let msg, _) {
            #expect(msg.contains("unauthorized"))
        }
    }

    @Test func executionEventsArriveInOrderAndFinishOnceReconciled() async throws {
        let server = try server()
        let project = newProject()
        let answer = try await server.openGate(project: project)
        let execution = try #require(answer["execution"] as? [String: Any])
        let room = try #require(execution["room_id"] as? String)
        let session = try #require(execution["session_id"] as? String)
        let client = try client(for: server, project: project)
        _ = try await client.respondToInteraction(id: gateId(answer), approved: true)
        let events = try await within(30) {
            var events: [ExecutionEvent] = []
            for try await event in client.executionEvents(roomId: room, sessionId: session) {
                events.append(event)
            }
            return events
        }
        let sequences = events.map(\.sequence)
        #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count)
        #expect(events.first?.eventType == .sessionOpened)
        #expect(events.last?.eventType == .sessionReconciled)
    }
}

@Suite struct Interventions {
    @Test func requestedIsShownAsRequestedAndAppliedOnlyWithEvidence() async throws {
        let server = try server()
        let project = newProject()
        let answer = try await server.openGate(project: project)
        let execution = try #require(answer["execution"] as? [String: Any])
        let room = try #require(execution["room_id"] as? String)
        let session = try #require(execution["session_id"] as? String)
        let client = try client(for: server, project: project)

        let seen = try await client.getExecutionSession(roomId: room, sessionId: session)
        #expect(seen.revision == (execution["revision"] as? NSNumber)?.int64Value)
        #expect(seen.status == .paused)
        let requested = try await client.requestIntervention(
            roomId: room, sessionId: session, expectedRevision: seen.revision,
            instruction: "stop", checkpoint: .preAction)
        #expect(requested.state == .requested)
        // Requested is not applied: the run is parked at the gate; a short wait says so.
        #expect(
            try await client.waitForIntervention(
                roomId: room, sessionId: session, operationId: requested.operationId, timeout: 0.05)
                == .timedOut)
        do {
            _ = try await client.requestIntervention(
                roomId: room, sessionId: session, expectedRevision: seen.revision,
                instruction: "be brief", checkpoint: .preStep)
            Issue.record("a stale revision was accepted")
        } catch GatehouseError.RevisionConflict {
        }

        _ = try await client.respondToInteraction(id: gateId(answer), approved: true)
        let outcome = try await client.waitForIntervention(
            roomId: room, sessionId: session, operationId: requested.operationId, timeout: 10)
        guard case .applied(let evidence) = outcome else {
            Issue.record("not applied: \(outcome)")
            return
        }
        #expect(evidence.eventType == .interventionApplied)
        #expect(evidence.operationId == requested.operationId)
        #expect(evidence.checkpoint == .preAction)
        #expect(
            try await eventually(10) {
                try await client.getExecutionSession(roomId: room, sessionId: session).status == .canceled
            })
    }

    @Test func aHostWithoutExecutionIsCapabilityUnavailableAfterOneRequest() async throws {
        let server = try TestServer.withoutExecution.get()
        let client = try client(for: server, project: newProject())
        let capabilities = try await client.capabilities()
        #expect(!capabilities.capabilities.contains(.execution))
        let clock = ContinuousClock()
        let started = clock.now
        do {
            _ = try await client.getExecutionSession(roomId: "room-1", sessionId: "es-1")
            Issue.record("a host without execution answered")
        } catch GatehouseError.CapabilityUnavailable(let msg, _) {
            #expect(!msg.isEmpty)
        }
        // One request, no retries with backoff: it comes back at once.
        #expect(clock.now - started < .seconds(2))
    }
}

@Suite struct HostileServers {
    /// Calls the server and keeps it alive until the call ends (Swift may release a local
    /// after its last use, which would stop the server mid-call).
    func call(_ server: HostileServer) async throws {
        defer { server.stop() }
        let client = try GatehouseClient(
            config: ClientConfig(
                baseUrl: server.url, apiKey: apiKey, projectId: newProject(), timeout: 5))
        _ = try await client.listPendingInteractions()
    }

    @Test func htmlIsATypedError() async throws {
        let html = "<html><body>502 Bad Gateway</body></html>"
        let server = try HostileServer(
            .answer(
                "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: \(html.utf8.count)\r\nConnection: close\r\n\r\n\(html)"
            ))
        do {
            try await call(server)
            Issue.record("HTML was read as gates")
        } catch let error as GatehouseError {
            #expect([.server, .decode].contains(error.kind), "\(error)")
        }
    }

    @Test func garbageIsATypedError() async throws {
        let server = try HostileServer(.answer("\u{1}\u{2}not http at all\r\n\r\n"))
        do {
            try await call(server)
            Issue.record("garbage was read as gates")
        } catch let error as GatehouseError {
            #expect([.transport, .decode].contains(error.kind), "\(error)")
        }
    }

    @Test func aJsonBodyOfTheWrongShapeIsADecodeError() async throws {
        let body = "{\"count\": \"many\", \"interactions\": 7}"
        let server = try HostileServer(
            .answer(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
            ))
        do {
            try await call(server)
            Issue.record("a wrong-shape body was read as gates")
        } catch GatehouseError.Decode(let msg, _) {
            #expect(!msg.isEmpty)
        }
    }

    @Test func aDroppedConnectionIsATransportError() async throws {
        let server = try HostileServer(.drop)
        do {
            try await call(server)
            Issue.record("a dropped connection was read as gates")
        } catch GatehouseError.Transport(let msg, _) {
            #expect(!msg.isEmpty)
        }
    }

    @Test func badConfigurationIsAConfigError() throws {
        #expect(throws: GatehouseError.self) {
            _ = try GatehouseClient(config: ClientConfig(baseUrl: "not a url"))
        }
        do {
            _ = try GatehouseClient(config: ClientConfig(baseUrl: "http://127.0.0.1:1", timeout: 0))
            Issue.record("a zero timeout was accepted")
        } catch GatehouseError.Invalid {
        }
    }
}

@Suite struct Records {
    @Test func recordsAndEnumsPrintReadably() async throws {
        #expect("\(LifecycleState.running)" == "running")
        let status: InteractionStatus = .unknown(value: "snoozed")
        #expect("\(status)".contains("snoozed"))
    }
}

@Suite struct Errors {
    /// What an app shows a person by default (`print(error)`, `"\(error)"`,
    /// `localizedDescription`) is the error's sentence, never the enum dump
    /// (`GatehouseError.NotFound(msg: ..., details: Optional(...))`).
    @Test func anErrorPrintsAsItsSentenceEverywhere() async throws {
        let server = try server()
        let client = try client(for: server, project: newProject())
        do {
            _ = try await client.getInteraction(id: UUID().uuidString.lowercased())
            Issue.record("an unknown gate was found")
        } catch let error as GatehouseError {
            guard case .NotFound(let msg, let details) = error else {
                Issue.record("not NotFound: \(error)")
                return
            }
            #expect(details != nil)
            #expect(msg.contains("not found"), "\(msg)")
            let renderings = [
                String(describing: error), "\(error)", String(reflecting: error), error.description,
                error.localizedDescription, (error as Error).localizedDescription,
                error.errorDescription ?? "",
            ]
            for text in renderings {
                #expect(text == msg)
                #expect(!text.contains("msg:") && !text.contains("Optional(") && !text.contains("GatehouseError"), "\(text)")
            }
        }
    }

    /// The kind and the retry flag are plain properties (no `try`), named as on `GateFailure`.
    @Test func theKindAndTheRetryFlagArePlainProperties() throws {
        let unavailable = GatehouseError.Server(msg: "list interactions: server error, HTTP 503: busy", details: "busy", status: 503)
        #expect(unavailable.kind == .server)
        #expect(unavailable.retryable)
        #expect("\(unavailable)" == "list interactions: server error, HTTP 503: busy")
        let teapot = GatehouseError.Server(msg: "teapot", details: nil, status: 418)
        #expect(teapot.retryable == false)
        let answered = GatehouseError.AlreadyAnswered(msg: "answered", details: nil)
        #expect(answered.kind == .alreadyAnswered)
        #expect(answered.retryable == false)
        #expect(GatehouseError.Timeout(msg: "slow", details: "1500 ms").retryable)
    }
}
