import MicroHTTPD
import TabAccess
import TabStore

/// `GET /v1/audit` (docs/security.md, "The audit log").
extension AccessRoutes {
    /// `GET /v1/audit?after=&limit=&account=&actor=`: oldest first, only the entries the token may read.
    func readAudit(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let query: AuditQuery
        do throws(InvalidFields) {
            let names = ["after", "limit", "account", "actor"]
            query = try AuditQuery(parameters: names.compactMap { name in request.query(name).map { (name, $0) } })
        } catch {
            throw .invalidFields(error, what: "audit query", kind: .badRequest)
        }
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
