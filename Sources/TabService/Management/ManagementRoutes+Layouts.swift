import MicroHTTPD
import TabDelivery
import TabLayout
import TabStore

/// The handlers of layouts and their history: read, written (uploaded, patched), deleted, restored, listed.
extension ManagementRoutes {
    /// `GET …/layout`, `GET …/layout/versions/{version}`: the source as uploaded.
    func readLayoutRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let environment: EnvironmentName
        switch ManagementInputs.environment(request, in: changes.environments) {
        case .success(let chosen): environment = chosen
        case .failure(let problem): return .response(problem.response)
        }
        return ManagementInputs.withLayoutAddress(match) { account, number in
            .deferred { await self.readLayout(account: account, number: number, environment: environment) }
        }
    }

    /// `PUT …/layout`: a new version (or, with `?dryRun=true`, only its compilation).
    func putLayoutRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let address: (account: String, version: Int?)
        switch ManagementInputs.layoutAddress(match) {
        case .success(let checked): address = checked
        case .failure(let problem): return .response(problem.response)
        }
        guard let format = ManagementInputs.uploadFormat(request) else { return .response(ManagementInputs.unsupportedLayoutType.response) }
        let target: (environment: EnvironmentName, mode: PublishMode)
        switch ManagementInputs.writeTarget(request, in: changes.environments) {
        case .success(let chosen): target = chosen
        case .failure(let problem): return .response(problem.response)
        }
        var upload = Changes.LayoutUpload(
            account: address.account, body: request.body, contentType: request.header("Content-Type") ?? "", format: format,
            precondition: ManagementInputs.precondition(request), author: match.author, message: request.header("Change-Message"),
            dryRun: request.query("dryRun") == "true", restoredFrom: nil, environment: target.environment, publish: target.mode == .publish)
        switch ManagementInputs.writeOptions(request, match, environment: target.environment, clock: changes.clock) {
        case .success(let options): upload.options = options
        case .failure(let problem): return .response(problem.response)
        }
        let checked = upload
        return .deferred { await self.changes.write(checked) }
    }

    /// `PATCH …/layout`: JSON Patch or JSON Merge Patch on the JSON form of the source.
    func patchLayoutRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let address: (account: String, version: Int?)
        switch ManagementInputs.layoutAddress(match) {
        case .success(let checked): address = checked
        case .failure(let problem): return .response(problem.response)
        }
        let kind = mediaType(request.header("Content-Type") ?? "")
        guard kind == "application/json-patch+json" || kind == "application/merge-patch+json" else {
            return .response(
                Problem(
                    .unsupportedMediaType,
                    detail: "PATCH takes application/json-patch+json (RFC 6902) or application/merge-patch+json (RFC 7396)",
                    headers: [HTTPHeader("Accept-Patch", "application/json-patch+json, application/merge-patch+json")]
                ).response)
        }
        let target: (environment: EnvironmentName, mode: PublishMode)
        switch ManagementInputs.writeTarget(request, in: changes.environments) {
        case .success(let chosen): target = chosen
        case .failure(let problem): return .response(problem.response)
        }
        let options: WriteOptions
        switch ManagementInputs.writeOptions(request, match, environment: target.environment, clock: changes.clock) {
        case .success(let chosen): options = chosen
        case .failure(let problem): return .response(problem.response)
        }
        let body = request.body
        let precondition = ManagementInputs.precondition(request)
        let author = match.author
        return .deferred {
            await self.changes.patch(
                account: address.account, patch: body, isMerge: kind == "application/merge-patch+json", precondition: precondition,
                author: author, environment: target.environment, publish: target.mode == .publish, options: options)
        }
    }

    /// `DELETE …/layout`: a deletion record (the history stays).
    func deleteLayoutRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let precondition = ManagementInputs.precondition(request)
        let (environment, options): (EnvironmentName, WriteOptions)
        switch ManagementInputs.environmentAndOptions(request, match, in: changes.environments, clock: changes.clock) {
        case .success(let chosen): (environment, options) = chosen
        case .failure(let problem): return .response(problem.response)
        }
        return ManagementInputs.withLayoutAddress(match) { account, _ in
            .deferred {
                await self.changes.deleteLayout(
                    account: account, precondition: precondition, author: match.author, environment: environment, options: options)
            }
        }
    }

    /// `GET …/layout/versions`: one page of the history.
    func versionsRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let page: VersionPage
        switch VersionPage.parse(before: request.query("before"), limit: request.query("limit")) {
        case .success(let parsed): page = parsed
        case .failure(let problem): return .response(problem.response)
        }
        return ManagementInputs.withLayoutAddress(match) { account, _ in .deferred { await self.listVersions(account: account, page: page) }
        }
    }

    /// `GET …/layout/versions/{version}/diff`: tab-level changes from `against` (default n−1) to n.
    func diffRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let against = request.query("against")
        let plain = ManagementHeaders.prefersPlainText(request.headerList("Accept"))
        return ManagementInputs.withLayoutAddress(match) { account, number in
            .deferred { await self.diff(account: account, to: number ?? 1, againstText: against, plainText: plain) }
        }
    }

    /// `POST …/layout/versions/{version}/restore`: a new version with that version's content.
    func restoreRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let precondition = ManagementInputs.precondition(request)
        let (environment, options): (EnvironmentName, WriteOptions)
        switch ManagementInputs.environmentAndOptions(request, match, in: changes.environments, clock: changes.clock) {
        case .success(let chosen): (environment, options) = chosen
        case .failure(let problem): return .response(problem.response)
        }
        return ManagementInputs.withLayoutAddress(match) { account, number in
            .deferred {
                await self.changes.restore(
                    account: account, number: number ?? 0, precondition: precondition, author: match.author, environment: environment,
                    options: options)
            }
        }
    }

    func readLayout(account: String, number: Int?, environment: EnvironmentName) async -> HTTPResponse {
        let record: StoredVersion?
        do {
            changes.metrics.storeOperations.add()
            if let number {
                record = try await changes.store.version(account: account, number: number)
            } else {
                record = try await changes.store.pointed(account: account, environment: environment.text)
            }
        } catch {
            return changes.storeProblem(error)
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
                HTTPHeader("Last-Modified", Timestamp(unixSeconds: record.createdAtMillis / 1000).httpDate),
            ], body: record.source)
    }

    func listVersions(account: String, page: VersionPage) async -> HTTPResponse {
        let all: [StoredVersion]
        let pointers: [String: Int]
        do {
            changes.metrics.storeOperations.add()
            all = try await changes.store.versions(account: account)
            pointers = try await changes.store.pointers(account: account)
        } catch {
            return changes.storeProblem(error)
        }
        guard !all.isEmpty else { return Problem.notFound("account '\(account)' never had a layout").response }
        let older = all.filter { record in page.before.map { record.version < $0 } ?? true }
        let versions = older.prefix(page.limit)
        let entries: [JSONValue] = versions.map { record in
            var entry: [String: JSONValue] = [
                "version": .integer(Int64(record.version)), "etag": .string(record.etag),
                "createdAt": .string(Timestamp(unixMillis: record.createdAtMillis).rfc3339), "deleted": .bool(record.deleted),
            ]
            if let author = record.author { entry["author"] = .string(author) }
            if let message = record.message { entry["message"] = .string(message) }
            if let from = record.restoredFrom { entry["restoredFrom"] = .integer(Int64(from)) }
            entry["environments"] = .array(
                changes.environments.names.filter { pointers[$0.text] == record.version }.map { .string($0.text) })
            return .object(entry)
        }
        let next: JSONValue? = older.count > page.limit ? versions.last.map { .integer(Int64($0.version)) } : nil
        return json(200, ["versions": .array(entries)], nullable: ["next": next])
    }
}
