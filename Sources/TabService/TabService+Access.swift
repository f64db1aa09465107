import MicroHTTPD
import TabAccess
import TabStore

/// What the routes that still take the whole service (``RouteSection/service(_:)``) use of access: the client's
/// address. Temporary: it goes as they move to collections that hold ``ClientAddresses`` themselves.
extension TabService {
    /// The client's address (``ClientAddresses/address(of:)``).
    func clientAddress(_ request: borrowing HTTPRequest) -> String { audit.addresses.address(of: request) }

    /// Reads every token from the store into this replica's directory (at start, and when another replica announces a
    /// token change).
    /// - Throws: ``StoreError`` when the store cannot be read (the directory is left as it was).
    func reloadTokens() async throws(StoreError) { try await credentials.directory.reload(from: store) }
}
