import MicroHTTPD
import TabAccess
import TabStore

/// `GET /v1/audit` (docs/security.md, "The audit log").
extension AccessRoutes {
    /// `GET /v1/audit?after=&limit=&account=&actor=`: oldest first, only the entries the token may read.
    func readAudit(_ match: RouteMatch) -> HTTPReply {
        let inputs = match.inputs
        let query = AuditQuery(
            after: inputs.query("after", as: AuditCursor.self),
            limit: inputs.query("limit", as: AuditPageSize.self)?.value ?? AuditQuery.defaultLimit,
            account: inputs.query("account", as: AuditFilter.self)?.text, actor: inputs.query("actor", as: AuditFilter.self)?.text)
        let grant = match.grant
        return .later { [self] () async throws(Problem) -> HTTPResponse in
            var readable: [AuditEntry] = []
            var after = query.after?.afterID ?? 0
            var examined = 0
            // Entries the token may not read are skipped; more are fetched until the page (and one more) is full, or
            // until a page's worth of work is done: then the page ends there and `next` continues after the last row
            // examined, so that a narrow token's page costs a bounded read, never a walk of the whole log.
            let batchSize = max(query.limit + 1, 200)
            while readable.count <= query.limit {
                let batch: [AuditEntry]
                do throws(StoreError) {
                    batch = try await store.audit(afterID: after, limit: batchSize, account: query.account, actor: query.actor)
                } catch {
                    throw failures.problem(error)
                }
                examined += batch.count
                for entry in batch {
                    after = entry.id
                    if grant?.mayRead(entry) ?? true { readable.append(entry) }
                    if readable.count > query.limit { break }
                }
                guard batch.count == batchSize else { break }
                if examined >= AuditQuery.maximumExamined, readable.count <= query.limit {
                    return encodedJSON(200, AuditPage(entries: readable, next: AuditCursor(after: after)))
                }
            }
            return encodedJSON(200, AuditPage(fetched: readable, limit: query.limit))
        }
    }
}

/// `?after=`: a cursor this log made (a wrong one is a field of the audit query's 400).
extension AuditCursor: RouteInputValue {
    init(input text: String, named name: String) throws(InputRefusal) {
        guard let cursor = AuditCursor(text) else { throw .field("not a cursor from this log") }
        self = cursor
    }

    static var schema: APISchema { .string() }
}

/// `?limit=`: how many entries a page of the audit log holds, 1 to ``AuditQuery/maximumLimit``.
struct AuditPageSize: RouteInputValue {
    let value: Int

    init(input text: String, named name: String) throws(InputRefusal) {
        guard let number = Int(text), (1...AuditQuery.maximumLimit).contains(number) else {
            throw .field("limit must be an integer from 1 to \(AuditQuery.maximumLimit)")
        }
        value = number
    }

    static var schema: APISchema { .integer(minimum: 1, maximum: AuditQuery.maximumLimit) }
}

/// `?account=` or `?actor=`: only the audit entries about that account, or by that actor; never empty.
struct AuditFilter: RouteInputValue {
    let text: String

    init(input text: String, named name: String) throws(InputRefusal) {
        guard !text.isEmpty else { throw .field("\(name) must not be empty") }
        self.text = text
    }

    static var schema: APISchema { .string() }
}
