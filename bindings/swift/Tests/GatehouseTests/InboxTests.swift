// One inbox across hosts (`GatehouseInbox`): two live servers and one that is down, read
// page by page; the down host is reported with its typed failure, not thrown.

import Foundation
import Testing

@testable import Gatehouse

@Suite struct InboxTests {
    /// Opens `count` gates on `client`'s host; their ids.
    func openGates(_ client: GatehouseClient, _ count: Int) async throws -> Set<String> {
        var ids = Set<String>()
        for n in 0..<count {
            let opened = try await client.invokeTool(
                prompt: "step \(n)", tool: "Bash", args: #"{"command":"ls"}"#)
            ids.formUnion(opened.interactionIds)
        }
        return ids
    }

    @Test func twoServersAndOneDownReadAsOneInbox() async throws {
        let project = newProject()
        let team = try client(for: try TestServer.shared.get(), project: project)
        let home = try client(for: try TestServer.durable.get(), project: project)
        let down = try GatehouseClient(
            config: ClientConfig(baseUrl: "http://127.0.0.1:1", apiKey: apiKey, projectId: project, timeout: 10))
        let inbox = GatehouseInbox()
        try inbox.addHost(name: "team", client: team)
        try inbox.addHost(name: "home", client: home)
        try inbox.addHost(name: "down", client: down)
        do {
            try inbox.addHost(name: "team", client: team)
            Issue.record("a host name was accepted twice")
        } catch GatehouseError.Config {
        }
        #expect(inbox.hostNames() == ["team", "home", "down"])

        let teamIds = try await openGates(team, 3)
        let homeIds = try await openGates(home, 2)
        var seen: [String: Set<String>] = ["team": [], "home": []]
        var cursor: String?
        var finished = false
        for _ in 0..<5 where !finished {
            let page = try await inbox.pending(cursor: cursor, perHost: 2)
            guard case .failed(let kind, _, _, let retryable) = page.hosts[2].state else {
                Issue.record("the down host was reported \(page.hosts[2].state)")
                return
            }
            #expect(kind == .transport)
            #expect(retryable)
            for gate in page.gates {
                #expect(seen[gate.host, default: []].insert(gate.gate.id).inserted, "a gate came twice")
            }
            let times = page.gates.compactMap(\.gate.createdAt)
            #expect(times == times.sorted(by: >))
            let next: String = try #require(page.nextCursor, "a failed host keeps the inbox open")
            cursor = next
            finished = page.hosts.prefix(2).allSatisfy {
                if case .done = $0.state { return true } else { return false }
            }
        }
        #expect(finished, "the live hosts were never read to their end")
        #expect(seen == ["team": teamIds, "home": homeIds])
    }

    @Test func aCursorThatIsNotTheInboxsIsAConfigError() async throws {
        let inbox = GatehouseInbox()
        try inbox.addHost(name: "team", client: try client(for: try server(), project: newProject()))
        do {
            _ = try await inbox.pending(cursor: "not a cursor", perHost: 10)
            Issue.record("a foreign cursor was accepted")
        } catch GatehouseError.Config {
        }
    }
}
