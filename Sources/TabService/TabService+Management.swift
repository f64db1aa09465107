import Logging
import MicroHTTPD
import TabLayout
import TabStore

extension TabService {
    /// `/v1/accounts/{account}/layout…`: every call needs an admin token; writes run deferred.
    func management(_ request: HTTPRequest, account accountBytes: UnsafeBufferPointer<UInt8>, tail: String) -> (Route, HTTPReply) {
        let parts = tail.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let route: Route
        let allow: String
        switch parts.count {
        case 1 where parts[0] == "layout": (route, allow) = (.layout, "GET, HEAD, PUT, PATCH, DELETE")
        case 2 where parts[0] == "layout" && parts[1] == "versions": (route, allow) = (.versions, "GET, HEAD")
        case 3 where parts[0] == "layout" && parts[1] == "versions": (route, allow) = (.versions, "GET, HEAD")
        case 4 where parts[0] == "layout" && parts[1] == "versions" && parts[3] == "restore": (route, allow) = (.versions, "POST")
        default: return (.unknown, .response(Problem.notFound("no resource at \(request.path)").response))
        }
        let methodAllowed = allow.split(separator: ",").contains { $0.trimmingCharacters(in: " ") == request.method.token }
        guard methodAllowed else { return (route, .response(Problem.methodNotAllowed(allow).response)) }
        let account = String(decoding: accountBytes, as: UTF8.self)
        guard isValidAccountName(account) else {
            return (
                route, .response(Problem.invalidAccount.response)
            )
        }
        guard let author = authenticate(request) else { return (route, unauthorized()) }
        var number: Int?
        if parts.count >= 3 {
            guard let n = Int(parts[2]), n >= 1 else {
                return (route, .response(Problem.badRequest("a version number is an integer ≥ 1, not '\(parts[2])'").response))
            }
            number = n
        }
        let precondition = writePrecondition(request)
        let version = number
        switch (parts.count, request.method) {
        case (1, .get), (1, .head):
            return (route, .deferred { await self.readLayout(account: account, number: nil) })
        case (1, .put):
            guard let format = uploadFormat(request) else { return (route, unsupportedMediaType()) }
            let upload = LayoutUpload(
                account: account, body: request.body, contentType: request.header("Content-Type") ?? "", format: format,
                precondition: precondition, author: author, message: request.header("Change-Message"),
                dryRun: request.query("dryRun") == "true", restoredFrom: nil)
            return (route, .deferred { await self.write(upload) })
        case (1, .patch):
            let kind = mediaType(request.header("Content-Type") ?? "")
            guard kind == "application/json-patch+json" || kind == "application/merge-patch+json" else {
                return (
                    route,
                    .response(
                        Problem(
                            status: 415, slug: "unsupported-media-type", title: "Unsupported Media Type",
                            detail: "PATCH takes application/json-patch+json (RFC 6902) or application/merge-patch+json (RFC 7396)",
                            headers: [HTTPHeader("Accept-Patch", "application/json-patch+json, application/merge-patch+json")]
                        ).response)
                )
            }
            let body = request.body
            return (
                route,
                .deferred {
                    await self.patch(
                        account: account, patch: body, isMerge: kind == "application/merge-patch+json", precondition: precondition,
                        author: author)
                }
            )
        case (1, .delete):
            return (route, .deferred { await self.deleteLayout(account: account, precondition: precondition, author: author) })
        case (2, _):
            return (route, .deferred { await self.listVersions(account: account) })
        case (3, _):
            return (route, .deferred { await self.readLayout(account: account, number: version) })
        default:
            return (
                route, .deferred { await self.restore(account: account, number: version ?? 0, precondition: precondition, author: author) }
            )
        }
    }

    func writePrecondition(_ request: HTTPRequest) -> WritePrecondition {
        if let field = request.headerList("If-Match") { return .ifMatch(Negotiation.entityTags(field)) }
        if let field = request.header("If-None-Match"), field.trimmingCharacters(in: " \t") == "*" { return .ifNoneMatchAny }
        return .none
    }

    func uploadFormat(_ request: HTTPRequest) -> SourceFormat? {
        request.header("Content-Type").flatMap(sourceFormat)
    }

    func unsupportedMediaType() -> HTTPReply {
        .response(
            Problem(
                status: 415, slug: "unsupported-media-type", title: "Unsupported Media Type",
                detail:
                    "a layout is application/json, application/x-plist, application/xml, text/xml or application/octet-stream (binary plist)"
            ).response)
    }

    /// The answer to a store failure: refused preconditions as 428/412/404, the rest 503 (details in the log only).
    func storeProblem(_ error: StoreError) -> HTTPResponse {
        switch error {
        case .notFound: return Problem.notFound("no such layout").response
        case .preconditionRequired:
            return Problem(
                status: 428, slug: "precondition-required", title: "Precondition Required",
                detail: "this record exists: send If-Match with its current ETag (GET it first)"
            ).response
        case .conflict:
            return storeProblem(.preconditionFailed(current: nil))
        case .preconditionFailed(let current):
            return Problem(
                status: 412, slug: "precondition-failed", title: "Precondition Failed",
                detail: current.map { "the current ETag is \($0): someone changed it first; GET it, merge, and retry with that ETag" }
                    ?? "there is no current record to match",
                headers: current.map { [HTTPHeader("ETag", $0)] } ?? []
            ).response
        case .unsupportedURL, .unavailable:
            metrics.storeErrors.add()
            logger.error("store failure: \(error)")
            return Problem(status: 503, slug: "store-unavailable", title: "Service Unavailable", detail: "the store failed; retry later")
                .response
        }
    }

    // MARK: Writes

    struct LayoutUpload: Sendable {
        var account: String
        var body: [UInt8]
        var contentType: String
        var format: SourceFormat
        var precondition: WritePrecondition
        var author: String
        var message: String?
        var dryRun: Bool
        var restoredFrom: Int?
    }

    /// Compiles against the current snapshot (422 when it cannot), then appends and swaps the snapshot.
    func write(_ upload: LayoutUpload) async -> HTTPResponse {
        let document: LayoutDocument
        let compiled: CompiledLayout
        do {
            (document, compiled) = try compileForWrite(account: upload.account, source: upload.body, format: upload.format)
        } catch {
            return Problem.invalidLayout(error).response
        }
        if upload.dryRun { return json(200, objectMembers(compiled.document)) }
        let existed = snapshot.records[upload.account] != nil
        do {
            metrics.storeOperations.add()
            let record = try await store.append(
                LayoutWrite(
                    account: upload.account, source: upload.body, contentType: mediaType(upload.contentType),
                    precondition: upload.precondition, author: upload.author, message: upload.message, restoredFrom: upload.restoredFrom))
            commit(record, document: document)
            return written(record, status: existed ? 200 : 201)
        } catch {
            return storeProblem(error)
        }
    }

    /// Validates, resolves (base references checked strictly) and compiles for the default locale.
    func compileForWrite(account: String, source: [UInt8], format: SourceFormat?) throws(LayoutError) -> (LayoutDocument, CompiledLayout) {
        let document = try LayoutSource.parse(source, format: format)
        let snapshot = self.snapshot
        let resolved = try snapshot.resolve(account, version: nil, document: document, strict: true)
        let compiled = LayoutCompiler.compile(
            resolved, for: ClientContext(locale: resolved.defaultLocale), globalStrings: snapshot.globalStrings)
        return (document, compiled)
    }

    func commit(_ record: StoredVersion, document: LayoutDocument?) {
        let logger = self.logger
        current.withLock { $0 = $0.applying(record, document: document, logger: logger) }
    }

    func written(_ record: StoredVersion, status: Int) -> HTTPResponse {
        json(
            status, ["account": .string(record.account), "version": .integer(Int64(record.version)), "etag": .string(record.etag)],
            headers: [HTTPHeader("ETag", record.etag), HTTPHeader("Layout-Version", String(record.version))])
    }

    func patch(account: String, patch: [UInt8], isMerge: Bool, precondition: WritePrecondition, author: String) async -> HTTPResponse {
        let latest: StoredVersion?
        do {
            metrics.storeOperations.add()
            latest = try await store.latest(account: account)
        } catch {
            return storeProblem(error)
        }
        guard let latest, !latest.deleted else { return Problem.notFound("account '\(account)' has no layout to patch").response }
        if case .none = precondition { return storeProblem(.preconditionRequired) }
        let patched: SourceNode
        do {
            let tree = try LayoutSource.readTree(latest.source, format: sourceFormat(latest.contentType))
            let operations = try JSONReader.read(patch)
            patched = isMerge ? JSONPatch.mergePatch(tree, operations) : try JSONPatch.apply(operations, to: tree)
        } catch {
            return Problem.invalidLayout(error).response
        }
        let upload = LayoutUpload(
            account: account, body: Array(patched.jsonText().utf8), contentType: "application/json", format: .json,
            precondition: precondition, author: author, message: nil, dryRun: false, restoredFrom: nil)
        return await write(upload)
    }

    func deleteLayout(account: String, precondition: WritePrecondition, author: String) async -> HTTPResponse {
        if case .none = precondition {
            return snapshot.records[account] == nil
                ? Problem.notFound("account '\(account)' has no layout").response : storeProblem(.preconditionRequired)
        }
        let dependents = snapshot.dependents(of: account)
        if !dependents.isEmpty {
            return Problem(
                status: 409, slug: "layout-is-extended", title: "Conflict",
                detail: "other layouts extend \(account): \(dependents.sorted().joined(separator: ", ")); change them first"
            ).response
        }
        do {
            metrics.storeOperations.add()
            let record = try await store.delete(account: account, precondition: precondition, author: author)
            commit(record, document: nil)
            return HTTPResponse(status: 204, headers: [HTTPHeader("Layout-Version", String(record.version))])
        } catch {
            return storeProblem(error)
        }
    }

    func restore(account: String, number: Int, precondition: WritePrecondition, author: String) async -> HTTPResponse {
        let old: StoredVersion?
        do {
            metrics.storeOperations.add()
            old = try await store.version(account: account, number: number)
        } catch {
            return storeProblem(error)
        }
        guard let old else { return Problem.notFound("account '\(account)' has no version \(number)").response }
        if case .none = precondition, snapshot.records[account] != nil { return storeProblem(.preconditionRequired) }
        let upload = LayoutUpload(
            account: account, body: old.source, contentType: old.contentType, format: sourceFormat(old.contentType) ?? .json,
            precondition: precondition, author: author, message: "restore of version \(number)", dryRun: false, restoredFrom: number)
        let response = await write(upload)
        guard response.status == 201 else { return response }
        var ok = response
        ok.status = 200
        return ok
    }

    // MARK: Reads

    func readLayout(account: String, number: Int?) async -> HTTPResponse {
        let record: StoredVersion?
        do {
            metrics.storeOperations.add()
            if let number {
                record = try await store.version(account: account, number: number)
            } else {
                record = try await store.latest(account: account)
            }
        } catch {
            return storeProblem(error)
        }
        guard let record, number != nil || !record.deleted else {
            return Problem.notFound(
                number.map { "account '\(account)' has no version \($0)" } ?? "account '\(account)' has no layout of its own"
            ).response
        }
        return HTTPResponse(
            status: 200,
            headers: [
                HTTPHeader("Content-Type", record.contentType), HTTPHeader("ETag", record.etag),
                HTTPHeader("Layout-Version", String(record.version)),
                HTTPHeader("Last-Modified", UTCDateTime(unixSeconds: record.createdAtMillis / 1000).httpDate),
            ], body: record.source)
    }

    func listVersions(account: String) async -> HTTPResponse {
        let versions: [StoredVersion]
        do {
            metrics.storeOperations.add()
            versions = try await store.versions(account: account)
        } catch {
            return storeProblem(error)
        }
        guard !versions.isEmpty else { return Problem.notFound("account '\(account)' never had a layout").response }
        let entries: [JSONValue] = versions.map { record in
            var entry: [String: JSONValue] = [
                "version": .integer(Int64(record.version)), "etag": .string(record.etag),
                "createdAt": .string(rfc3339Millis(record.createdAtMillis)), "deleted": .bool(record.deleted),
            ]
            if let author = record.author { entry["author"] = .string(author) }
            if let message = record.message { entry["message"] = .string(message) }
            if let from = record.restoredFrom { entry["restoredFrom"] = .integer(Int64(from)) }
            return .object(entry)
        }
        return json(200, ["versions": .array(entries)])
    }

    func listAccounts(_ request: HTTPRequest) -> HTTPReply {
        if let refused = onlyGet(request) { return refused }
        guard authenticate(request) != nil else { return unauthorized() }
        var limit = 100
        if let text = request.query("limit") {
            guard let n = Int(text), (1...1000).contains(n) else {
                return .response(Problem.badRequest("limit is an integer from 1 to 1000").response)
            }
            limit = n
        }
        let after = request.query("after") ?? ""
        let records = snapshot.records.values.filter {
            $0.account.utf8.lexicographicallyPrecedes(after.utf8) == false && $0.account != after
        }
        .sorted { $0.account.utf8.lexicographicallyPrecedes($1.account.utf8) }
        let page = records.prefix(limit)
        let entries: [JSONValue] = page.map { record in
            .object([
                "account": .string(record.account), "version": .integer(Int64(record.version)), "etag": .string(record.etag),
                "updatedAt": .string(rfc3339Millis(record.createdAtMillis)),
            ])
        }
        let next: JSONValue? = records.count > limit ? page.last.map { .string($0.account) } : nil
        var body = CanonicalJSON.encode(.object(["accounts": .array(entries)]))
        // `next` is null on the last page: JSONValue has no null, so it is written here.
        body.removeLast()
        body += Array(",\"next\":".utf8) + (next.map { CanonicalJSON.encode($0) } ?? Array("null".utf8)) + [UInt8(ascii: "}")]
        return .response(HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "application/json")], body: body))
    }

    func validate(_ request: HTTPRequest) -> HTTPReply {
        guard request.method == .post else { return .response(Problem.methodNotAllowed("POST").response) }
        guard authenticate(request) != nil else { return unauthorized() }
        guard let format = uploadFormat(request) else { return unsupportedMediaType() }
        do {
            let (_, compiled) = try compileForWrite(account: "validate", source: request.body, format: format)
            return .response(json(200, objectMembers(compiled.document)))
        } catch {
            return .response(Problem.invalidLayout(error).response)
        }
    }

    // MARK: Strings tables

    func strings(_ request: HTTPRequest, locale: String) -> HTTPReply {
        guard request.method == .get || request.method == .head || request.method == .put else {
            return .response(Problem.methodNotAllowed("GET, HEAD, PUT").response)
        }
        guard isValidLocale(locale) else {
            return .response(Problem.badRequest("'\(locale)' is not a locale tag such as en or fr-CA").response)
        }
        guard let author = authenticate(request) else { return unauthorized() }
        if request.method != .put {
            guard let record = snapshot.stringsRecords[locale] else {
                return .response(Problem.notFound("there is no strings table for \(locale)").response)
            }
            return .response(
                HTTPResponse(
                    status: 200, headers: [HTTPHeader("Content-Type", record.contentType), HTTPHeader("ETag", record.etag)],
                    body: record.source))
        }
        let kind = mediaType(request.header("Content-Type") ?? "")
        guard kind == "text/plain" || kind == "application/json" || kind == "text/x-strings" else {
            return .response(
                Problem(
                    status: 415, slug: "unsupported-media-type", title: "Unsupported Media Type",
                    detail: "a strings table is text/plain (Apple .strings) or application/json"
                ).response)
        }
        let body = request.body
        let contentType = request.header("Content-Type") ?? kind
        let precondition = writePrecondition(request)
        return .deferred {
            let table: StringsTable
            do throws(LayoutError) {
                table = try StringsTable.read(body)
            } catch {
                return Problem.invalidLayout(error).response
            }
            let existed = self.snapshot.stringsRecords[locale] != nil
            do throws(StoreError) {
                self.metrics.storeOperations.add()
                let record = try await self.store.appendStrings(
                    locale: locale, source: body, contentType: contentType, precondition: precondition, author: author)
                let logger = self.logger
                self.current.withLock { $0 = $0.applying(strings: record, table: table, logger: logger) }
                return json(
                    existed ? 200 : 201,
                    ["locale": .string(locale), "version": .integer(Int64(record.version)), "etag": .string(record.etag)],
                    headers: [HTTPHeader("ETag", record.etag)])
            } catch {
                return self.storeProblem(error)
            }
        }
    }
}

func objectMembers(_ value: JSONValue) -> [String: JSONValue] {
    if case .object(let members) = value { return members }
    return [:]
}

/// `2026-11-22T05:21:00.123Z`
func rfc3339Millis(_ millis: Int64) -> String {
    let base = UTCDateTime(unixSeconds: millis / 1000).rfc3339
    let fraction = String(1000 + millis % 1000).dropFirst()
    return base.dropLast() + "." + fraction + "Z"
}
