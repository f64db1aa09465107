import Logging
import MicroHTTPD
import TabStore

/// One account's revoked versions as the read path serves them, made once per change (never per request): the set a
/// `…/tabs?version=N` is checked against (410), the list manifests carry, and the `Tabs-Revoked` field every `…/tabs`
/// answer of the account's layout carries (baked into its shared responses).
struct RevokedVersions: Sendable, Equatable {
    /// Every version revoked now.
    let all: Set<Int>
    /// The newest ``listedLimit`` of them by number, ascending: the manifest's `revoked` and `Tabs-Revoked`.
    let listed: [Int]
    /// `Tabs-Revoked: 5, 7`; nil when none is revoked.
    let header: HTTPHeader?
    /// The last change to the account's revocations, un-revokes included (a manifest's `revision` counts it).
    let changedMillis: Int64

    /// How many versions a manifest and `Tabs-Revoked` list.
    static let listedLimit = 32
    static let field = "Tabs-Revoked"

    /// The account's revocations, revoked and un-revoked (the store's rows of one account).
    init(_ revocations: [StoredRevocation]) {
        let revoked = revocations.filter(\.isRevoked).map(\.version)
        all = Set(revoked)
        listed = Array(all.sorted().suffix(Self.listedLimit))
        header = listed.isEmpty ? nil : HTTPHeader(Self.field, listed.map(String.init).joined(separator: ", "))
        changedMillis = revocations.map(\.changedAtMillis).max() ?? 0
    }

    /// Each account's, from the store's rows of every account.
    static func byAccount(_ revocations: [StoredRevocation]) -> [String: RevokedVersions] {
        Dictionary(grouping: revocations, by: \.account).mapValues(RevokedVersions.init)
    }
}

extension Snapshot {
    /// The revoked versions of `owner`'s layout (the account whose versions they are), nil when it never had any.
    func revoked(_ owner: String) -> RevokedVersions? { contents.revoked[owner] }

    /// This snapshot with `accounts`' revoked versions replaced by those in `lists` (none when absent) and their entries
    /// made anew, so that their representations carry the new `Tabs-Revoked` (nil: nothing changed).
    func revoking(_ accounts: [String], _ lists: [String: RevokedVersions], logger: Logger) -> Snapshot? {
        let changed = accounts.filter { self.contents.revoked[$0] != lists[$0] }
        guard !changed.isEmpty else { return nil }
        var contents = self.contents
        for account in changed { contents.revoked[account] = lists[account] }
        return Snapshot(contents, budget: budget).rebuilding(changed.filter { documents[$0] != nil }, logger: logger)
    }
}
