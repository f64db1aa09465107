import Foundation
import MicroHTTPD

extension JSONEncoder {
    /// The encoder of the answers made from `Encodable` values (tokens, the audit log, webhook deliveries): members
    /// sorted, `/` not escaped.
    static var answers: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

/// A JSON answer of `value`, encoded as every `Encodable` answer is (``JSONEncoder/answers``).
func encodedJSON(_ status: Int, _ value: some Encodable, headers: [HTTPHeader] = []) -> HTTPResponse {
    let body = (try? JSONEncoder.answers.encode(value)).map(Array.init) ?? []
    return HTTPResponse(status: status, headers: [HTTPHeader("Content-Type", "application/json")] + headers, body: body)
}
