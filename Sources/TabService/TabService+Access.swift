import MicroHTTPD
import TabAccess
import TabStore

/// What the routes that still take the whole service (``RouteSection/service(_:)``) use of access: the client's
/// address, refusals to audit, the 401/403 answer. Temporary (issue 36): it goes as they move to collections that hold
/// ``ClientAddresses`` and ``AuditLog`` themselves.
extension TabService {
    /// The client's address (``ClientAddresses/address(of:)``).
    func clientAddress(_ request: borrowing HTTPRequest) -> String { audit.addresses.address(of: request) }

    /// Records a refused management request (``AuditLog/refuse(_:grant:_:account:)``).
    func auditRefusal(_ refusal: AccessRefusal, grant: Grant?, _ request: borrowing HTTPRequest, account: String?) {
        audit.refuse(refusal, grant: grant, request, account: account)
    }

    /// Buffers a refusal's entry (``AuditLog/buffer(_:)``).
    func bufferRefusal(_ entry: AuditEntry) { audit.buffer(entry) }

    /// 401 or 403 with its `WWW-Authenticate` (``Problem/refused(_:)``).
    static func refusalResponse(_ refusal: AccessRefusal) -> HTTPResponse { Problem.refused(refusal).response }

    /// Reads every token from the store into this replica's directory (at start, and when another replica announces a
    /// token change).
    /// - Throws: ``StoreError`` when the store cannot be read (the directory is left as it was).
    func reloadTokens() async throws(StoreError) { try await credentials.directory.reload(from: store) }
}

extension RefusalEntryMaker {
    /// What a refusal's entry keeps of `request`, with the client's address as `service` sees it.
    init(_ service: TabService, _ request: borrowing HTTPRequest, grant: Grant?) {
        self.init(service.audit.addresses, request, grant: grant, clock: service.clock)
    }
}
