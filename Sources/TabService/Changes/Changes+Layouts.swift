import Logging
import MicroHTTPD
import TabBuilds
import TabDelivery
import TabLayout
import TabLint
import TabStore

/// The write commands of layouts and strings tables: a version written (uploaded, patched, restored), a layout
/// deleted, a strings table written, each gated by the live builds, held for review in a protected environment, and
/// published once stored.
extension Changes {
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

    /// An upload compiled against its environment's snapshot, with the live builds that could not open it.
    struct CheckedUpload {
        var document: LayoutDocument
        var warnings: [LintWarning]
        var misses: [BuildMiss]
        var snapshot: Snapshot
    }

    /// What ``check(_:)`` found.
    enum CheckOutcome {
        case checked(CheckedUpload)
        /// The answer to give instead of writing.
        case answered(HTTPResponse)
    }

    /// Compiles `upload` against the current snapshot and runs the builds gate on it: the checked upload, or the
    /// answer instead (422 when it does not compile, a dry run's answer, a store failure).
    func check(_ upload: LayoutUpload) async -> CheckOutcome {
        let document: LayoutDocument
        let compiled: CompiledLayout
        let warnings: [LintWarning]
        let snapshot = self.snapshot(for: upload.environment)
        do {
            (document, compiled, warnings) = try compileForWrite(
                account: upload.account, source: upload.body, format: upload.format, in: upload.environment)
        } catch {
            return .answered(Problem.invalidLayout(error).response)
        }
        if upload.dryRun { return .answered(dryRunAnswer(upload, compiled: compiled, warnings: warnings)) }
        // The gate: every live build must be able to open what it would get (a draft is stored and told which fail).
        let resolved: ResolvedLayout
        do throws(LayoutError) {
            resolved = try snapshot.resolve(upload.account, version: nil, document: document, strict: false)
        } catch {
            return .answered(Problem.invalidLayout(error).response)
        }
        do throws(StoreError) {
            let misses = try await buildMisses(resolved)
            return .checked(CheckedUpload(document: document, warnings: warnings, misses: misses, snapshot: snapshot))
        } catch {
            return .answered(storeProblem(error))
        }
    }

    /// Compiles against the current snapshot (422 when it cannot), then appends and swaps the snapshot; never held
    /// (``run(_:)`` decides that).
    func write(_ upload: LayoutUpload) async -> HTTPResponse {
        let checked: CheckedUpload
        switch await check(upload) {
        case .checked(let value): checked = value
        case .answered(let answer): return answer
        }
        let (document, warnings, misses, snapshot) = (checked.document, checked.warnings, checked.misses, checked.snapshot)
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
                if upload.options.bypassApproval, approvals.approvals(for: upload.environment.text) != nil {
                    forced += " bypassApproval"
                }
                change.audit = context.entry(
                    action: action + forced, account: upload.account, status: existed || upload.restoredFrom != nil ? 200 : 201)
            }
            let record = try await store.append(change)
            if upload.publish { await commit(record, document: document, in: upload.environment) }
            return written(
                record, status: existed ? 200 : 201,
                incompatibleBuilds: upload.publish || misses.isEmpty ? nil : Self.incompatibleBuilds(misses), warnings: warnings)
        } catch {
            return storeProblem(error)
        }
    }

    /// A dry run's answer: the compiled layout, plus `diff`, what storing it would change against the current
    /// version (`from` null when the account has no layout yet), and the lint's `warnings` when there are any.
    func dryRunAnswer(_ upload: LayoutUpload, compiled: CompiledLayout, warnings: [LintWarning]) -> HTTPResponse {
        var members = objectMembers(compiled.document)
        Self.addWarnings(warnings, to: &members)
        let current = snapshot(for: upload.environment).record(upload.account)
        do throws(LayoutError) {
            let diff = try LayoutDiff(
                from: try current?.sourceTree(), to: try LayoutSource.readTree(upload.body, format: upload.format))
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
    /// - Returns: the document, its compiled layout for the default locale, and the lint's warnings (advice: the write
    ///   goes on).
    func compileForWrite(account: String, source: [UInt8], format: SourceFormat?, in environment: EnvironmentName? = nil)
        throws(LayoutError) -> (LayoutDocument, CompiledLayout, [LintWarning])
    {
        let document = try LayoutSource.parse(source, format: format)
        let snapshot = self.snapshot(for: environment ?? environments.entry)
        let resolved = try snapshot.resolve(account, version: nil, document: document, strict: true)
        let compiled = LayoutCompiler.compile(
            resolved, for: ClientContext(locale: resolved.defaultLocale), globalStrings: snapshot.globalStrings)
        let locales = Set(resolved.strings.keys).union(snapshot.globalStrings.keys).subtracting([resolved.defaultLocale]).sorted()
        try LayoutLimits.checkCompiledSize(compiled, locale: resolved.defaultLocale)
        for locale in locales {
            let other = LayoutCompiler.compile(resolved, for: ClientContext(locale: locale), globalStrings: snapshot.globalStrings)
            try LayoutLimits.checkCompiledSize(other, locale: locale)
        }
        return (document, compiled, LayoutLint.warnings(resolved, globalStrings: snapshot.globalStrings))
    }

    /// `warnings: [{"pointer", "rule", "message"}]` in an answer, when there are any.
    static func addWarnings(_ warnings: [LintWarning], to members: inout [String: JSONValue]) {
        if !warnings.isEmpty { members["warnings"] = .array(warnings.map(\.json)) }
    }

    /// Publishes `record` (a version this replica or another committed) and its change event.
    func commit(_ record: StoredVersion, document: LayoutDocument?, in environment: EnvironmentName? = nil, event: ChangeEvent? = nil)
        async
    {
        outbox.poke()  // the write committed its deliveries with it
        let logger = self.logger
        await publish(in: environment ?? environments.served) { snapshot in
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

    /// A write's answer: `{"account", "version", "etag"}`, for a draft that live builds could not open,
    /// `incompatibleBuilds`, and the lint's `warnings` when there are any.
    func written(_ record: StoredVersion, status: Int, incompatibleBuilds: JSONValue? = nil, warnings: [LintWarning] = []) -> HTTPResponse {
        var members: [String: JSONValue] = [
            "account": .string(record.account), "version": .integer(Int64(record.version)), "etag": .string(record.etag),
        ]
        if let incompatibleBuilds { members["incompatibleBuilds"] = incompatibleBuilds }
        Self.addWarnings(warnings, to: &members)
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
        return await run(ChangeOrder(upload))
    }

    func deleteLayout(
        account: String, precondition: WritePrecondition, author: String, environment: EnvironmentName,
        options: WriteOptions = WriteOptions()
    ) async -> HTTPResponse {
        if let refused = deleteRefusal(account: account, precondition: precondition, in: environment) { return refused }
        let snapshot = self.snapshot(for: environment)
        do {
            // The account falls back to `default` there: every live build must be able to open that.
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

    /// Why deleting the layout of `account` in `environment` is refused before anything else: 404 without a layout
    /// and a precondition, 428 without a precondition, 409 while other layouts extend it; nil when it may go on.
    func deleteRefusal(account: String, precondition: WritePrecondition, in environment: EnvironmentName) -> HTTPResponse? {
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
        return nil
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
        let response = await run(ChangeOrder(upload))
        guard response.status == 201 else { return response }
        var ok = response
        ok.status = 200
        return ok
    }

    /// Stores a new version of a strings table in `environment` and serves it there.
    func writeStrings(
        locale: String, environment: EnvironmentName, body: [UInt8], contentType: String, precondition: WritePrecondition, author: String
    ) async -> HTTPResponse {
        let table: StringsTable
        do throws(LayoutError) {
            table = try StringsTable.read(body)
        } catch {
            return Problem.invalidLayout(error).response
        }
        let existed = snapshot(for: environment).stringsRecords[locale] != nil
        do throws(StoreError) {
            metrics.storeOperations.add()
            let record = try await store.appendStrings(
                locale: locale, environment: environment.text, source: body, contentType: contentType, precondition: precondition,
                author: author, audit: AuditContext.current?.entry(action: "strings.put", account: nil, status: existed ? 200 : 201))
            await commit(strings: record, table: table, in: environment)
            return json(
                existed ? 200 : 201, ["locale": .string(locale), "version": .integer(Int64(record.version)), "etag": .string(record.etag)],
                headers: [HTTPHeader("ETag", record.etag)])
        } catch {
            return storeProblem(error)
        }
    }

    /// Publishes a strings table version in one environment and its change event (every layout there may change).
    func commit(strings record: StoredStrings, table: StringsTable, in environment: EnvironmentName? = nil, event: ChangeEvent? = nil)
        async
    {
        outbox.poke()  // the write committed its deliveries with it
        let logger = self.logger
        await publish(in: environment ?? environments.served) { snapshot in
            // A given event (a promotion) is told even when the snapshot serves the table already.
            guard let next = snapshot.applying(strings: record, table: table, logger: logger) ?? (event == nil ? nil : snapshot) else {
                return nil
            }
            return (next, [event ?? ChangeEvent(strings: record)])
        }
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
