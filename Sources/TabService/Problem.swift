import MicroHTTPD
import TabLayout

/// RFC 9457 problem details, the body of every 4xx and 5xx answer.
struct Problem {
    var status: Int
    var slug: String
    var title: String
    var detail: String
    var errors: [LayoutDiagnostic] = []
    var headers: [HTTPHeader] = []

    /// `application/problem+json`, canonical JSON (with `errors` of `{pointer, line?, message}` for 422).
    var response: HTTPResponse {
        var object: [String: JSONValue] = [
            "type": .string("urn:tabserver:problem:\(slug)"), "title": .string(title), "status": .integer(Int64(status)),
            "detail": .string(detail),
        ]
        if !errors.isEmpty {
            object["errors"] = .array(
                errors.map { error in
                    var entry: [String: JSONValue] = ["pointer": .string(error.pointer), "message": .string(error.message)]
                    if let line = error.line { entry["line"] = .integer(Int64(line)) }
                    return .object(entry)
                })
        }
        return HTTPResponse(
            status: status, headers: [HTTPHeader("Content-Type", "application/problem+json")] + headers,
            body: CanonicalJSON.encode(.object(object)))
    }

    static func notFound(_ detail: String) -> Problem { Problem(status: 404, slug: "not-found", title: "Not Found", detail: detail) }
    static func badRequest(_ detail: String) -> Problem { Problem(status: 400, slug: "bad-request", title: "Bad Request", detail: detail) }

    static let invalidAccount = badRequest("an account id is 1 to 128 characters of A-Z, a-z, 0-9, '.', '_' and '-'")

    static func methodNotAllowed(_ allow: String) -> Problem {
        Problem(
            status: 405, slug: "method-not-allowed", title: "Method Not Allowed",
            detail: "this resource answers \(allow)", headers: [HTTPHeader("Allow", allow)])
    }

    static func invalidLayout(_ error: LayoutError) -> Problem {
        if error.kind == .tooLarge {
            return Problem(status: 413, slug: "too-large", title: "Content Too Large", detail: error.description, errors: error.diagnostics)
        }
        let count = error.diagnostics.count
        return Problem(
            status: 422, slug: "invalid-layout", title: "Unprocessable Content",
            detail: "the source cannot be compiled: \(count) problem\(count == 1 ? "" : "s") (see errors)", errors: error.diagnostics)
    }

    static let internalError = Problem(
        status: 500, slug: "internal", title: "Internal Server Error", detail: "the server failed; the log has the details")
}
