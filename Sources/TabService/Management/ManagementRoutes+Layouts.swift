import MicroHTTPD
import TabDelivery
import TabLayout
import TabStore

/// The handlers of layouts and their history: read, written (uploaded, patched), deleted, restored, listed.
extension ManagementRoutes {
    /// `GET …/layout`, `GET …/layout/versions/{version}`: the source as uploaded.
    func readLayoutRoute(_ match: RouteMatch) throws(Problem) -> HTTPReply {
        let environment = try ManagementInputs.environment(match, in: changes.environments)
        let account = ManagementInputs.account(match)
        let number = match.names.contains("version") ? match.inputs.path("version", as: VersionNumber.self).value : nil
        return .deferred { await self.readLayout(account: account, number: number, environment: environment) }
    }

    /// `PUT …/layout`: a new version (or, with `?dryRun=true`, only its compilation).
    func putLayoutRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        guard let format = ManagementInputs.uploadFormat(request) else { throw ManagementInputs.unsupportedLayoutType }
        let account = ManagementInputs.account(match)
        let environment = try ManagementInputs.environment(match, in: changes.environments)
        var upload = Changes.LayoutUpload(
            account: account, body: request.body, contentType: request.header("Content-Type") ?? "", format: format,
            precondition: ManagementInputs.precondition(match), author: match.author,
            message: match.inputs.header("Change-Message", as: String.self),
            dryRun: match.inputs.query("dryRun", as: OptIn.self)?.isOn == true,
            restoredFrom: nil, environment: environment, publish: ManagementInputs.publishMode(match) == .publish)
        upload.options = try ManagementInputs.writeOptions(match, account: account, environment: environment, clock: changes.clock)
        let checked = upload
        return .deferred { await self.changes.run(ChangeOrder(checked)) }
    }

    /// `PATCH …/layout`: JSON Patch or JSON Merge Patch on the JSON form of the source.
    func patchLayoutRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let kind = mediaType(request.header("Content-Type") ?? "")
        guard kind == "application/json-patch+json" || kind == "application/merge-patch+json" else {
            throw Problem(
                .unsupportedMediaType,
                detail: "PATCH takes application/json-patch+json (RFC 6902) or application/merge-patch+json (RFC 7396)",
                headers: [HTTPHeader("Accept-Patch", "application/json-patch+json, application/merge-patch+json")])
        }
        let account = ManagementInputs.account(match)
        let environment = try ManagementInputs.environment(match, in: changes.environments)
        let publish = ManagementInputs.publishMode(match) == .publish
        let options = try ManagementInputs.writeOptions(match, account: account, environment: environment, clock: changes.clock)
        let body = request.body
        let precondition = ManagementInputs.precondition(match)
        let author = match.author
        return .deferred {
            await self.changes.patch(
                account: account, patch: body, isMerge: kind == "application/merge-patch+json", precondition: precondition,
                author: author, environment: environment, publish: publish, options: options)
        }
    }

    /// `DELETE …/layout`: a deletion record (the history stays).
    func deleteLayoutRoute(_ match: RouteMatch) throws(Problem) -> HTTPReply {
        let account = ManagementInputs.account(match)
        let environment = try ManagementInputs.environment(match, in: changes.environments)
        let options = try ManagementInputs.writeOptions(match, account: account, environment: environment, clock: changes.clock)
        let precondition = ManagementInputs.precondition(match)
        let order = ChangeOrder(
            .layoutDelete, account: account, environment: environment, precondition: precondition, author: match.author, options: options)
        return .deferred { await self.changes.run(order) }
    }

    /// `GET …/layout/versions`: one page of the history, newest first, `?limit=` at a time, older than `?before=`.
    func versionsRoute(_ match: RouteMatch) -> HTTPReply {
        let account = ManagementInputs.account(match)
        let before = match.inputs.query("before", as: VersionCursor.self)?.value
        let limit = match.inputs.query("limit", as: ListPageSize.self)?.value ?? 100
        return .deferred { await self.listVersions(account: account, before: before, limit: limit) }
    }

    /// `GET …/layout/versions/{version}/diff`: tab-level changes from `against` (default n−1) to n.
    func diffRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let account = ManagementInputs.account(match)
        let number = match.inputs.path("version", as: VersionNumber.self).value
        let against = match.inputs.query("against", as: VersionCursor.self)?.value ?? (number > 1 ? number - 1 : nil)
        let plain = ManagementHeaders.prefersPlainText(request.headerList("Accept"))
        return .deferred { await self.diff(account: account, to: number, against: against, plainText: plain) }
    }

    /// `POST …/layout/versions/{version}/restore`: a new version with that version's content.
    func restoreRoute(_ match: RouteMatch) throws(Problem) -> HTTPReply {
        let account = ManagementInputs.account(match)
        let number = match.inputs.path("version", as: VersionNumber.self).value
        let environment = try ManagementInputs.environment(match, in: changes.environments)
        let options = try ManagementInputs.writeOptions(match, account: account, environment: environment, clock: changes.clock)
        let precondition = ManagementInputs.precondition(match)
        return .deferred {
            await self.changes.restore(
                account: account, number: number, precondition: precondition, author: match.author, environment: environment,
                options: options)
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
            return (number.map { Problem.noVersion(account, $0) } ?? Problem.notFound("account '\(account)' has no layout of its own"))
                .response
        }
        return HTTPResponse(
            status: 200,
            headers: [
                HTTPHeader("Content-Type", record.contentType), HTTPHeader("ETag", record.etag),
                HTTPHeader("Layout-Version", String(record.version)),
                HTTPHeader("Last-Modified", Timestamp(unixSeconds: record.createdAtMillis / 1000).httpDate),
            ], body: record.source)
    }

    func listVersions(account: String, before: Int?, limit: Int) async -> HTTPResponse {
        let all: [StoredVersion]
        let pointers: [String: Int]
        let revoked: [Int: StoredRevocation]
        do {
            changes.metrics.storeOperations.add()
            all = try await changes.store.versions(account: account)
            pointers = try await changes.store.pointers(account: account)
            revoked = Dictionary(
                try await changes.store.revocations(account: account).filter(\.isRevoked).map { ($0.version, $0) },
                uniquingKeysWith: { first, _ in first })
        } catch {
            return changes.storeProblem(error)
        }
        guard !all.isEmpty else { return Problem.notFound("account '\(account)' never had a layout").response }
        let older = all.filter { record in before.map { record.version < $0 } ?? true }
        let versions = older.prefix(limit)
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
            // A revoked version: `{"reason", "revokedAt", "revokedBy"}`.
            if let revocation = revoked[record.version] {
                entry["revoked"] = .object(
                    Changes.object(revocation).filter { ["reason", "revokedAt", "revokedBy"].contains($0.key) })
            }
            return .object(entry)
        }
        let next: JSONValue? = older.count > limit ? versions.last.map { .integer(Int64($0.version)) } : nil
        return json(200, ["versions": .array(entries)], nullable: ["next": next])
    }
}
