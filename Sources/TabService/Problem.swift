import MicroHTTPD
import ProblemDocument
import TabDelivery
import TabLayout
import TabStore

/// RFC 9457 problem details, the body of every 4xx and 5xx answer. Handlers throw it (``RouteHandler``), and the
/// dispatcher writes it (``response``): one writer.
struct Problem: Error {
    var kind: ProblemKind
    var detail: String
    var errors: [FieldError] = []
    var headers: [HTTPHeader] = []
    /// Extension members (RFC 9457 §3.2), e.g. the `refused` list of `POST /v1/alerts`.
    var extensions: [String: JSONValue] = [:]

    init(_ kind: ProblemKind, detail: String, errors: [FieldError] = [], headers: [HTTPHeader] = []) {
        self.kind = kind
        self.detail = detail
        self.errors = errors
        self.headers = headers
    }

    var status: Int { kind.status }
    var slug: String { kind.rawValue }
    var title: String { kind.title }

    /// `application/problem+json` (``ProblemDocument``), with `errors` of `{pointer, line?, message}` for 422; the
    /// extension members after the standard ones, which they cannot replace.
    var response: HTTPResponse {
        var members: [(name: String, json: [UInt8])] = []
        if !errors.isEmpty {
            let entries = errors.map { error in
                var entry: [String: JSONValue] = ["pointer": .string(error.pointer), "message": .string(error.message)]
                if let line = error.line { entry["line"] = .integer(Int64(line)) }
                return JSONValue.object(entry)
            }
            members.append(("errors", CanonicalJSON.encode(.array(entries))))
        }
        for (name, value) in extensions where errors.isEmpty || name != "errors" { members.append((name, CanonicalJSON.encode(value))) }
        return HTTPResponse(
            status: status, headers: [HTTPHeader("Content-Type", ProblemDocument.mediaType)] + headers,
            body: kind.document(detail: detail, members: members).json)
    }

    static func notFound(_ detail: String) -> Problem { Problem(.notFound, detail: detail) }
    /// 404 for an account with no layout of its own where there is no `default` layout either.
    static func noLayout(_ account: String) -> Problem { notFound("account '\(account)' has no layout and there is no default layout") }
    static func badRequest(_ detail: String) -> Problem { Problem(.badRequest, detail: detail) }
    /// 404 for a version number the account's history does not have.
    static func noVersion(_ account: String, _ number: Int) -> Problem { notFound("account '\(account)' has no version \(number)") }
    /// 410 for `…/tabs?version=N` of a version revoked in every environment.
    static func revoked(_ account: String, _ number: Int) -> Problem {
        Problem(.revoked, detail: "version \(number) of '\(account)' was revoked: it is served no more; ask for the manifest's versions")
    }
    /// 404 for a change request id that names none.
    static func noChangeRequest(_ id: String) -> Problem { notFound("there is no change request \(id.prefix(64))") }
    /// 404 for a build id no one declared.
    static func undeclaredBuild(_ id: some CustomStringConvertible) -> Problem { notFound("build \(id) is not declared") }

    static let invalidAccount = badRequest("an account id is 1 to 128 characters of A-Z, a-z, 0-9, '.', '_' and '-'")

    static func methodNotAllowed(_ allow: String) -> Problem {
        Problem(.methodNotAllowed, detail: "this resource answers \(allow)", headers: [HTTPHeader("Allow", allow)])
    }

    static func invalidLayout(_ error: LayoutError) -> Problem {
        if error.kind == .tooLarge {
            return Problem(.tooLarge, detail: error.description, errors: error.diagnostics)
        }
        let count = error.diagnostics.count
        return Problem(
            .invalidLayout, detail: "the source cannot be compiled: \(count) problem\(count == 1 ? "" : "s") (see errors)",
            errors: error.diagnostics)
    }

    static let internalError = Problem(.internalError, detail: "the server failed; the log has the details")

    /// The answer to a store error: refused preconditions as 428/412/404/409, a full disk 507, a refused rollout rule
    /// as ``rollout(_:)`` says, the rest 503 (details in the log only: see ``StoreFailures``).
    static func store(_ error: StoreError) -> Problem {
        switch error {
        case .notFound: return notFound("no such layout")
        case .preconditionRequired:
            return Problem(.preconditionRequired, detail: "this record exists: send If-Match with its current ETag (GET it first)")
        case .conflict:
            return store(.preconditionFailed(current: nil))
        case .preconditionFailed(let current):
            return Problem(
                .preconditionFailed,
                detail: current.map { "the current ETag is \($0): someone changed it first; GET it, merge, and retry with that ETag" }
                    ?? "there is no current record to match",
                headers: current.map { [HTTPHeader("ETag", $0)] } ?? [])
        case .extended(let accounts):
            return Problem(.layoutIsExtended, detail: "other layouts extend it: \(accounts.joined(separator: ", ")); change them first")
        case .missingBase(let base):
            return Problem(
                .baseMissing, detail: "the layout it extends, '\(base)', has no layout (deleted meanwhile?); write that one first")
        case .diskFull:
            return Problem(
                .insufficientStorage,
                detail: "the store's disk is full: nothing was written, reads go on; free space on the store's volume, then retry")
        case .refused(let refusal):
            return rollout(refusal)
        case .unsupportedURL, .unavailable, .timedOut, .schemaTooNew, .targetNotEmpty, .copyMismatch:
            return Problem(.storeUnavailable, detail: "the store did not answer; retry later", headers: [HTTPHeader("Retry-After", "5")])
        }
    }

    /// The answer to a refusal of the environments' and rollouts' rules, with the status the contract gives it (a
    /// 422 lists every field at its JSON Pointer; a 412 carries the current `ETag`).
    static func rollout(_ error: RolloutError) -> Problem {
        switch error {
        case .invalidEnvironmentList: return internalError
        case .unknownEnvironment, .notFound: return notFound(error.description)
        case .invalidInstallID, .invalidParameter: return badRequest(error.description)
        case .invalidBody(let problems):
            let count = problems.count
            return Problem(
                .invalidFields, detail: "the body has \(count) problem\(count == 1 ? "" : "s") (see errors)",
                errors: problems.map { FieldError(pointer: $0.pointer, line: nil, message: $0.message) })
        case .tooLarge: return Problem(.tooLarge, detail: error.description)
        case .preconditionRequired: return Problem(.preconditionRequired, detail: error.description)
        case .preconditionFailed(let current):
            return Problem(.preconditionFailed, detail: error.description, headers: current.map { [HTTPHeader("ETag", $0)] } ?? [])
        case .conflict: return Problem(.rolloutConflict, detail: error.description)
        }
    }
}

/// What a capability does with a store error: answers it (``Problem/store(_:)``), and reports it to the service, which
/// counts and logs the failures among them (a full disk, no answer) and catches up after a deadline.
struct StoreFailures: Sendable {
    let report: @Sendable (StoreError) -> Void

    /// Reports nothing (a collection run on its own in a test).
    static let ignored = StoreFailures { _ in }

    /// The answer to `error`, reported.
    func problem(_ error: StoreError) -> Problem {
        report(error)
        return .store(error)
    }
}

extension HTTPReply {
    /// Work run off libmicrohttpd's threads (a store call) whose thrown problem is its answer, written as every
    /// problem is (``Problem/response``).
    static func later(_ work: @escaping @Sendable () async throws(Problem) -> HTTPResponse) -> HTTPReply {
        .deferred {
            do throws(Problem) {
                return try await work()
            } catch {
                return error.response
            }
        }
    }
}
