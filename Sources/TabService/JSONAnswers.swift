import Foundation
import MicroHTTPD
import TabJSON

/// A JSON answer of `value` (tokens, the audit log, webhook deliveries), encoded as every `Encodable` answer is
/// (``JSONEncoder/sorted``).
func encodedJSON(_ status: Int, _ value: some Encodable, headers: [HTTPHeader] = []) -> HTTPResponse {
    let body = (try? JSONEncoder.sorted.encode(value)).map(Array.init) ?? []
    return HTTPResponse(status: status, headers: [HTTPHeader("Content-Type", "application/json")] + headers, body: body)
}
