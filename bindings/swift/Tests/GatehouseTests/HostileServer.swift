// A hostile HTTP server on the loopback: it reads one request and answers with canned
// bytes (HTML, garbage, a truncated body) or drops the connection unanswered.

import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

enum HostileBehaviour: Sendable {
    /// Send these bytes, then close.
    case answer(String)
    /// Close the connection without a byte.
    case drop
}

final class HostileServer: @unchecked Sendable {
    let url: String
    private let listener: Int32

    init(_ behaviour: HostileBehaviour) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket() failed") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw TestFailure("bind/listen failed")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        url = "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
        // The accept thread owns the descriptor and closes it when accept fails (after
        // `stop`): closing it anywhere else lets the next server's socket() reuse the number
        // while this thread still accepts on it, serving that server's clients this answer.
        let thread = Thread {
            while true {
                let connection = accept(fd, nil, nil)
                if connection < 0 { break }
                HostileServer.serve(connection, behaviour)
            }
            close(fd)
        }
        thread.start()
    }

    private static func serve(_ connection: Int32, _ behaviour: HostileBehaviour) {
        // Read the request head (and whatever body came with it).
        var buffer = [UInt8](repeating: 0, count: 65536)
        var received = [UInt8]()
        while !received.containsHeadEnd {
            let count = read(connection, &buffer, buffer.count)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        if case .answer(let bytes) = behaviour {
            let data = Array(bytes.utf8)
            _ = data.withUnsafeBufferPointer { write(connection, $0.baseAddress, $0.count) }
        }
        close(connection)
    }

    /// Stops accepting: accept() then fails and the thread closes the descriptor.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit {
        stop()
    }
}

extension Array where Element == UInt8 {
    fileprivate var containsHeadEnd: Bool {
        guard count >= 4 else { return false }
        for index in 0...(count - 4)
        where self[index] == 13 && self[index + 1] == 10 && self[index + 2] == 13
            && self[index + 3] == 10
        {
            return true
        }
        return false
    }
}

/// ESTABLISHED TCP connections on the loopback whose either end is `port` (read from
/// /proc/net/tcp: the server's ends and the clients' ends alike).
func establishedConnections(port: Int) -> Int {
    // Read through `cat`: Foundation reads a /proc file as one page.
    guard let data = output(of: ["cat", "/proc/net/tcp"]) else { return -1 }
    let table = String(decoding: data, as: UTF8.self)
    let hexPort = String(format: "%04X", port)
    var count = 0
    for line in table.split(separator: "\n").dropFirst() {
        let fields = line.split(separator: " ")
        guard fields.count > 3, fields[3] == "01" else { continue }
        if fields[1].hasSuffix(":\(hexPort)") || fields[2].hasSuffix(":\(hexPort)") { count += 1 }
    }
    return count
}
