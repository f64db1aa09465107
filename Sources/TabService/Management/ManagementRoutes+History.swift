import HeaderFields
import MicroHTTPD
import TabLayout
import TabStore

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
    func diff(account: String, to number: Int, against: Int?, plainText: Bool) async -> HTTPResponse {
        let new: StoredVersion?
        let old: StoredVersion?
        do throws(StoreError) {
            changes.metrics.storeOperations.add()
            new = try await changes.store.version(account: account, number: number)
            if let against { old = try await changes.store.version(account: account, number: against) } else { old = nil }
        } catch {
            return changes.storeProblem(error)
        }
        guard let new else { return Problem.noVersion(account, number).response }
        if let against, old == nil { return Problem.noVersion(account, against).response }
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
