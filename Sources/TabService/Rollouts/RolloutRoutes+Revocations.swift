import MicroHTTPD
import TabAccess
import TabDelivery

/// `POST|DELETE …/layout/versions/{version}/revoke` (`deploy`): a version withdrawn from every environment, and given
/// back (docs/delivery.md, "Revoked versions"). Never held for review: a revoke takes away, it moves nothing apps get.
extension RolloutRoutes {
    static let revocationAnswer = APIOperation.json(
        "The version's revocation as it stands now.",
        .object(
            [
                "account": .string(), "version": .integer(), "revoked": .boolean, "reason": .string(),
                "revokedAt": .string(format: "date-time"), "revokedBy": .string(), "unrevokedAt": .string(format: "date-time"),
                "unrevokedBy": .string(),
            ], required: ["account", "version", "revoked"]))

    static let revocationRoutes: [Route<RolloutRoutes>] = [
        Route(
            .post, "/v1/accounts/{account}/layout/versions/{version}/revoke", .scoped(.deploy, .account), label: "layout_revoke",
            inputs: [account, version], touchesStore: true,
            APIOperation(
                "Revoke a version in every environment: never served by number again (410), listed in manifests and Tabs-Revoked.",
                body: .object(["reason": .string(minLength: 1)], required: ["reason"]),
                responses: [
                    (200, revocationAnswer)
                ], problems: [400, 403, 404, 409, 413, 422])
        ) { routes, request, match throws(Problem) in try routes.revokeRoute(request, match) },
        Route(
            .delete, "/v1/accounts/{account}/layout/versions/{version}/revoke", .scoped(.deploy, .account), label: "layout_revoke",
            inputs: [account, version], touchesStore: true,
            APIOperation(
                "Un-revoke a version: served by number again where an environment served it.",
                responses: [(200, revocationAnswer)], problems: [400, 403, 404])
        ) { routes, request, match throws(Problem) in try routes.unrevokeRoute(request, match) },
    ]

    /// `POST …/revoke`: `{"reason"}` read and cleaned, then the store's rule (404, 409) in one transaction.
    func revokeRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let (account, number) = try revocationTarget(request, match)
        let reason: String
        do throws(RolloutError) {
            reason = try RevokeRequest.reason(from: request.body)
        } catch {
            throw .rollout(error)
        }
        let author = match.author
        return .deferred { await self.changes.revoke(account: account, version: number, reason: reason, author: author) }
    }

    /// `DELETE …/revoke`.
    func unrevokeRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let (account, number) = try revocationTarget(request, match)
        let author = match.author
        return .deferred { await self.changes.unrevoke(account: account, version: number, author: author) }
    }

    /// The account and version a revocation names; a token narrowed to some environments may not change what every
    /// environment serves (403, audited).
    private func revocationTarget(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> (String, Int) {
        let account = ManagementInputs.account(match)
        if let grant = match.grant, let missing = changes.environments.names.first(where: { !grant.covers(environment: $0.text) }) {
            let refusal = AccessRefusal.insufficientScope(.deploy, .environment(missing.text))
            audit.refuse(refusal, grant: grant, request, account: account)
            throw .refused(refusal)
        }
        return (account, match.inputs.path("version", as: VersionNumber.self).value)
    }
}
