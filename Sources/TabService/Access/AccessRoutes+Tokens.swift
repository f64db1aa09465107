import Foundation
import MicroHTTPD
import TabAccess
import TabLayout
import TabStore

/// `POST /v1/tokens`, `GET /v1/tokens`, `DELETE /v1/tokens/{id}`, `POST /v1/tokens/{id}/rotate` (docs/security.md,
/// "Scoped API tokens"): the decisions are TabAccess's, the records the store's; each write updates this replica's
/// ``TokenDirectory`` before it answers and is announced to the others.
extension TabService {
    /// Makes a token from the body and answers it once with its secret (201).
    func createTokenRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let now = Date()
        let spec: TokenSpec
        do throws(InvalidFields) {
            spec = try TokenSpec(json: request.body, environments: configuration.environments, now: now)
        } catch {
            return .response(Self.invalidFields(error, what: "token body"))
        }
        if let grant = match.grant, !grant.encloses(scopes: spec.scopes, accounts: spec.accounts, environments: spec.environments) {
            return refuseBeyondGrant("the new token", grant: grant, request)
        }
        let (token, secret) = AccessToken.issue(spec, createdBy: match.author, at: now)
        return .deferred {
            do throws(StoreError) {
                try await self.store.createToken(
                    token.stored, audit: AuditContext.current?.entry(action: "token.create", account: nil, status: 201))
            } catch {
                return self.tokenStoreProblem(error)
            }
            self.credentials.directory.update(token)
            self.logger.info("token made", metadata: ["token-id": "\(token.id)", "name": "\(token.name)", "by": "\(match.author)"])
            return Self.tokenJSON(201, token.issued(with: secret), headers: [HTTPHeader("Location", "/v1/tokens/\(token.id)")])
        }
    }

    /// Every token within the caller's grant, without secrets, with `lastUsedAt` (read from the store: other replicas
    /// note uses too).
    func listTokensRoute(_ match: RouteMatch) -> HTTPReply {
        let grant = match.grant
        return .deferred {
            let records: [StoredToken]
            do throws(StoreError) {
                records = try await self.store.tokens()
            } catch {
                return self.tokenStoreProblem(error)
            }
            let tokens = records.compactMap(AccessToken.init).filter { grant?.encloses($0) ?? true }.sorted {
                ($0.createdAt, $0.id.rawValue) < ($1.createdAt, $1.id.rawValue)
            }
            return Self.tokenJSON(200, TokenList(tokens: tokens.map(\.listed)))
        }
    }

    /// `GET /v1/tokens/self`: the grant of the token that asks, so that a client (the console) shows only what the
    /// token may do without trying it: `{"name", "id" (null for a bootstrap token), "scopes", "implied" (every scope
    /// the held ones imply), "accounts", "environments" (null: all)}`. Never a secret or a hash.
    static func selfTokenRoute(_ match: RouteMatch) -> HTTPReply {
        // A scoped route runs only after its token was authenticated: the grant is there.
        guard let grant = match.grant else { return .response(Problem.notFound("no token was presented").response) }
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
    func revokeTokenRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        guard let id = TokenID(match["id"]) else { return .response(Problem.notFound("no token '\(match["id"].prefix(64))'").response) }
        if let refused = refusalOfTokenBeyondGrant(id, match.grant, request) { return refused }
        let grant = match.grant
        let bootstrap = credentials.bootstrapTokens
        let now = Date()
        return .deferred {
            let decision: TokenEdit
            do throws(StoreError) {
                let audit = AuditContext.current?.entry(action: "token.revoke", account: nil, status: 204)
                decision = try await self.store.editToken(id: id.rawValue, audit: audit) { record, all in
                    guard var token = AccessToken(record) else { return .refuse("the stored token cannot be read") }
                    guard grant?.encloses(token) ?? true else { return .refuse(Self.beyondGrant) }
                    if token.revokedAt != nil { return .unchanged }
                    if let conflict = token.revocationConflict(among: all.compactMap(AccessToken.init), bootstrap: bootstrap, at: now) {
                        return .refuse(conflict)
                    }
                    token.revokedAt = now
                    return .replace(token.stored)
                }
            } catch {
                return self.tokenStoreProblem(error)
            }
            switch decision {
            case .unchanged:
                return HTTPResponse(status: 204)
            case .refuse(Self.beyondGrant):
                return Self.refusalResponse(.insufficientScope(.admin, .beyondGrant("the token")))
            case .refuse(let reason):
                return Problem(.lastAdminToken, detail: reason).response
            case .replace(let record):
                if let token = AccessToken(record) { self.credentials.directory.update(token) }
                self.logger.info("token revoked", metadata: ["token-id": "\(id)", "by": "\(match.author)"])
                return HTTPResponse(status: 204)
            }
        }
    }

    /// A new secret (answered once, 200); the old ones stay valid for the body's `overlap` (default none).
    func rotateTokenRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        guard let id = TokenID(match["id"]) else { return .response(Problem.notFound("no token '\(match["id"].prefix(64))'").response) }
        let rotation: RotationSpec
        do throws(InvalidFields) {
            rotation = try RotationSpec(json: request.body)
        } catch {
            return .response(Self.invalidFields(error, what: "rotation body"))
        }
        if let refused = refusalOfTokenBeyondGrant(id, match.grant, request) { return refused }
        let grant = match.grant
        let secret = IssuedSecret(for: id)
        let now = Date()
        return .deferred {
            let decision: TokenEdit
            do throws(StoreError) {
                let audit = AuditContext.current?.entry(action: "token.rotate", account: nil, status: 200)
                decision = try await self.store.editToken(id: id.rawValue, audit: audit) { record, _ in
                    guard var token = AccessToken(record) else { return .refuse("the stored token cannot be read") }
                    guard grant?.encloses(token) ?? true else { return .refuse(Self.beyondGrant) }
                    guard token.isActive(at: now) else { return .refuse("the token is revoked or expired: make a new one") }
                    token.rotate(to: secret, at: now, overlap: rotation.overlap)
                    return .replace(token.stored)
                }
            } catch {
                return self.tokenStoreProblem(error)
            }
            switch decision {
            case .refuse(Self.beyondGrant):
                return Self.refusalResponse(.insufficientScope(.admin, .beyondGrant("the token")))
            case .refuse(let reason):
                return Problem(.tokenInactive, detail: reason).response
            case .unchanged:
                return Problem.internalError.response  // rotation always replaces or refuses
            case .replace(let record):
                guard let token = AccessToken(record) else { return Problem.internalError.response }
                self.credentials.directory.update(token)
                self.logger.info("token rotated", metadata: ["token-id": "\(id)", "by": "\(match.author)"])
                return Self.tokenJSON(200, token.issued(with: secret))
            }
        }
    }

    /// Reads every token from the store into this replica's directory.
    /// - Throws: ``StoreError`` when the store cannot be read (the directory is left as it was).
    func reloadTokens() async throws(StoreError) {
        credentials.directory.replace(all: try await store.tokens().compactMap(AccessToken.init))
    }

    /// Writes a token's `lastUsedAt`, at most once a minute per token and replica, off the request path.
    func noteUse(of grant: Grant) {
        guard let id = grant.tokenID, credentials.directory.shouldNoteUse(of: id, now: monotonicSeconds()) else { return }
        let millis = currentTimeMillis()
        Task { [store, logger] in
            do throws(StoreError) {
                try await store.noteTokenUsed(id: id.rawValue, atMillis: millis)
            } catch {
                logger.warning("noting a token's use failed: \(error)")
            }
        }
    }

    /// The edit's refusal when the stored token reaches past the caller's grant (a token another replica made since
    /// this one's directory was read).
    private static let beyondGrant = "beyond the caller's grant"

    /// 403 (audited) when the token `id` reaches past `grant`, as far as this replica's directory knows it.
    private func refusalOfTokenBeyondGrant(_ id: TokenID, _ grant: Grant?, _ request: borrowing HTTPRequest) -> HTTPReply? {
        guard let grant, let token = credentials.directory.token(id: id), !grant.encloses(token) else { return nil }
        return refuseBeyondGrant("the token", grant: grant, request)
    }

    /// 403 `insufficient_scope` (audited): what the request would make or touch reaches past `grant`.
    func refuseBeyondGrant(_ what: String, grant: Grant, _ request: borrowing HTTPRequest) -> HTTPReply {
        let refusal = AccessRefusal.insufficientScope(.admin, .beyondGrant(what))
        logger.warning("access refused", metadata: ["token": "\(grant.name)", "reason": "\(refusal.description)"])
        auditRefusal(refusal, grant: grant, request, account: nil)
        return .response(Self.refusalResponse(refusal))
    }

    private func tokenStoreProblem(_ error: StoreError) -> HTTPResponse {
        if case .notFound = error { return Problem.notFound("no such token").response }
        return storeProblem(error)
    }

    /// 422 with every refused field at its JSON Pointer.
    static func invalidFields(_ error: InvalidFields, what: String, kind: ProblemKind = .invalidFields) -> HTTPResponse {
        let count = error.errors.count
        return Problem(
            kind,
            detail: "the \(what) has \(count) problem\(count == 1 ? "" : "s") (see errors)",
            errors: error.errors.map { LayoutDiagnostic(pointer: $0.pointer, line: nil, message: $0.message) }
        ).response
    }

    static func tokenJSON(_ status: Int, _ value: some Encodable, headers: [HTTPHeader] = []) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? encoder.encode(value)).map(Array.init) ?? []
        return HTTPResponse(status: status, headers: [HTTPHeader("Content-Type", "application/json")] + headers, body: body)
    }
}

/// The body of `GET /v1/tokens`.
struct TokenList: Encodable {
    let tokens: [AccessToken.JSON]
}
