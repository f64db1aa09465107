import Foundation
import MicroHTTPD
import TabAccess
import TabBuilds
import TabDelivery
import TabLayout
import TabReview
import TabStore

/// What a write request chose besides its content: past the builds gate, past review, when to apply.
struct WriteOptions: Sendable {
    /// `?allowIncompatible=true` (a token that may `deploy` to the account).
    var allowIncompatible = false
    /// `?bypassApproval=true` (an `admin` token): applied at once in a protected environment, audited as a bypass.
    var bypassApproval = false
    /// `Apply-At`: when an approved change request is applied by the store's clock.
    var applyAtMillis: Int64?
}

/// Review (docs/change-requests.md): a change to a protected environment held as a change request, its
/// transitions recorded, and its apply, which runs the command it holds (``ChangeOrder``, ``run(_:)``).
extension Changes {
    /// A publishing write to a protected environment: checked as a write is (422, a dry run's answer), its content
    /// stored as a draft (its precondition checked now against the environment), and a change request that applies
    /// it once approved. 202.
    func holdLayout(_ upload: LayoutUpload, required: Int) async -> HTTPResponse {
        let misses: [BuildMiss]
        switch await check(upload) {
        case .checked(let checked): misses = checked.misses
        case .answered(let answer): return answer
        }
        var draft = LayoutWrite(
            account: upload.account, source: upload.body, contentType: mediaType(upload.contentType), precondition: upload.precondition,
            author: upload.author, message: upload.message ?? "held for review", restoredFrom: upload.restoredFrom, extends: "")
        draft.environment = upload.environment.text
        draft.publish = false
        let record: StoredVersion
        do throws(StoreError) {
            record = try await store.append(draft)
        } catch {
            return storeProblem(error)
        }
        let method = HeldCommand.LayoutMethod(rawValue: AuditContext.current?.method.lowercased() ?? "put") ?? .put
        let command: HeldCommand =
            upload.restoredFrom != nil ? .layoutRestore(draft: record.version) : .layoutWrite(method, draft: record.version)
        return await holdForReview(
            command, account: upload.account, environment: upload.environment, version: record.version,
            precondition: upload.precondition, author: upload.author, required: required, applyAt: upload.options.applyAtMillis,
            misses: misses)
    }

    /// Stores a change request holding `command` and answers 202 with it (`Location: /v1/change-requests/{id}`);
    /// `version` is the version it would serve, `misses` the live builds that could not open it.
    func holdForReview(
        _ command: HeldCommand, account: String, environment: EnvironmentName, version: Int?, precondition: WritePrecondition,
        author: String, required: Int, applyAt: Int64?, misses: [BuildMiss]
    ) async -> HTTPResponse {
        var ifMatch: [String]?
        if case .ifMatch(let tags) = precondition { ifMatch = tags }
        let request = ChangeRequest(
            id: ChangeRequest.newID(), author: author, createdAtMillis: clock.unixMillis, environment: environment.text,
            account: account, command: command, version: version, ifMatch: ifMatch, required: required, applyAtMillis: applyAt)
        do throws(StoreError) {
            try await store.create(
                changeRequest: StoredChangeRequest(
                    id: request.id, state: request.state.rawValue, record: request.json, createdAtMillis: request.createdAtMillis),
                audit: AuditContext.current?.entry(action: "change-request.open", account: account, status: 202),
                event: Self.event(request))
        } catch {
            return storeProblem(error)
        }
        await announce(request)
        var members: [String: JSONValue] = ["changeRequest": .object(Self.object(request))]
        if !misses.isEmpty { members["incompatibleBuilds"] = Self.incompatibleBuilds(misses) }
        return json(202, members, headers: [HTTPHeader("Location", "/v1/change-requests/\(request.id)")])
    }

    /// A transition's webhook data: the request as the API shows it.
    static func event(_ request: ChangeRequest) -> ChangeRequestEvent {
        ChangeRequestEvent(account: request.account, data: CanonicalJSON.encode(.object(object(request))))
    }

    /// Tells `/v1/events` readers (`event: change-request`, the request as its data) in the request's environment;
    /// no long-poll wakes for it.
    func announce(_ request: ChangeRequest) async {
        let data = Self.event(request).data
        let event = ChangeEvent(
            kind: .changeRequest, account: request.account, locale: nil, version: request.version ?? 0, etag: "",
            author: request.author, atMillis: request.updatedAtMillis, deleted: false, sequence: 0, affected: [], data: data)
        let environment = EnvironmentName(request.environment) ?? environments.served
        await publish(in: environment) { snapshot in (snapshot, [event]) }
    }

    /// A change request as the API shows it.
    static func object(_ request: ChangeRequest) -> [String: JSONValue] {
        var object: [String: JSONValue] = [
            "id": .string(request.id), "state": .string(request.state.rawValue), "author": .string(request.author),
            "createdAt": .string(Timestamp(unixMillis: request.createdAtMillis).rfc3339), "environment": .string(request.environment),
            "action": .string(request.action), "required": .integer(Int64(request.required)),
            "approvals": .array(
                request.approvals.map { .object(["by": .string($0.by), "at": .string(Timestamp(unixMillis: $0.atMillis).rfc3339)]) }),
        ]
        if let locale = request.locale {
            object["locale"] = .string(locale)
        } else if let build = request.build {
            object["build"] = .string(build)
        } else {
            object["account"] = .string(request.account)
        }
        if let version = request.version { object["version"] = .integer(Int64(version)) }
        if let at = request.applyAtMillis { object["applyAt"] = .string(Timestamp(unixMillis: at).rfc3339) }
        if let reason = request.reason { object["reason"] = .string(reason) }
        return object
    }

    /// A change request as the API shows it, with `diff`: the tab-level changes from what its environment serves
    /// now to the version it would serve (none for a deletion).
    func objectWithDiff(_ request: ChangeRequest) async throws(StoreError) -> [String: JSONValue] {
        var object = Self.object(request)
        guard let version = request.version, let environment = EnvironmentName(request.environment) else { return object }
        guard let new = try await store.version(account: request.account, number: version) else { return object }
        let current = snapshot(for: environment).record(request.account)
        guard let diff = try? LayoutDiff(from: try current?.sourceTree(), to: try new.sourceTree()) else { return object }
        object["diff"] = diff.document(account: request.account, from: current?.version, to: version)
        return object
    }

    /// Stores `next` when `previous` is still what the store holds (409 otherwise), with its audit entry: when
    /// `replacing` is given, when the stored record is still exactly it, else when its state is still `previous`'s.
    func record(_ next: ChangeRequest, from previous: ChangeRequest, replacing: [UInt8]? = nil, action: String) async -> HTTPResponse {
        do throws(StoreError) {
            guard try await store(next, from: previous, replacing: replacing, action: action) else {
                return Problem(.changeRequestConflict, detail: "the change request changed meanwhile; read it again").response
            }
            return json(200, Self.object(next))
        } catch {
            return storeProblem(error)
        }
    }

    /// Stores `next` as ``record(_:from:replacing:action:)`` does and announces it; false when the store holds another
    /// state or record now.
    func store(_ next: ChangeRequest, from previous: ChangeRequest, replacing: [UInt8]?, action: String) async throws(StoreError) -> Bool {
        let stored = StoredChangeRequest(
            id: next.id, state: next.state.rawValue, record: next.json, createdAtMillis: next.createdAtMillis,
            finishedAtMillis: next.state.isFinal ? next.updatedAtMillis : nil)
        let audit =
            AuditContext.current?.entry(action: action, account: next.account, status: 200)
            ?? AuditEntry(
                at: clock.date, actor: "tabserver", tokenID: nil, address: "", method: "POST", path: "/v1/change-requests/\(next.id)/apply",
                action: action, account: next.account, environment: next.environment, version: next.version, status: 200)
        let written =
            if let replacing {
                try await store.update(changeRequest: stored, replacing: replacing, audit: audit, event: Self.event(next))
            } else {
                try await store.update(changeRequest: stored, expecting: previous.state.rawValue, audit: audit, event: Self.event(next))
            }
        if written { await announce(next) }
        return written
    }

    /// Applies an approved request once (a claim in the store keeps two replicas from both running it): its write
    /// runs with its preconditions against the environment as it is now; a 412 leaves it `failed`.
    func apply(_ request: ChangeRequest, by name: String) async -> HTTPResponse {
        do throws(StoreError) {
            guard try await store.claim(changeRequest: request.id, state: ChangeRequestState.approved.rawValue, by: replicaID) else {
                return Problem(.changeRequestConflict, detail: "the change request is being applied already").response
            }
        } catch {
            return storeProblem(error)
        }
        let command: HeldCommand
        do throws(HeldCommandError) {
            command = try request.command
        } catch {
            // Held by a newer build (a rolling upgrade on one store) or written by hand: never guessed, never run as
            // something else.
            return await record(
                request.finished(applied: false, reason: error.description, atMillis: clock.unixMillis), from: request,
                action: "change-request.failed")
        }
        let environment = EnvironmentName(request.environment) ?? environments.served
        // A layout's change without If-Match was sent with If-None-Match: * (create only); the others with none.
        let precondition: WritePrecondition =
            request.ifMatch.map { .ifMatch($0) } ?? (command.isLayoutChange ? .ifNoneMatchAny : .none)
        var order = ChangeOrder(
            command, account: request.account, environment: environment, precondition: precondition, author: request.author,
            options: WriteOptions())
        if let draft = command.draft {
            guard let stored = try? await store.version(account: request.account, number: draft) else {
                return await record(
                    request.finished(applied: false, reason: "its draft is gone", atMillis: clock.unixMillis), from: request,
                    action: "change-request.failed")
            }
            order = ChangeOrder(Self.upload(of: stored, order, message: "change request \(request.id)"))
        }
        let result = await perform(order)
        let applied = (200..<300).contains(result.status)
        let reason = applied ? nil : String(decoding: result.body, as: UTF8.self)
        let finished = request.finished(applied: applied, reason: reason.map { String($0.prefix(512)) }, atMillis: clock.unixMillis)
        let recorded = await record(finished, from: request, action: "change-request.\(finished.state.rawValue)")
        return applied ? recorded : result
    }

    /// Applies the approved requests whose `applyAt` has come (once across replicas, by the store's claim), after
    /// handing `count` the change requests per state as read (nothing when the store could not be read). Reads only
    /// the due requests (at most ``dueChangeRequestsPerRead``), the next `applyAt` and the counts, by indexes: no
    /// request that is not due is read or decoded.
    /// - Returns: the earliest `applyAt` (Unix milliseconds) of an approved request not due yet, or now when more were
    ///   due than one read takes; nil when none waits for its time (or the store could not be read).
    @discardableResult
    func applyDueChangeRequests(count: ([String: Int]) -> Void) async -> Int64? {
        let now = clock.unixMillis
        guard let read = try? await store.dueChangeRequests(atMillis: now, limit: Self.dueChangeRequestsPerRead) else { return nil }
        var counts = Dictionary(ChangeRequestState.allCases.map { ($0.rawValue, 0) }, uniquingKeysWith: +)
        for (state, number) in read.counts { counts[state, default: 0] += number }
        count(counts)
        // The store chose them by the record's own `applyAtMillis`; the decoded record has the last word all the same.
        var applied = 0
        for request in read.due.compactMap({ ChangeRequest(json: $0.record) }) where request.isDue(atMillis: now) {
            let answer = await apply(request, by: "tabserver")
            applied += 1
            logger.info("change request \(request.id) applied at its time: \(answer.status)")
        }
        // A full read may have left due ones behind: read again at once, as long as this one made progress.
        return read.due.count == Self.dueChangeRequestsPerRead && applied > 0 ? now : read.nextApplyAtMillis
    }

    /// The most due change requests one reading of the schedule applies; more are applied by the next, at once.
    static let dueChangeRequestsPerRead = 100
}
