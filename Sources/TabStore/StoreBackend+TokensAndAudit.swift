import TabAccess

/// The API tokens and the audit log (`/v1/tokens`, `/v1/audit`, authentication and its refusals).
public protocol AccessStore: Sendable {
    /// Every API token, revoked and expired ones included, by id.
    func tokens() async throws(StoreError) -> [StoredToken]
    /// Stores a new token, and `audit` in the same transaction. - Throws: ``StoreError/conflict`` when its id is taken.
    func createToken(_ token: StoredToken, audit: AuditEntry?) async throws(StoreError)
    /// Reads the token `id` and every token in one write transaction and applies `edit`'s decision there, so that
    /// a check over all tokens (the last admin token) holds until commit. Returns the decision.
    /// `audit` is stored in the same transaction when the decision is to replace.
    /// - Throws: ``StoreError/notFound`` when there is no token `id`.
    func editToken(
        id: String, audit: AuditEntry?, _ edit: @escaping @Sendable (StoredToken, [StoredToken]) -> TokenEdit
    ) async throws(StoreError) -> TokenEdit
    /// Records that the token `id` was used at `millis` (not announced to other replicas).
    func noteTokenUsed(id: String, atMillis millis: Int64) async throws(StoreError)
    /// Appends an entry on its own (a refused request); one with the coalescing key of an existing entry adds to
    /// its count.
    func appendAudit(_ entry: AuditEntry) async throws(StoreError)
    /// Entries after `afterID`, oldest first, at most `limit`, of `account` and `actor` when given.
    func audit(afterID: Int64, limit: Int, account: String?, actor: String?) async throws(StoreError) -> [AuditEntry]
    /// Deletes at most `limit` of the oldest entries: those dated before `millis` and those beyond the newest `rows`
    /// (`--audit-max-rows`); returns how many.
    func pruneAudit(beforeMillis millis: Int64, keepingNewest rows: Int64, limit: Int) async throws(StoreError) -> Int
}

/// The token and audit operations of ``TabStore``, once for every backend: each runs on the backend's thread, writes in one
/// write transaction.
extension StoreBackend {
    public func tokens() async throws(StoreError) -> [StoredToken] {
        try await executor.run { () throws(StoreError) in try self.readTokens() }
    }

    public func createToken(_ token: StoredToken, audit: AuditEntry?) async throws(StoreError) {
        try await executor.run { () throws(StoreError) in
            try self.writeTransaction { (rows) throws(StoreError) in
                guard try !rows.tokens().contains(where: { $0.id == token.id }) else { throw .conflict }
                try rows.save(token, announce: true)
                try WriteRule.record(audit, version: nil, rows)
            }
        }
    }

    public func editToken(
        id: String, audit: AuditEntry?, _ edit: @escaping @Sendable (StoredToken, [StoredToken]) -> TokenEdit
    ) async throws(StoreError) -> TokenEdit {
        try await executor.run { () throws(StoreError) in
            try self.writeTransaction { (rows) throws(StoreError) -> TokenEdit in
                let all = try rows.tokens()
                guard let token = all.first(where: { $0.id == id }) else { throw .notFound }
                let decision = edit(token, all)
                if case .replace(var edited) = decision {
                    edited.id = id
                    try rows.save(edited, announce: true)
                    try WriteRule.record(audit, version: nil, rows)
                }
                return decision
            }
        }
    }

    public func appendAudit(_ entry: AuditEntry) async throws(StoreError) {
        try await executor.run { () throws(StoreError) in
            try self.writeTransaction { (rows) throws(StoreError) in try rows.insertAudit(entry) }
        }
    }

    public func audit(afterID: Int64, limit: Int, account: String?, actor: String?) async throws(StoreError) -> [AuditEntry] {
        try await executor.run { () throws(StoreError) in try self.readAudit(afterID: afterID, limit: limit, account: account, actor: actor)
        }
    }

    public func pruneAudit(beforeMillis millis: Int64, keepingNewest kept: Int64, limit: Int) async throws(StoreError) -> Int {
        try await executor.run { () throws(StoreError) in
            try self.writeTransaction { (rows) throws(StoreError) in
                try rows.pruneAudit(beforeMillis: millis, keepingNewest: kept, limit: limit)
            }
        }
    }

    public func noteTokenUsed(id: String, atMillis millis: Int64) async throws(StoreError) {
        try await executor.run { () throws(StoreError) in
            try self.writeTransaction { (rows) throws(StoreError) in
                guard var token = try rows.tokens().first(where: { $0.id == id }) else { return }
                guard (token.lastUsedAtMillis ?? .min) < millis else { return }
                token.lastUsedAtMillis = millis
                try rows.save(token, announce: false)
            }
        }
    }
}
