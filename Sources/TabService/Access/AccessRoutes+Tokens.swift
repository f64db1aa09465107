import Foundation
import MicroHTTPD
import TabAccess
import TabLayout
import TabStore

/// `POST /v1/tokens`, `GET /v1/tokens`, `DELETE /v1/tokens/{id}`, `POST /v1/tokens/{id}/rotate` (docs/security.md,
/// "Scoped API tokens").
extension AccessRoutes {
    /// Makes a token from the body and answers it once with its secret (201).
    func createToken(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let now = self.now()
        let spec: TokenSpec
        do throws(InvalidFields) {
            spec = try TokenSpec(json: request.body, environments: environments, now: now)
        } catch {
            throw .invalidFields(error, what: "token body")
        }
        if let grant = match.grant, !grant.encloses(scopes: spec.scopes, accounts: spec.accounts, environments: spec.environments) {
            throw audit.refuseBeyondGrant("the new token", grant: grant, request)
        }
        let (token, secret) = AccessToken.issue(spec, createdBy: match.author, at: now)
        return .later { [self] () async throws(Problem) -> HTTPResponse in
            do throws(StoreError) {
                try await store.createToken(
                    token.stored, audit: AuditContext.current?.entry(action: "token.create", account: nil, status: 201))
            } catch {
                throw tokenProblem(error)
            }
            directory.update(token)
            logger.info("token made", metadata: ["token-id": "\(token.id)", "name": "\(token.name)", "by": "\(match.author)"])
            return encodedJSON(201, token.issued(with: secret), headers: [HTTPHeader("Location", "/v1/tokens/\(token.id)")])
        }
    }

    /// Every token within the caller's grant, without secrets, with `lastUsedAt` (read from the store: other replicas
    /// note uses too).
    func listTokens(_ match: RouteMatch) -> HTTPReply {
        let grant = match.grant
        return .later { [self] () async throws(Problem) -> HTTPResponse in
            let records: [StoredToken]
            do throws(StoreError) {
                records = try await store.tokens()
            } catch {
                throw tokenProblem(error)
            }
            let tokens = records.compactMap(AccessToken.init).filter { grant?.encloses($0) ?? true }.sorted {
                ($0.createdAt, $0.id.rawValue) < ($1.createdAt, $1.id.rawValue)
            }
            return encodedJSON(200, TokenList(tokens: tokens.map(\.listed)))
        }
    }

    /// `GET /v1/tokens/self`: the grant of the token that asks, so that a client (the console) shows only what the
    /// token may do without trying it: `{"name", "id" (null for a bootstrap token), "scopes", "implied" (every scope
    /// the held ones imply), "accounts", "environments" (null: all)}`. Never a secret or a hash.
    static func tokenSelf(_ match: RouteMatch) throws(Problem) -> HTTPReply {
        // A scoped route runs only after its token was authenticated: the grant is there.
        guard let grant = match.grant else { throw .notFound("no token was presented") }
        let implied = Set(grant.scopes.flatMap(\.implied)).sorted()
        return .response(
            json(
                200,
                [
                    "name": .string(grant.name), "scopes": .array(grant.scopes.sorted().map { .string($0.rawValue) }),
                    "implied": .array(implied.map { .string($0.rawValue) }),
                    "accounts": .array(grant.accounts.map { .string($0.description) }),
                ],
                nullable: [
                    "id": grant.tokenID.map { .string($0.rawValue) },
                    "environments": grant.environments.map { .array($0.sorted().map(JSONValue.string)) },
                ]))
    }

    /// Revokes the token (204; again is 204), or 409 when it is the last admin token and no bootstrap token exists.
    func revokeToken(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let id = match.inputs.path("id", as: TokenID.self)
        try refuseTokenBeyondGrant(id, match.grant, request)
        let grant = match.grant
        let now = self.now()
        return .later { [self] () async throws(Problem) -> HTTPResponse in
            let decision = try await edit(id, action: "token.revoke", status: 204) { record, all in
                guard var token = AccessToken(record) else { return .refuse("the stored token cannot be read") }
                guard grant?.encloses(token) ?? true else { return .refuse(Self.beyondGrant) }
                if token.revokedAt != nil { return .unchanged }
                if let conflict = token.revocationConflict(among: all.compactMap(AccessToken.init), bootstrap: bootstrap, at: now) {
                    return .refuse(conflict)
                }
                token.revokedAt = now
                return .replace(token.stored)
            }
            switch decision {
            case .unchanged:
                return HTTPResponse(status: 204)
            case .refuse(let reason):
                throw Problem(.lastAdminToken, detail: reason)
            case .replace(let record):
                if let token = AccessToken(record) { directory.update(token) }
                logger.info("token revoked", metadata: ["token-id": "\(id)", "by": "\(match.author)"])
                return HTTPResponse(status: 204)
            }
        }
    }

    /// A new secret (answered once, 200); the old ones stay valid for the body's `overlap` (default none).
    func rotateToken(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let id = match.inputs.path("id", as: TokenID.self)
        let rotation: RotationSpec
        do throws(InvalidFields) {
            rotation = try RotationSpec(json: request.body)
        } catch {
            throw .invalidFields(error, what: "rotation body")
        }
        try refuseTokenBeyondGrant(id, match.grant, request)
        let grant = match.grant
        let secret = IssuedSecret(for: id)
        let now = self.now()
        return .later { [self] () async throws(Problem) -> HTTPResponse in
            let decision = try await edit(id, action: "token.rotate", status: 200) { record, _ in
                guard var token = AccessToken(record) else { return .refuse("the stored token cannot be read") }
                guard grant?.encloses(token) ?? true else { return .refuse(Self.beyondGrant) }
                guard token.isActive(at: now) else { return .refuse("the token is revoked or expired: make a new one") }
                token.rotate(to: secret, at: now, overlap: rotation.overlap)
                return .replace(token.stored)
            }
            switch decision {
            case .refuse(let reason):
                throw Problem(.tokenInactive, detail: reason)
            case .unchanged:
                throw .internalError  // rotation always replaces or refuses
            case .replace(let record):
                guard let token = AccessToken(record) else { throw .internalError }
                directory.update(token)
                logger.info("token rotated", metadata: ["token-id": "\(id)", "by": "\(match.author)"])
                return encodedJSON(200, token.issued(with: secret))
            }
        }
    }

    /// Runs `decide` on the token `id` (and all tokens) in the store's transaction, with the request's audit entry of
    /// `action`; a refusal because the stored token reaches past the caller's grant is the 403 it would have been here.
    private func edit(
        _ id: TokenID, action: String, status: Int, _ decide: @escaping @Sendable (StoredToken, [StoredToken]) -> TokenEdit
    ) async throws(Problem) -> TokenEdit {
        let decision: TokenEdit
        do throws(StoreError) {
            let audit = AuditContext.current?.entry(action: action, account: nil, status: status)
            decision = try await store.editToken(id: id.rawValue, audit: audit, decide)
        } catch {
            throw tokenProblem(error)
        }
        if case .refuse(Self.beyondGrant) = decision { throw .refused(.insufficientScope(.admin, .beyondGrant("the token"))) }
        return decision
    }

    /// The edit's refusal when the stored token reaches past the caller's grant (a token another replica made since
    /// this one's directory was read).
    private static let beyondGrant = "beyond the caller's grant"

    /// 403 (audited) when the token `id` reaches past `grant`, as far as this replica's directory knows it.
    private func refuseTokenBeyondGrant(_ id: TokenID, _ grant: Grant?, _ request: borrowing HTTPRequest) throws(Problem) {
        guard let grant, let token = directory.token(id: id), !grant.encloses(token) else { return }
        throw audit.refuseBeyondGrant("the token", grant: grant, request)
    }

    /// A store error of a token route: "no such token", or what any store error answers.
    private func tokenProblem(_ error: StoreError) -> Problem {
        if case .notFound = error { return .notFound("no such token") }
        return failures.problem(error)
    }
}

/// A token's id in a path: 16 characters of `a-z2-7`; 404 for anything else (no token can have it).
extension TokenID: RouteInputValue {
    init(input text: String, named name: String) throws(InputRefusal) {
        guard let id = TokenID(text) else { throw .problem(.notFound("no token '\(text.prefix(64))'")) }
        self = id
    }

    static var schema: APISchema { .string(pattern: "^[a-z2-7]{16}$") }

    /// An id no token can have.
    static var refusals: [Int] { [404] }
}

/// The body of `GET /v1/tokens`.
struct TokenList: Encodable {
    let tokens: [AccessToken.JSON]
}
