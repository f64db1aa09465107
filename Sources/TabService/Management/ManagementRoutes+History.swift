import HeaderFields
import MicroHTTPD
import TabLayout
import TabStore

/// `?before=&limit=` of the version list: newest first, `limit` at a time, older than `before`.
struct VersionPage: Sendable {
    var before: Int?
    var limit: Int

    static let defaultLimit = 100
    static let maximumLimit = 1000

    static func parse(before: String?, limit: String?) -> Result<VersionPage, ProblemError> {
        var page = VersionPage(before: nil, limit: defaultLimit)
        if let limit {
            guard let n = Int(limit), (1...maximumLimit).contains(n) else {
                return .failure(ProblemError(Problem.badRequest("limit is an integer from 1 to \(maximumLimit)")))
            }
            page.limit = n
        }
        if let before {
            guard let n = Int(before), n >= 1 else {
                return .failure(ProblemError(Problem.badRequest("before is a version number ≥ 1, not '\(before)'")))
            }
            page.before = n
        }
        return .success(page)
    }
}

/// A problem carried as an error (for `Result`).
struct ProblemError: Error {
    let problem: Problem
    /// Why a representation could not be built, when that is what the problem reports.
    var cause: RepresentationError?
    init(_ problem: Problem, cause: RepresentationError? = nil) {
        self.problem = problem
        self.cause = cause
    }
    var response: HTTPResponse { problem.response }
}

extension ManagementHeaders {
    private static let diffOffers = MediaTypeOffers(["application/json", "text/plain"])

    /// Whether `Accept` asks for `text/plain` over JSON (the diff's one-line-per-change form, for curl).
    static func prefersPlainText(_ accept: String?) -> Bool {
        guard let accept else { return false }
        return Array(accept.utf8).withUnsafeBufferPointer { AcceptMediaType.choose(CollectionOfOne($0), offers: diffOffers) } == 1
    }
}

extension ManagementRoutes {
    /// `GET …/layout/versions/{n}/diff?against=m`: tab-level changes from version m (default n−1) to n, as JSON or,
    /// for `Accept: text/plain`, one line per change.
    func diff(account: String, to number: Int, againstText: String?, plainText: Bool) async -> HTTPResponse {
        var against: Int?
        if let againstText {
            guard let n = Int(againstText), n >= 1 else {
                return Problem.badRequest("against is a version number ≥ 1, not '\(againstText)'").response
            }
            against = n
        } else if number > 1 {
            against = number - 1
        }
        let new: StoredVersion?
        let old: StoredVersion?
        do throws(StoreError) {
            changes.metrics.storeOperations.add()
            new = try await changes.store.version(account: account, number: number)
            if let against { old = try await changes.store.version(account: account, number: against) } else { old = nil }
        } catch {
            return changes.storeProblem(error)
        }
        guard let new else { return Problem.notFound("account '\(account)' has no version \(number)").response }
        if let against, old == nil { return Problem.notFound("account '\(account)' has no version \(against)").response }
        let diff: LayoutDiff
        do {
            diff = try LayoutDiff(from: try old?.sourceTree(), to: try new.sourceTree())
        } catch {
            changes.logger.error("diff of \(account) v\(against ?? 0)..v\(number) failed: \(error)")
            return Problem.internalError.response
        }
        if plainText {
            return HTTPResponse(
                status: 200, headers: [HTTPHeader("Content-Type", "text/plain; charset=utf-8")], body: Array(diff.plainText().utf8))
        }
        return HTTPResponse(
            status: 200, headers: [HTTPHeader("Content-Type", "application/json")],
            body: diff.jsonBody(account: account, from: against, to: number))
    }

}

extension StoredVersion {
    /// The source tree of a stored version (nil for a deletion record: the layout had no tabs then).
    func sourceTree() throws(LayoutError) -> SourceNode? {
        if deleted { return nil }
        return try LayoutSource.readTree(source, format: sourceFormat(contentType))
    }
}
