// Hand-written (not generated): the JSON fields of a gate, which cross the FFI as text
// (uniffi has no JSON type), decoded with `Codable`: into the app's own `Decodable` type,
// or into `JSONValue` when it has none.

import Foundation

/// Any JSON value, for fields whose shape the app does not model.
public enum JSONValue: Codable, Hashable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The member `key` of an object; nil for anything else or a missing key.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The text of a string; nil for anything else.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }
}

/// Decodes a JSON field's text; nil when the field is absent.
func decodeJSON<T: Decodable>(_ text: JsonText?, as type: T.Type) throws -> T? {
    guard let text else { return nil }
    return try JSONDecoder().decode(type, from: Data(text.utf8))
}

extension Interaction {
    /// The stamped config the gated turn runs under, decoded (`JSONValue` by default).
    public func parameters<T: Decodable>(as type: T.Type = JSONValue.self) throws -> T? {
        try decodeJSON(parameters, as: type)
    }

    /// The recorded answer and, once resolved, the verdict, decoded.
    public func resolution<T: Decodable>(as type: T.Type = JSONValue.self) throws -> T? {
        try decodeJSON(resolution, as: type)
    }

    /// The turn's workflow references, decoded.
    public func references<T: Decodable>(as type: T.Type = JSONValue.self) throws -> T? {
        try decodeJSON(references, as: type)
    }
}

extension InteractionRequest {
    /// The tool call's arguments, decoded (`JSONValue` by default).
    public func args<T: Decodable>(as type: T.Type = JSONValue.self) throws -> T? {
        try decodeJSON(args, as: type)
    }
}
