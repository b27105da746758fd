// Answers bound to the gate that was shown (docs/CONTRACT.md C8): the shared vectors
// (tests/data/gate_digest.vectors.json) through the binding's `gateDigest`, and, against a
// live durable `gatehouse serve`, a respond from the displayed record: a record that is not
// the gate as it is now gets `StaleGate` with nothing recorded; the genuine one is answered.

import Foundation
import Testing

@testable import Gatehouse

@Suite struct GateDigestTests {
    struct Vectors: Decodable {
        struct Vector: Decodable {
            let name: String
            let id: String
            let revision: Int64
            let tool: String?
            let tool_call_id: String?
            let args_json: String?
            let digest: String
        }
        let vectors: [Vector]
    }

    @Test func everySharedVectorIsComputedAlike() throws {
        let root = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let data = try Data(contentsOf: root.appendingPathComponent("tests/data/gate_digest.vectors.json"))
        let vectors = try JSONDecoder().decode(Vectors.self, from: data).vectors
        #expect(vectors.count >= 10)
        for vector in vectors {
            let digest = try gateDigest(
                id: vector.id, revision: vector.revision, tool: vector.tool,
                toolCallId: vector.tool_call_id, argsJson: vector.args_json)
            #expect(digest == vector.digest, "\(vector.name)")
        }
    }

    @Test func aRespondFromTheDisplayedRecordIsBoundToIt() async throws {
        let server = try TestServer.durable.get()
        let project = newProject()
        let client = try client(for: server, project: project)
        let gate = try await openGate(on: server, client: client, project: project)
        let request = try #require(gate.request)
        #expect(gate.revision == 1)
        #expect(gate.digest?.hasPrefix("sha256:") == true)
        #expect(
            try gateDigest(
                id: gate.id, revision: try #require(gate.revision), tool: request.tool,
                toolCallId: request.toolCallId, argsJson: request.args) == gate.digest)

        var stale = gate
        stale.revision = (gate.revision ?? 0) + 1
        do {
            _ = try await client.respondToGate(gate: stale, approved: true)
            Issue.record("a record of another revision was answered")
        } catch GatehouseError.StaleGate {
        }
        var edited = gate
        var editedRequest = request
        editedRequest.args = #"{"command":"rm -rf /"}"#
        edited.request = editedRequest
        do {
            _ = try await client.respondToGate(gate: edited, approved: true)
            Issue.record("a record with other arguments was answered")
        } catch GatehouseError.StaleGate {
        }
        let still = try await client.getInteraction(id: gate.id)
        #expect(still.status == .pending)
        #expect(still.resolution == nil)

        let outcome = try await client.respondToGate(gate: gate, approved: true)
        guard case .continued = outcome else {
            Issue.record("the genuine record was not answered: \(outcome)")
            return
        }
    }
}
