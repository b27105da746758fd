// Hand-written (not generated): `GatehouseError` reads as a sentence, and its kind and retry
// flag are plain properties.
//
// uniffi generates `description` (the Rust core's Display: the error's `msg`, one sentence
// naming the operation that failed) and `errorDescription` as `String(reflecting: self)`,
// but does not declare `CustomStringConvertible`, so `print(error)`, `"\(error)"` and
// `localizedDescription` showed the enum dump (`GatehouseError.NotFound(msg: ...,
// details: Optional(...))`). Declared here, `String(describing:)` and `String(reflecting:)`
// both use `description`, so every default rendering is the sentence.

import Foundation

extension GatehouseError: CustomStringConvertible {}

extension GatehouseError {
    /// Which kind of error this is, without its text (as `GateFailure.kind`).
    public var kind: GatehouseErrorKind { errorKind() }

    /// True when the same call may succeed if tried again later: transport failures,
    /// timeouts, 429 and 5xx (as `GateFailure.retryable`).
    public var retryable: Bool { isRetryable() }
}
