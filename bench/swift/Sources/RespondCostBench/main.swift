// Reads the driver config `gatehouse-bench live` wrote (base_url, api_key, project_id, ids,
// warmup), answers each gate through the Swift binding one at a time, and prints one JSON
// line: every measured call's wall time and the process's CPU time per measured call.

import Foundation
import Gatehouse

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

struct DriverConfig: Decodable {
    let base_url: String
    let api_key: String
    let project_id: String
    let ids: [String]
    let warmup: Int
}

func processCpuNanoseconds() -> Double {
    var usage = rusage()
    #if canImport(Glibc)
        getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
        getrusage(RUSAGE_SELF, &usage)
    #endif
    let user = Double(usage.ru_utime.tv_sec) * 1e9 + Double(usage.ru_utime.tv_usec) * 1e3
    let system = Double(usage.ru_stime.tv_sec) * 1e9 + Double(usage.ru_stime.tv_usec) * 1e3
    return user + system
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("RespondCostBench: \(message)\n".utf8))
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count == 2 else { fail("usage: RespondCostBench <driver_config.json>") }
let config: DriverConfig
do {
    config = try JSONDecoder().decode(
        DriverConfig.self, from: Data(contentsOf: URL(fileURLWithPath: arguments[1])))
} catch {
    fail("cannot read \(arguments[1]): \(error)")
}

let client: GatehouseClient
do {
    client = try GatehouseClient(
        config: ClientConfig(
            baseUrl: config.base_url, apiKey: config.api_key, projectId: config.project_id,
            timeout: 30))
} catch {
    fail("cannot build the client: \(error)")
}

var samples: [Double] = []
var cpuStart = 0.0
for (index, id) in config.ids.enumerated() {
    if index == config.warmup { cpuStart = processCpuNanoseconds() }
    let started = DispatchTime.now().uptimeNanoseconds
    do {
        _ = try await client.respondToInteraction(id: id, approved: true)
    } catch {
        fail("respond \(id) failed: \(error)")
    }
    let elapsed = DispatchTime.now().uptimeNanoseconds - started
    if index >= config.warmup { samples.append(Double(elapsed)) }
}
let cpuPerCall = samples.isEmpty ? nil : (processCpuNanoseconds() - cpuStart) / Double(samples.count)
var answer: [String: Any] = ["samples_ns": samples]
if let cpuPerCall { answer["process_cpu_ns_per_call"] = cpuPerCall }
guard let line = try? JSONSerialization.data(withJSONObject: answer) else { fail("cannot write JSON") }
print(String(decoding: line, as: UTF8.self))
