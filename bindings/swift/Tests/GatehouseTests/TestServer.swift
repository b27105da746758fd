// A live `gatehouse serve` for the Swift suite, on an ephemeral port and a fresh SQLite
// file, as the Kotlin and Python suites start theirs. The server binary is
// $GATEHOUSE_BIN, else debug/gatehouse in cargo's target directory (as `cargo metadata`
// reports it). The suite fails, never skips, when the binary is missing.

import Foundation
import Gatehouse
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

let apiKey = "swift-binding-secret"

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `command` and returns its standard output, or nil when it failed.
func output(of command: [String], in directory: String? = nil) -> Data? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = command
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return nil }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return process.terminationStatus == 0 ? data : nil
}

/// The repository root (this file is bindings/swift/Tests/GatehouseTests/TestServer.swift).
let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().path

func serverBinary() throws -> String {
    if let binary = ProcessInfo.processInfo.environment["GATEHOUSE_BIN"] { return binary }
    guard
        let data = output(
            of: ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
            in: repositoryRoot),
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
        let target = object["target_directory"] as? String
    else { throw TestFailure("cargo metadata failed: set GATEHOUSE_BIN to the server binary") }
    return target + "/debug/gatehouse"
}

/// One `gatehouse serve` process. It is started under a shell that kills it once this
/// test process is gone (it polls the test process's pid), so no server outlives the
/// suite, even when a test crashes or the suite is killed. With SIGKILL: a child that
/// Foundation's `Process` starts inherits its blocked signal mask, so SIGTERM would stay
/// pending forever.
final class TestServer: @unchecked Sendable {
    let url: String
    let port: Int
    private let process: Process
    private let directory: URL

    /// The suites written for Agenta's contract before the durable one (a second device's
    /// other verdict is AlreadyAnswered): `--agenta-contract legacy`. The durable contract,
    /// the server's default, is `durable`'s.
    static let shared: Result<TestServer, TestFailure> = start(
        noExecution: false, agentaContract: "legacy")
    static let withoutExecution: Result<TestServer, TestFailure> = start(noExecution: true)
    /// Agenta's paths speaking the durable contract (`--agenta-contract durable`).
    static let durable: Result<TestServer, TestFailure> = start(
        noExecution: false, agentaContract: "durable")
    /// The contract before it (`--agenta-contract legacy`: the respond answers the row).
    static var legacy: Result<TestServer, TestFailure> { shared }

    static func start(noExecution: Bool, agentaContract: String? = nil) -> Result<
        TestServer, TestFailure
    > {
        do {
            return .success(try TestServer(noExecution: noExecution, agentaContract: agentaContract))
        } catch let failure as TestFailure {
            return .failure(failure)
        } catch {
            return .failure(TestFailure("\(error)"))
        }
    }

    private init(noExecution: Bool, agentaContract: String?) throws {
        let binary = try serverBinary()
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw TestFailure(
                "server binary \(binary) not found: build it (cargo build -p gatehouse-cli) or set GATEHOUSE_BIN")
        }
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("gatehouse-swift-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var arguments = [
            binary, "serve", "--bind", "127.0.0.1:0",
            "--database-url", "sqlite://\(directory.path)/gatehouse.db",
            "--api-key", "phone=\(apiKey)",
        ]
        if noExecution { arguments.append("--no-execution") }
        if let agentaContract { arguments += ["--agenta-contract", agentaContract] }
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        let watched = String(ProcessInfo.processInfo.processIdentifier)
        process.arguments =
            [
                "-c",
                "watched=$1; shift; \"$@\" & pid=$!; "
                    + "while kill -0 $watched 2>/dev/null && kill -0 $pid 2>/dev/null; do sleep 0.5; done; "
                    + "kill -9 $pid 2>/dev/null; wait $pid",
                "sh", watched,
            ] + arguments
        process.standardInput = FileHandle.nullDevice
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
            ?? FileHandle.standardError
        try process.run()

        // Read until the "listening on URL" line, then keep draining so the server never
        // blocks on a full pipe.
        let found = Found()
        stdout.fileHandleForReading.readabilityHandler = { handle in
            found.append(handle.availableData)
        }
        let deadline = Date().addingTimeInterval(30)
        while found.url == nil && Date() < deadline && process.isRunning {
            Thread.sleep(forTimeInterval: 0.02)
        }
        guard let url = found.url, let port = URL(string: url)?.port else {
            throw TestFailure("gatehouse serve printed no 'listening on' line within 30 s")
        }
        self.url = url
        self.port = port
    }

    /// Invoke the deterministic agent with `ask` permissions: its Bash step parks the turn
    /// at an approval gate. Returns the invoke answer (`interaction_ids`, `session_id`,
    /// and `execution` {room_id, session_id, revision} when the server runs execution).
    /// `script` replaces the agent's default script (`agent.script`: `say`, `tool`,
    /// `wait_ms`, ... steps); it must gate before it ends.
    func openGate(
        project: String, session: String? = nil, model: String = "swift-model-1",
        script: [[String: Any]]? = nil
    )
        async throws -> [String: Any]
    {
        var agent: [String: Any] = [
            "llm": ["model": model],
            "runner": ["permissions": ["default": "ask"]],
        ]
        if let script { agent["script"] = script }
        var body: [String: Any] = [
            "data": [
                "inputs": ["messages": [["role": "user", "content": "list files"]]],
                "parameters": ["agent": agent],
            ]
        ]
        if let session { body["session_id"] = session }
        var request = URLRequest(url: URL(string: "\(url)/api/invoke?project_id=\(project)")!)
        request.httpMethod = "POST"
        request.setValue("Bearer \(apiKey)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        let (data, _) = try await URLSession.shared.data(for: request)
        guard let answer = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            answer["status"] as? String == "parked",
            (answer["interaction_ids"] as? [String])?.count == 1
        else {
            throw TestFailure("invoke did not park at one gate: \(String(decoding: data, as: UTF8.self))")
        }
        return answer
    }
}

/// The lines the server printed so far, and the URL once it said where it listens.
private final class Found: @unchecked Sendable {
    private let lock = NSLock()
    private var buffer = Data()
    private var found: String?

    var url: String? {
        lock.lock()
        defer { lock.unlock() }
        return found
    }

    func append(_ data: Data) {
        lock.lock()
        defer { lock.unlock() }
        guard found == nil else { return }
        buffer.append(data)
        for line in String(decoding: buffer, as: UTF8.self).split(separator: "\n") {
            if line.hasPrefix("listening on ") {
                found = String(line.dropFirst("listening on ".count))
                    .trimmingCharacters(in: .whitespaces)
            }
        }
    }
}

func gateId(_ answer: [String: Any]) -> String {
    (answer["interaction_ids"] as? [String])?.first ?? ""
}

func newProject() -> String { UUID().uuidString.lowercased() }

func client(for server: TestServer, project: String, key: String = apiKey) throws -> GatehouseClient
{
    try GatehouseClient(
        config: ClientConfig(baseUrl: server.url, apiKey: key, projectId: project, timeout: 10))
}
