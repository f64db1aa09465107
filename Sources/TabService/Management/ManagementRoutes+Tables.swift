import Logging
import MicroHTTPD
import TabAccess
import TabDelivery
import TabLayout
import TabStore

/// The management plane's other reads and writes: the accounts list, validation, and global strings tables.
extension ManagementRoutes {
    /// `GET /v1/accounts`: one page of the accounts with a layout of their own in the environment, after `?after=`.
    func listAccounts(_ match: RouteMatch) throws(Problem) -> HTTPReply {
        let limit = match.inputs.query("limit", as: ListPageSize.self)?.value ?? 100
        let after = match.inputs.query("after", as: String.self) ?? ""
        let environment = try ManagementInputs.environment(match, in: changes.environments)
        let snapshot = changes.snapshot(for: environment)
        let grant = match.grant
        return .deferred { self.accountsPage(snapshot, environment: environment.text, after: after, limit: limit, grant: grant) }
    }

    /// One page of the accounts with a layout of their own in `environment` that the token may read there, by name
    /// (off libmicrohttpd's threads): a token narrowed to other environments lists none.
    private func accountsPage(_ snapshot: Snapshot, environment: String, after: String, limit: Int, grant: Grant?) -> HTTPResponse {
        let records = snapshot.documents.values.map(\.record).filter {
            $0.account.utf8.lexicographicallyPrecedes(after.utf8) == false && $0.account != after
                && (grant?.mayRead(account: $0.account, environment: environment) ?? true)
        }
        .sorted { $0.account.utf8.lexicographicallyPrecedes($1.account.utf8) }
        let page = records.prefix(limit)
        let entries: [JSONValue] = page.map { record in
            .object([
                "account": .string(record.account), "version": .integer(Int64(record.version)), "etag": .string(record.etag),
                "updatedAt": .string(Timestamp(unixMillis: record.createdAtMillis).rfc3339),
            ])
        }
        let next: JSONValue? = records.count > limit ? page.last.map { .string($0.account) } : nil
        return json(200, ["accounts": .array(entries)], nullable: ["next": next])
    }

    /// `POST /v1/validate`: the source compiled, nothing stored; the lint's `warnings` beside it when there are any.
    func validate(_ request: borrowing HTTPRequest) throws(Problem) -> HTTPReply {
        guard let format = ManagementInputs.uploadFormat(request) else { throw ManagementInputs.unsupportedLayoutType }
        let body = request.body
        return .deferred {
            do throws(LayoutError) {
                let (_, compiled, warnings) = try changes.compileForWrite(account: "validate", source: body, format: format)
                var members = objectMembers(compiled.document)
                Changes.addWarnings(warnings, to: &members)
                return json(200, members)
            } catch {
                return Problem.invalidLayout(error).response
            }
        }
    }

    // MARK: Strings tables

    /// `GET /v1/strings/{locale}`: the table as uploaded.
    func readStringsRoute(_ match: RouteMatch) throws(Problem) -> HTTPReply {
        let locale = match.inputs.path("locale", as: LocaleTag.self).text
        let environment = try ManagementInputs.environment(match, in: changes.environments)
        guard let record = changes.snapshot(for: environment).stringsRecords[locale] else {
            throw .notFound("there is no strings table for \(locale)")
        }
        return .response(
            HTTPResponse(
                status: 200, headers: [HTTPHeader("Content-Type", record.contentType), HTTPHeader("ETag", record.etag)],
                body: record.source))
    }

    /// `PUT /v1/strings/{locale}`: a new version of a global strings table.
    func writeStringsRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let locale = match.inputs.path("locale", as: LocaleTag.self).text
        let author = match.author
        let kind = mediaType(request.header("Content-Type") ?? "")
        guard kind == "text/plain" || kind == "application/json" || kind == "text/x-strings" else {
            throw Problem(.unsupportedMediaType, detail: "a strings table is text/plain (Apple .strings) or application/json")
        }
        let environment = try ManagementInputs.environment(match, in: changes.environments)
        let options = try ManagementInputs.writeOptions(match, account: "", environment: environment, clock: changes.clock)
        var order = ChangeOrder(
            .stringsWrite(
                locale: locale, contentType: request.header("Content-Type") ?? kind, body: String(decoding: request.body, as: UTF8.self)),
            account: "", environment: environment, precondition: ManagementInputs.precondition(match), author: author, options: options)
        order.sentBody = request.body
        let sent = order
        return .deferred { await changes.run(sent) }
    }
}
