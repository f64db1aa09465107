import Logging
import MicroHTTPD
import TabBuilds
import TabDelivery
import TabLayout
import TabStore

extension TabService {
    /// The account a layout route names and, on version routes, the version number; a 400 when either is malformed.
    /// The token and the method were checked by the route table before any handler runs.
    func layoutAddress(_ match: RouteMatch) -> Result<(account: String, version: Int?), ProblemError> {
        let account = match["account"]
        guard isValidAccountName(account) else { return .failure(ProblemError(Problem.invalidAccount)) }
        guard match.names.contains("version") else { return .success((account, nil)) }
        let text = match["version"]
        guard let number = Int(text), number >= 1 else {
            return .failure(ProblemError(Problem.badRequest("a version number is an integer ≥ 1, not '\(text)'")))
        }
        return .success((account, number))
    }

    /// Runs `body` with the route's checked address, or answers its problem.
    func withLayoutAddress(_ match: RouteMatch, _ body: (String, Int?) -> HTTPReply) -> HTTPReply {
        switch layoutAddress(match) {
        case .success(let address): body(address.account, address.version)
        case .failure(let problem): .response(problem.response)
        }
    }

    /// `GET …/layout`, `GET …/layout/versions/{version}`: the source as uploaded.
    func readLayoutRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let environment: EnvironmentName
        switch managedEnvironment(request) {
        case .success(let chosen): environment = chosen
        case .failure(let problem): return .response(problem.response)
        }
        return withLayoutAddress(match) { account, number in
            .deferred { await self.readLayout(account: account, number: number, environment: environment) }
        }
    }

    /// `PUT …/layout`: a new version (or, with `?dryRun=true`, only its compilation).
    func putLayoutRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let address: (account: String, version: Int?)
        switch layoutAddress(match) {
        case .success(let checked): address = checked
        case .failure(let problem): return .response(problem.response)
        }
        guard let format = uploadFormat(request) else { return unsupportedMediaType() }
        let target: (environment: EnvironmentName, mode: PublishMode)
        switch writeTarget(request) {
        case .success(let chosen): target = chosen
        case .failure(let problem): return .response(problem.response)
        }
        var upload = LayoutUpload(
            account: address.account, body: request.body, contentType: request.header("Content-Type") ?? "", format: format,
            precondition: writePrecondition(request), author: match.author, message: request.header("Change-Message"),
            dryRun: request.query("dryRun") == "true", restoredFrom: nil, environment: target.environment, publish: target.mode == .publish)
        switch writeOptions(request, match, environment: target.environment) {
        case .success(let options): upload.options = options
        case .failure(let problem): return .response(problem.response)
        }
        let checked = upload
        return .deferred { await self.write(checked) }
    }

    /// `PATCH …/layout`: JSON Patch or JSON Merge Patch on the JSON form of the source.
    func patchLayoutRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let address: (account: String, version: Int?)
        switch layoutAddress(match) {
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
        switch writeTarget(request) {
        case .success(let chosen): target = chosen
        case .failure(let problem): return .response(problem.response)
        }
        let options: WriteOptions
        switch writeOptions(request, match, environment: target.environment) {
        case .success(let chosen): options = chosen
        case .failure(let problem): return .response(problem.response)
        }
        let body = request.body
        let precondition = writePrecondition(request)
        let author = match.author
        return .deferred {
            await self.patch(
                account: address.account, patch: body, isMerge: kind == "application/merge-patch+json", precondition: precondition,
                author: author, environment: target.environment, publish: target.mode == .publish, options: options)
        }
    }

    /// `DELETE …/layout`: a deletion record (the history stays).
    func deleteLayoutRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let precondition = writePrecondition(request)
        let environment: EnvironmentName
        switch managedEnvironment(request) {
        case .success(let chosen): environment = chosen
        case .failure(let problem): return .response(problem.response)
        }
        let options: WriteOptions
        switch writeOptions(request, match, environment: environment) {
        case .success(let chosen): options = chosen
        case .failure(let problem): return .response(problem.response)
        }
        return withLayoutAddress(match) { account, _ in
            .deferred {
                await self.deleteLayout(
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
        return withLayoutAddress(match) { account, _ in .deferred { await self.listVersions(account: account, page: page) } }
    }

    /// `GET …/layout/versions/{version}/diff`: tab-level changes from `against` (default n−1) to n.
    func diffRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let against = request.query("against")
        let plain = ManagementHeaders.prefersPlainText(request.headerList("Accept"))
        return withLayoutAddress(match) { account, number in
            .deferred { await self.diff(account: account, to: number ?? 1, againstText: against, plainText: plain) }
        }
    }

    /// `POST …/layout/versions/{version}/restore`: a new version with that version's content.
    func restoreRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let precondition = writePrecondition(request)
        let environment: EnvironmentName
        switch managedEnvironment(request) {
        case .success(let chosen): environment = chosen
        case .failure(let problem): return .response(problem.response)
        }
        let options: WriteOptions
        switch writeOptions(request, match, environment: environment) {
        case .success(let chosen): options = chosen
        case .failure(let problem): return .response(problem.response)
        }
        return withLayoutAddress(match) { account, number in
            .deferred {
                await self.restore(
                    account: account, number: number ?? 0, precondition: precondition, author: match.author, environment: environment,
                    options: options)
            }
        }
    }

    /// The environment a management request names (`?environment=`, by default the first: where changes enter).
    func managedEnvironment(_ request: borrowing HTTPRequest) -> Result<EnvironmentName, ProblemError> {
        do throws(RolloutError) {
            return .success(try environmentList.forManaging(request.query("environment")))
        } catch {
            return .failure(ProblemError(Problem.rollout(error)))
        }
    }

    /// Where a `PUT` or `PATCH` goes and whether it moves the pointer (`?publish=false`: a draft).
    func writeTarget(_ request: borrowing HTTPRequest) -> Result<(environment: EnvironmentName, mode: PublishMode), ProblemError> {
        let environment: EnvironmentName
        switch managedEnvironment(request) {
        case .success(let chosen): environment = chosen
        case .failure(let problem): return .failure(problem)
        }
        do throws(RolloutError) {
            return .success((environment, try PublishMode(query: request.query("publish"))))
        } catch {
            return .failure(ProblemError(Problem.rollout(error)))
        }
    }

    func writePrecondition(_ request: borrowing HTTPRequest) -> WritePrecondition {
        if let field = request.headerList("If-Match") { return .ifMatch(ManagementHeaders.entityTags(field)) }
        if let field = request.header("If-None-Match"), field.trimmingCharacters(in: " \t") == "*" { return .ifNoneMatchAny }
        return .none
    }

    func uploadFormat(_ request: borrowing HTTPRequest) -> SourceFormat? {
        request.header("Content-Type").flatMap(sourceFormat)
    }

    func unsupportedMediaType() -> HTTPReply {
        .response(
            Problem(
                .unsupportedMediaType,
                detail:
                    "a layout is application/json, application/x-plist, application/xml, text/xml or application/octet-stream (binary plist)"
            ).response)
    }

    /// The answer to a store failure: refused preconditions as 428/412/404, the rest 503 (details in the log only).
    func storeProblem(_ error: StoreError) -> HTTPResponse {
        noteStoreFailure(error)
        return Problem.store(error).response
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
        /// The environment the version enters, and whether its pointer moves there (false: a draft).
        var environment: EnvironmentName = .production
        var publish = true
        /// The gate, review and schedule choices of the request (``WriteOptions``).
        var options = WriteOptions()
    }

    /// Compiles against the current snapshot (422 when it cannot), then appends and swaps the snapshot.
    func write(_ upload: LayoutUpload) async -> HTTPResponse {
        let document: LayoutDocument
        let compiled: CompiledLayout
        let snapshot = self.snapshot(for: upload.environment)
        do {
            (document, compiled) = try compileForWrite(
                account: upload.account, source: upload.body, format: upload.format, in: upload.environment)
        } catch {
            return Problem.invalidLayout(error).response
        }
        if upload.dryRun { return dryRunAnswer(upload, compiled: compiled) }
        // The gate: every live build must be able to open what it would get (a draft is stored and told which fail).
        let resolved: ResolvedLayout
        do throws(LayoutError) {
            resolved = try snapshot.resolve(upload.account, version: nil, document: document, strict: false)
        } catch {
            return Problem.invalidLayout(error).response
        }
        let misses: [BuildMiss]
        do throws(StoreError) {
            misses = try await buildMisses(resolved)
        } catch {
            return storeProblem(error)
        }
        if upload.publish, !upload.options.applying, let required = reviewRequired(in: upload.environment, upload.options) {
            return await holdForReview(upload, required: required, misses: misses)
        }
        if upload.publish, !misses.isEmpty, !upload.options.allowIncompatible { return Self.incompatible(misses).response }
        let existed = snapshot.record(upload.account) != nil
        do {
            metrics.storeOperations.add()
            var change = LayoutWrite(
                account: upload.account, source: upload.body, contentType: mediaType(upload.contentType),
                precondition: upload.precondition, author: upload.author, message: upload.message, restoredFrom: upload.restoredFrom,
                extends: document.extends ?? "")
            change.environment = upload.environment.text
            change.publish = upload.publish
            if let context = AuditContext.current {
                let action = upload.restoredFrom != nil ? "layout.restore" : "layout.\(context.method.lowercased())"
                // A forced publish names the builds it knowingly breaks.
                var forced =
                    upload.publish && !misses.isEmpty
                    ? " allowIncompatible: " + Set(misses.map(\.build)).sorted().map(\.description).joined(separator: ", ") : ""
                if upload.options.bypassApproval, configuration.approvals.approvals(for: upload.environment.text) != nil {
                    forced += " bypassApproval"
                }
                change.audit = context.entry(
                    action: action + forced, account: upload.account, status: existed || upload.restoredFrom != nil ? 200 : 201)
            }
            let record = try await store.append(change)
            if upload.publish { await commit(record, document: document, in: upload.environment) }
            return written(
                record, status: existed ? 200 : 201,
                incompatibleBuilds: upload.publish || misses.isEmpty ? nil : Self.incompatibleBuilds(misses))
        } catch {
            return storeProblem(error)
        }
    }

    /// A dry run's answer: the compiled layout, plus `diff`, what storing it would change against the current
    /// version (`from` null when the account has no layout yet).
    func dryRunAnswer(_ upload: LayoutUpload, compiled: CompiledLayout) -> HTTPResponse {
        var members = objectMembers(compiled.document)
        let current = snapshot(for: upload.environment).record(upload.account)
        do throws(LayoutError) {
            let diff = try LayoutDiff(
                from: try current.flatMap(Self.tree), to: try LayoutSource.readTree(upload.body, format: upload.format))
            var object = objectMembers(diff.document(account: upload.account, from: current?.version, to: (current?.version ?? 0) + 1))
            object["account"] = nil
            members["diff"] = .object(object)
        } catch {
            logger.error("dry-run diff of \(upload.account) failed: \(error)")
        }
        return json(200, members)
    }

    /// Validates, resolves (base references checked strictly) and compiles for the default locale; every locale's
    /// compiled layout must stay within ``LayoutLimits/compiledBytes`` (titles that expand through long strings).
    func compileForWrite(account: String, source: [UInt8], format: SourceFormat?, in environment: EnvironmentName? = nil)
        throws(LayoutError) -> (LayoutDocument, CompiledLayout)
    {
        let document = try LayoutSource.parse(source, format: format)
        let snapshot = self.snapshot(for: environment ?? environmentList.entry)
        let resolved = try snapshot.resolve(account, version: nil, document: document, strict: true)
        let compiled = LayoutCompiler.compile(
            resolved, for: ClientContext(locale: resolved.defaultLocale), globalStrings: snapshot.globalStrings)
        let locales = Set(resolved.strings.keys).union(snapshot.globalStrings.keys).subtracting([resolved.defaultLocale]).sorted()
        try LayoutLimits.checkCompiledSize(compiled, locale: resolved.defaultLocale)
        for locale in locales {
            let other = LayoutCompiler.compile(resolved, for: ClientContext(locale: locale), globalStrings: snapshot.globalStrings)
            try LayoutLimits.checkCompiledSize(other, locale: locale)
        }
        return (document, compiled)
    }

    /// Publishes `record` (a version this replica or another committed) and its change event.
    func commit(_ record: StoredVersion, document: LayoutDocument?, in environment: EnvironmentName? = nil, event: ChangeEvent? = nil)
        async
    {
        webhookWorker.poke()  // the write committed its deliveries with it
        let logger = self.logger
        await publish(in: environment ?? environmentList.served) { snapshot in
            // A given event (a promotion) is told even when the snapshot serves the record already (a replica that
            // learned of the pointer's move first).
            guard let next = snapshot.applying(record, document: document, logger: logger) ?? (event == nil ? nil : snapshot) else {
                return nil
            }
            let affected = snapshot.dependents(of: record.account).union(next.dependents(of: record.account)).union([record.account])
            var told = event ?? ChangeEvent(layout: record, affected: affected)
            told.affected = affected
            return (next, [told])
        }
    }

    /// A write's answer: `{"account", "version", "etag"}`, and for a draft that live builds could not open,
    /// `incompatibleBuilds`.
    func written(_ record: StoredVersion, status: Int, incompatibleBuilds: JSONValue? = nil) -> HTTPResponse {
        var members: [String: JSONValue] = [
            "account": .string(record.account), "version": .integer(Int64(record.version)), "etag": .string(record.etag),
        ]
        if let incompatibleBuilds { members["incompatibleBuilds"] = incompatibleBuilds }
        return json(status, members, headers: [HTTPHeader("ETag", record.etag), HTTPHeader("Layout-Version", String(record.version))])
    }

    func patch(
        account: String, patch: [UInt8], isMerge: Bool, precondition: WritePrecondition, author: String,
        environment: EnvironmentName = .production, publish: Bool = true, options: WriteOptions = WriteOptions()
    ) async -> HTTPResponse {
        let latest: StoredVersion?
        do {
            metrics.storeOperations.add()
            latest = try await store.pointed(account: account, environment: environment.text)
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
        var upload = LayoutUpload(
            account: account, body: Array(patched.jsonText().utf8), contentType: "application/json", format: .json,
            precondition: precondition, author: author, message: nil, dryRun: false, restoredFrom: nil, environment: environment,
            publish: publish)
        upload.options = options
        return await write(upload)
    }

    func deleteLayout(
        account: String, precondition: WritePrecondition, author: String, environment: EnvironmentName,
        options: WriteOptions = WriteOptions()
    ) async -> HTTPResponse {
        let snapshot = self.snapshot(for: environment)
        if case .none = precondition {
            return snapshot.record(account) == nil
                ? Problem.notFound("account '\(account)' has no layout").response : storeProblem(.preconditionRequired)
        }
        let dependents = snapshot.dependents(of: account)
        if !dependents.isEmpty {
            return Problem(
                .layoutIsExtended,
                detail: "other layouts extend \(account): \(dependents.sorted().joined(separator: ", ")); change them first"
            ).response
        }
        do {
            // The account falls back to `default` there: every live build must be able to open that.
            if !options.applying, let required = reviewRequired(in: environment, options) {
                return await holdForReview(
                    action: "layout.delete", account: account, environment: environment, version: nil, precondition: precondition,
                    author: author, required: required, applyAt: options.applyAtMillis, misses: [])
            }
            if account != "default", !options.allowIncompatible, let fallback = snapshot.entry(for: "default")?.resolved {
                let misses = try await buildMisses(fallback)
                if !misses.isEmpty { return Self.incompatible(misses).response }
            }
            metrics.storeOperations.add()
            let record = try await store.delete(
                account: account, environment: environment.text, precondition: precondition, author: author,
                audit: AuditContext.current?.entry(action: "layout.delete", account: account, status: 204))
            await commit(record, document: nil, in: environment)
            return HTTPResponse(status: 204, headers: [HTTPHeader("Layout-Version", String(record.version))])
        } catch {
            return storeProblem(error)
        }
    }

    func restore(
        account: String, number: Int, precondition: WritePrecondition, author: String, environment: EnvironmentName,
        options: WriteOptions = WriteOptions()
    ) async -> HTTPResponse {
        let old: StoredVersion?
        do {
            metrics.storeOperations.add()
            old = try await store.version(account: account, number: number)
        } catch {
            return storeProblem(error)
        }
        guard let old else { return Problem.notFound("account '\(account)' has no version \(number)").response }
        if case .none = precondition, snapshot(for: environment).record(account) != nil { return storeProblem(.preconditionRequired) }
        var upload = LayoutUpload(
            account: account, body: old.source, contentType: old.contentType, format: sourceFormat(old.contentType) ?? .json,
            precondition: precondition, author: author, message: "restore of version \(number)", dryRun: false, restoredFrom: number,
            environment: environment)
        upload.options = options
        let response = await write(upload)
        guard response.status == 201, !upload.options.applying else { return response }
        var ok = response
        ok.status = 200
        return ok
    }

    // MARK: Reads

    func readLayout(account: String, number: Int?, environment: EnvironmentName) async -> HTTPResponse {
        let record: StoredVersion?
        do {
            metrics.storeOperations.add()
            if let number {
                record = try await store.version(account: account, number: number)
            } else {
                record = try await store.pointed(account: account, environment: environment.text)
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
                HTTPHeader("Last-Modified", Timestamp(unixSeconds: record.createdAtMillis / 1000).httpDate),
            ], body: record.source)
    }

    func listVersions(account: String, page: VersionPage) async -> HTTPResponse {
        let all: [StoredVersion]
        let pointers: [String: Int]
        do {
            metrics.storeOperations.add()
            all = try await store.versions(account: account)
            pointers = try await store.pointers(account: account)
        } catch {
            return storeProblem(error)
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
                environmentList.names.filter { pointers[$0.text] == record.version }.map { .string($0.text) })
            return .object(entry)
        }
        let next: JSONValue? = older.count > page.limit ? versions.last.map { .integer(Int64($0.version)) } : nil
        return json(200, ["versions": .array(entries)], nullable: ["next": next])
    }

}

extension ChangeEvent {
    init(layout record: StoredVersion, affected: Set<String>) {
        self.init(
            kind: .layout, account: record.account, locale: nil, version: record.version, etag: record.etag, author: record.author,
            atMillis: record.createdAtMillis, deleted: record.deleted, sequence: 0, affected: affected)
    }

    init(strings record: StoredStrings) {
        self.init(
            kind: .strings, account: nil, locale: record.locale, version: record.version, etag: record.etag, author: record.author,
            atMillis: record.createdAtMillis, deleted: false, sequence: 0, affected: nil)
    }
}

func objectMembers(_ value: JSONValue) -> [String: JSONValue] {
    if case .object(let members) = value { return members }
    return [:]
}
