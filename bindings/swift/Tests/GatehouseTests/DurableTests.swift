// Agenta's durable session control through the Swift binding, against a live
// `gatehouse serve --agenta-contract durable` (TestServer.durable; TestServer.legacy for a
// host without it): the respond's outcomes, its conflicts caught by type, approve-all
// grouped by turn, Stop (requested, then stopped), the snapshot and the events stream.

import Foundation
import Testing

@testable import Gatehouse

func durableServer() throws -> TestServer { try TestServer.durable.get() }

/// Opens a gate in a fresh session; its row as the phone lists it.
func openGate(on server: TestServer, client: GatehouseClient, project: String) async throws
    -> Interaction
{
    let sessionId = try #require(try await server.openGate(project: project)["session_id"] as? String)
    let gates = try await client.listPendingInteractions(sessionId: sessionId)
    #expect(gates.count == 1)
    let gate = try #require(gates.first)
    #expect(gate.turnId != nil, "a gate of the harness names its turn")
    return gate
}

@Suite struct Durable {
    @Test func theClientLearnsTheContractFromTheCapabilities() async throws {
        let durable = try client(for: try durableServer(), project: newProject())
        let legacy = try client(for: try TestServer.legacy.get(), project: newProject())
        #expect(try durable.agentaContract() == nil)
        _ = try await durable.capabilities()
        #expect(try durable.agentaContract() == .durable)
        _ = try await legacy.capabilities()
        #expect(try legacy.agentaContract() == .legacy)
    }

    @Test func respondIsContinuedThenAlreadyRecordedThenNotContinuable() async throws {
        let server = try durableServer()
        let project = newProject()
        let client = try client(for: server, project: project)
        let gate = try await openGate(on: server, client: client, project: project)

        let continued = try await client.respondWithOutcome(
            id: gate.id, approved: true, expectedExecutionId: gate.turnId, sessionId: gate.sessionId)
        guard case .continued(let interaction, let commandId, let commandState, let executionId, let executionState) =
            continued
        else {
            Issue.record("not continued: \(continued)")
            return
        }
        #expect(interaction.id == gate.id)
        #expect(!commandId.isEmpty)
        #expect(commandState == "pending")
        #expect(executionId != gate.turnId)  // the continuation is a new execution
        #expect(executionState == "pending_delivery")

        let again = try await client.respondWithOutcome(id: gate.id, approved: true, sessionId: gate.sessionId)
        guard case .alreadyRecorded(_, let sourceId, let sourceState) = again else {
            Issue.record("not already recorded: \(again)")
            return
        }
        #expect(sourceId == gate.turnId)
        #expect(sourceState == "terminal")

        do {
            _ = try await client.respondWithOutcome(id: gate.id, approved: false, sessionId: gate.sessionId)
            Issue.record("a different verdict was accepted")
        } catch let error as GatehouseError {
            guard case .TurnNotContinuable = error else {
                Issue.record("not TurnNotContinuable: \(error)")
                return
            }
            #expect(error.retryable == false)
        }
    }

    @Test func anotherVerdictAfterTheBatchContinuedTheTurnIsTurnNotContinuable() async throws {
        let server = try durableServer()
        let project = newProject()
        let client = try client(for: server, project: project)
        let gate = try await openGate(on: server, client: client, project: project)
        // Gatehouse's own batch answers it durably on a durable host: the turn continues.
        #expect(try await client.approveAll(ids: [gate.id], approved: false).answered.map(\.id) == [gate.id])
        do {
            _ = try await client.respondWithOutcome(id: gate.id, approved: true, sessionId: gate.sessionId)
            Issue.record("another verdict was accepted")
        } catch GatehouseError.TurnNotContinuable(let msg, let details) {
            #expect("\(msg) \(details ?? "")".contains("terminal"))
        }
    }

    @Test func aStaleExpectedExecutionIsCaughtWithTheCurrentOne() async throws {
        let server = try durableServer()
        let project = newProject()
        let client = try client(for: server, project: project)
        let gate = try await openGate(on: server, client: client, project: project)
        let turnId = try #require(gate.turnId)
        do {
            _ = try await client.respondWithOutcome(
                id: gate.id, approved: true, expectedExecutionId: UUID().uuidString.lowercased(),
                sessionId: gate.sessionId)
            Issue.record("a stale execution was accepted")
        } catch GatehouseError.StaleExecution(let msg, let details) {
            #expect("\(msg) \(details ?? "")".contains(turnId), "\(msg) \(details ?? "")")
        }
        // Nothing was written: the gate waits, and its current turn takes the answer.
        #expect(try await client.listPendingInteractions(sessionId: gate.sessionId).map(\.id) == [gate.id])
        let continued = try await client.respondWithOutcome(
            id: gate.id, approved: true, expectedExecutionId: turnId, sessionId: gate.sessionId)
        guard case .continued = continued else {
            Issue.record("not continued: \(continued)")
            return
        }
    }

    @Test func approveGatesAnswersEachTurnOnceAndReportsEveryGate() async throws {
        let server = try durableServer()
        let project = newProject()
        let client = try client(for: server, project: project)
        let first = try await openGate(on: server, client: client, project: project)
        let second = try await openGate(on: server, client: client, project: project)
        let settled = try await openGate(on: server, client: client, project: project)
        let denied = try await openGate(on: server, client: client, project: project)
        _ = try await client.respondWithOutcome(id: settled.id, approved: true, sessionId: settled.sessionId)
        _ = try await client.respondWithOutcome(id: denied.id, approved: false, sessionId: denied.sessionId)

        let report = try await client.approveGates(
            gates: [first, second, settled, denied, first], approved: true)
        #expect(report.gates.count == 4)  // the gate listed twice is answered once
        let byId = Dictionary(uniqueKeysWithValues: report.gates.map { ($0.interactionId, $0) })
        var commands = Set<String>()
        for gate in [first, second] {
            let line = try #require(byId[gate.id])
            #expect(line.turnId == gate.turnId)
            guard case .answered(.continued(_, let commandId, _, let executionId, _)) = line.result else {
                Issue.record("not continued: \(line)")
                continue
            }
            #expect(executionId != gate.turnId)
            commands.insert(commandId)
        }
        #expect(commands.count == 2)  // one continuation per turn
        guard case .answered(.alreadyRecorded) = try #require(byId[settled.id]).result else {
            Issue.record("not already recorded: \(String(describing: byId[settled.id]))")
            return
        }
        guard case .failed(let failure) = try #require(byId[denied.id]).result else {
            Issue.record("not failed: \(String(describing: byId[denied.id]))")
            return
        }
        #expect(failure.kind == .turnNotContinuable)
        #expect(!failure.retryable)
        #expect(!report.allAlreadyAnswered)
        #expect(try await client.listPendingInteractions().isEmpty)
    }

    @Test func approveGatesOnALegacyHostAnswersEachGate() async throws {
        let server = try TestServer.legacy.get()
        let project = newProject()
        let client = try client(for: server, project: project)
        let gates = [
            try await openGate(on: server, client: client, project: project),
            try await openGate(on: server, client: client, project: project),
        ]
        let report = try await client.approveGates(gates: gates, approved: true)
        #expect(report.gates.map(\.interactionId) == gates.map(\.id))
        for line in report.gates {
            guard case .answered(.answered(let interaction)) = line.result else {
                Issue.record("not answered: \(line)")
                continue
            }
            #expect(interaction.id == line.interactionId)
        }
        let again = try await client.approveGates(gates: gates, approved: true)
        #expect(again.allAlreadyAnswered)
        for line in again.gates {
            guard case .failed(let failure) = line.result else {
                Issue.record("answered twice: \(line)")
                continue
            }
            #expect(failure.kind == .alreadyAnswered)
        }
    }
}

/// A turn that gates first, then works 20 s once answered: Stop catches it in flight.
func slowAfterGate() -> [[String: Any]] {
    [
        ["tool": "Bash", "args": ["command": "echo hi"]],
        ["wait_ms": 20000],
        ["say": "done"],
    ]
}

/// The session's snapshot once its turn runs (polled, at most 20 s).
func waitUntilRunning(_ client: GatehouseClient, _ sessionId: String) async throws -> SessionSnapshot {
    for _ in 0..<400 {
        let snapshot = try await client.sessionSnapshot(sessionId: sessionId)
        if snapshot.executionState == "running" { return snapshot }
        try await Task.sleep(nanoseconds: 50_000_000)
    }
    throw TestFailure("the turn of \(sessionId) never ran")
}

@Suite struct DurableSessionControl {
    @Test func theSnapshotListsThePendingGates() async throws {
        let server = try durableServer()
        let project = newProject()
        let client = try client(for: server, project: project)
        let gate = try await openGate(on: server, client: client, project: project)
        let snapshot = try await client.sessionSnapshot(sessionId: gate.sessionId)
        #expect(snapshot.pendingInteractions == [gate])
        #expect(snapshot.durableApprovals)
        #expect(snapshot.executionState == "idle")  // a turn parked on a gate is not running
        _ = try await client.respondWithOutcome(id: gate.id, approved: true, sessionId: gate.sessionId)
        #expect(try await client.sessionSnapshot(sessionId: gate.sessionId).pendingInteractions.isEmpty)
    }

    @Test func stopIsRequestedThenWaitForStopReportsStopped() async throws {
        let server = try durableServer()
        let project = newProject()
        let client = try client(for: server, project: project)
        let sessionId = try #require(
            try await server.openGate(project: project, script: slowAfterGate())["session_id"] as? String)
        let gate = try #require(try await client.listPendingInteractions(sessionId: sessionId).first)
        let continued = try await client.respondWithOutcome(id: gate.id, approved: true, sessionId: sessionId)
        guard case .continued(_, _, _, let continuation, _) = continued else {
            Issue.record("not continued: \(continued)")
            return
        }
        let running = try await waitUntilRunning(client, sessionId)
        #expect(running.executionId == continuation)

        let stop = try await client.stopSession(sessionId: sessionId, expectedExecutionId: running.executionId)
        // Requested is not applied: the command is recorded, the turn is stopping.
        #expect(stop.isStopping)
        #expect(stop.commandState == "pending")
        #expect(stop.executionId == running.executionId)
        #expect(stop.executionState == "stopping")

        let outcome = try await client.waitForStop(sessionId: sessionId, stop: stop, timeout: 30)
        #expect(outcome == .stopped(executionId: continuation))
        #expect(try await client.sessionSnapshot(sessionId: sessionId).executionState == "idle")
    }

    @Test func stopWithAStaleExpectedExecutionIsCaught() async throws {
        let server = try durableServer()
        let project = newProject()
        let client = try client(for: server, project: project)
        let sessionId = try #require(
            try await server.openGate(project: project, script: slowAfterGate())["session_id"] as? String)
        let gate = try #require(try await client.listPendingInteractions(sessionId: sessionId).first)
        _ = try await client.respondWithOutcome(id: gate.id, approved: true, sessionId: sessionId)
        let running = try await waitUntilRunning(client, sessionId)
        do {
            _ = try await client.stopSession(sessionId: sessionId, expectedExecutionId: gate.turnId)
            Issue.record("a stale Stop was accepted")
        } catch GatehouseError.StaleExecution {}
        let stop = try await client.stopSession(sessionId: sessionId, expectedExecutionId: running.executionId)
        let outcome = try await client.waitForStop(sessionId: sessionId, stop: stop, timeout: 30)
        guard case .stopped = outcome else {
            Issue.record("not stopped: \(outcome)")
            return
        }
    }

    @Test func theEventsReplayFromAfterAndEndWhenCancelled() async throws {
        let server = try durableServer()
        let project = newProject()
        let client = try client(for: server, project: project)
        let gate = try await openGate(on: server, client: client, project: project)
        let continued = try await client.respondWithOutcome(id: gate.id, approved: true, sessionId: gate.sessionId)
        guard case .continued(_, _, _, let continuation, _) = continued else {
            Issue.record("not continued: \(continued)")
            return
        }
        let sessionId = gate.sessionId
        @Sendable func collect(after: Int64, until: @escaping @Sendable (SessionEvent) -> Bool) async throws
            -> [SessionEvent]
        {
            try await within(30) {
                var seen: [SessionEvent] = []
                for try await event in client.sessionEvents(sessionId: sessionId, after: after) {
                    seen.append(event)
                    if until(event) { break }
                }
                return seen
            }
        }
        // From the start: the parked turn's events, then the continuation's, in order, until
        // the continuation's turn completed (nothing comes after it).
        let everything = try await collect(after: 0) {
            $0.executionId == continuation && $0.eventType == "message.completed"
        }
        let sequences = everything.compactMap(\.sequence)
        #expect(everything.count >= 2)
        #expect(sequences.count == everything.count)
        #expect(sequences == Array(Set(sequences)).sorted())
        #expect(everything.first?.executionId == gate.turnId)
        let last = try #require(sequences.last)
        #expect(try await client.sessionSnapshot(sessionId: sessionId).latestSequence == last)
        // From a sequence: exactly the events after it, the same ones.
        let first = try #require(sequences.first)
        #expect(try await collect(after: first) { $0.sequence == last } == Array(everything.dropFirst()))

        // Cancelling the consuming task while it waits for an event that does not come ends
        // the stream at once.
        let consumer = Task {
            var count = 0
            for try await _ in client.sessionEvents(sessionId: sessionId, after: last) { count += 1 }
            return count
        }
        try await Task.sleep(nanoseconds: 500_000_000)
        consumer.cancel()
        let seen = try await within(5) { try await consumer.value }
        #expect(seen == 0)
    }

    @Test func cancellingTheEventsConsumerClosesTheStreamsConnection() async throws {
        // Its own server, and a client that only streams: the connections counted are the
        // stream's alone. A session with no events yet: the stream waits after its replay.
        let own = try TestServer.start(noExecution: false, agentaContract: "durable").get()
        let client = try client(for: own, project: newProject())
        let sessionId = UUID().uuidString.lowercased()
        let consumer = Task {
            var count = 0
            for try await _ in client.sessionEvents(sessionId: sessionId) { count += 1 }
            return count
        }
        #expect(await eventually(10) { establishedConnections(port: own.port) >= 2 })  // both ends
        consumer.cancel()
        let seen = try await within(5) { try await consumer.value }
        #expect(seen == 0)
        #expect(await eventually(10) { establishedConnections(port: own.port) == 0 })
    }
}
