import MicroHTTPD
import TabJSON
import TabStore
import TabTime

/// Revoked versions (docs/delivery.md, "Revoked versions"): a version withdrawn from every environment. The store
/// refuses one that an environment or a rollout serves; every environment's snapshot is published with the account's
/// new list (410 for the version by number, the manifest's `revoked`, `Tabs-Revoked`), and `/v1/events` tells it as
/// `event: revoke`. A revoke only takes away, so it is never held for review.
extension Changes {
    /// Revokes `version` of `account` in every environment: 200 with the revocation (the same answer again for a
    /// version revoked already, nothing recorded), 404 for a version the account does not have, 409 while served.
    func revoke(account: String, version: Int, reason: String, author: String) async -> HTTPResponse {
        let outcome: RevocationOutcome
        do throws(StoreError) {
            metrics.storeOperations.add()
            outcome = try await store.revoke(
                account: account, version: version, reason: reason, author: author,
                audit: AuditContext.current?.entry(action: "layout.revoke", account: account, status: 200), event: Self.eventData)
        } catch {
            return storeProblem(error)
        }
        return await answer(outcome, account: account, version: version)
    }

    /// Un-revokes `version` of `account`: 200 with the revocation's state (`"revoked": false`), also for a version that
    /// was not revoked; 404 for a version the account does not have.
    func unrevoke(account: String, version: Int, author: String) async -> HTTPResponse {
        let outcome: RevocationOutcome
        do throws(StoreError) {
            metrics.storeOperations.add()
            outcome = try await store.unrevoke(
                account: account, version: version, author: author,
                audit: AuditContext.current?.entry(action: "layout.unrevoke", account: account, status: 200), event: Self.eventData)
        } catch {
            return storeProblem(error)
        }
        return await answer(outcome, account: account, version: version)
    }

    private func answer(_ outcome: RevocationOutcome, account: String, version: Int) async -> HTTPResponse {
        switch outcome {
        case .unknownVersion:
            return Problem.noVersion(account, version).response
        case .notRevoked:
            return json(200, ["account": .string(account), "version": .integer(Int64(version)), "revoked": .bool(false)])
        case .served(let pointedBy, let rolloutsIn):
            var serving: [String] = []
            if !pointedBy.isEmpty { serving.append("\(pointedBy.joined(separator: ", ")) point\(pointedBy.count == 1 ? "s" : "") at it") }
            if !rolloutsIn.isEmpty { serving.append("a rollout in \(rolloutsIn.joined(separator: ", ")) serves it") }
            var problem = Problem(
                .versionServed,
                detail:
                    "version \(version) of '\(account)' is served: \(serving.joined(separator: "; ")); move them to another version first")
            problem.extensions = [
                "environments": .array(pointedBy.map { .string($0) }), "rollouts": .array(rolloutsIn.map { .string($0) }),
            ]
            return problem.response
        case .recorded(let revocation, let changed):
            if changed {
                outbox.poke()  // the change committed its deliveries with it
                do throws(StoreError) {
                    try await loadRevocations(account: account, event: Self.event(revocation))
                } catch {
                    // Committed: served here after the next catch-up (and at once on the other replicas).
                    logger.error("publishing the revocations of \(account) failed: \(error)")
                    failures.report(error)
                }
            }
            return json(200, Self.object(revocation))
        }
    }

    /// Serves the revoked versions the store holds (of `account`, or every account) in every environment, and tells
    /// `event` (in the served environment's publication, once every environment serves the change).
    func loadRevocations(account: String? = nil, event: ChangeEvent? = nil) async throws(StoreError) {
        let lists = RevokedVersions.byAccount(try await store.revocations(account: account))
        let logger = self.logger
        for environment in environments.names {
            let accounts = account.map { [$0] } ?? Array(Set(lists.keys).union(snapshot(for: environment).contents.revoked.keys))
            let told = environment == environments.served ? event.map { [$0] } ?? [] : []
            await publish(in: environment) { snapshot in
                guard let next = snapshot.revoking(accounts, lists, logger: logger) else { return told.isEmpty ? nil : (snapshot, told) }
                return (next, told)
            }
        }
    }

    /// The revocation another replica announced: served here, and told as that replica told it (the account's
    /// newest change).
    func loadAnnouncedRevocations(account: String) async throws(StoreError) {
        let newest = try await store.revocations(account: account).max { $0.changedAtMillis < $1.changedAtMillis }
        try await loadRevocations(account: account, event: newest.map(Self.event))
    }

    /// `event: revoke`: the revocation's data, waking the long-polls of the accounts it serves (every account for
    /// `default`, which serves the accounts without a layout of their own).
    static func event(_ revocation: StoredRevocation) -> ChangeEvent {
        ChangeEvent(
            kind: .revoke, account: revocation.account, locale: nil, version: revocation.version, etag: "",
            author: revocation.unrevokedBy ?? revocation.revokedBy, atMillis: revocation.changedAtMillis, deleted: false, sequence: 0,
            affected: revocation.account == "default" ? nil : [revocation.account], data: eventData(revocation))
    }

    /// The data of `event: revoke` and of the `layout.revoked` / `layout.unrevoked` webhooks: `{"account", "version",
    /// "revoked", "reason", "author", "at"}` (`author` and `at` of this change: the un-revoke's for an un-revoke).
    @Sendable static func eventData(_ revocation: StoredRevocation) -> [UInt8] {
        CanonicalJSON.encode(
            .object([
                "account": .string(revocation.account), "version": .integer(Int64(revocation.version)),
                "revoked": .bool(revocation.isRevoked), "reason": .string(revocation.reason),
                "author": .string(revocation.unrevokedBy ?? revocation.revokedBy),
                "at": .string(Timestamp(unixMillis: revocation.changedAtMillis).rfc3339),
            ]))
    }

    /// A revocation as the API shows it (the answer to a revoke and an un-revoke, the versions list's `revoked`).
    static func object(_ revocation: StoredRevocation) -> [String: JSONValue] {
        var object: [String: JSONValue] = [
            "account": .string(revocation.account), "version": .integer(Int64(revocation.version)),
            "revoked": .bool(revocation.isRevoked), "reason": .string(revocation.reason),
            "revokedAt": .string(Timestamp(unixMillis: revocation.revokedAtMillis).rfc3339), "revokedBy": .string(revocation.revokedBy),
        ]
        if let at = revocation.unrevokedAtMillis { object["unrevokedAt"] = .string(Timestamp(unixMillis: at).rfc3339) }
        if let by = revocation.unrevokedBy { object["unrevokedBy"] = .string(by) }
        return object
    }
}
