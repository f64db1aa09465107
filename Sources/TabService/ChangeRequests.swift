import Foundation
import MicroHTTPD
import TabAccess
import TabBuilds
import TabDelivery
import TabLayout
import TabReview
import TabStore

/// What a write request chose besides its content: past the builds gate, past review, when to apply, and whether
/// it is a change request being applied (then it is not held again).
struct WriteOptions: Sendable {
    /// `?allowIncompatible=true` (a token that may `deploy` to the account).
    var allowIncompatible = false
    /// `?bypassApproval=true` (an `admin` token): applied at once in a protected environment, audited as a bypass.
    var bypassApproval = false
    /// `Apply-At`: when an approved change request is applied by the store's clock.
    var applyAtMillis: Int64?
    /// The write is an approved change request being applied.
    var applying = false
}

/// "Change requests and scheduled changes" (docs/change-requests.md): protected environments, review and apply.
extension TabService {
    /// The options of a write request; 403 for an option the token may not use, 422 for an `Apply-At` that is not
    /// RFC 3339, in the past or more than a year ahead.
    func writeOptions(_ request: borrowing HTTPRequest, _ match: RouteMatch, environment: EnvironmentName) -> Result<
        WriteOptions, ProblemError
    > {
        var options = WriteOptions()
        if request.query("allowIncompatible") == "true" {
            if let grant = match.grant,
                let refusal = grant.authorize(
                    AccessRequest(scope: .deploy, target: .account(match["account"]), environment: environment.text))
            {
                return .failure(ProblemError(Problem(.insufficientScope, detail: "allowIncompatible needs \(refusal.clientDescription)")))
            }
            options.allowIncompatible = true
        }
        if request.query("bypassApproval") == "true" {
            if let grant = match.grant, !grant.scopes.grant(.admin) {
                return .failure(ProblemError(Problem(.insufficientScope, detail: "bypassApproval needs an admin token")))
            }
            options.bypassApproval = true
        }
        if let text = request.header("Apply-At") {
            switch Self.applyAt(text, pointer: "/Apply-At") {
            case .success(let millis): options.applyAtMillis = millis
            case .failure(let problem): return .failure(problem)
            }
        }
        return .success(options)
    }

    /// An `Apply-At` or `applyAt`: RFC 3339, not in the past, at most a year ahead (422 at `pointer` otherwise).
    static func applyAt(_ text: String, pointer: String) -> Result<Int64, ProblemError> {
        let now = currentTimeMillis()
        guard let at = Timestamp.parseRFC3339(text) else {
            return .failure(
                ProblemError(Self.invalidField(pointer, "an RFC 3339 time such as 2026-12-01T09:00:00Z, not '\(text.prefix(64))'")))
        }
        guard at.unixMillis >= now - 1_000 else { return .failure(ProblemError(Self.invalidField(pointer, "in the past"))) }
        guard at.unixMillis <= now + 366 * 86_400_000 else {
            return .failure(ProblemError(Self.invalidField(pointer, "more than a year ahead")))
        }
        return .success(at.unixMillis)
    }

    static func invalidField(_ pointer: String, _ message: String) -> Problem {
        Problem(.invalidFields, detail: "\(pointer): \(message)", errors: [FieldError(pointer: pointer, line: nil, message: message)])
    }

    /// The approvals a change to `environment` waits for; nil when it goes through at once.
    func reviewRequired(in environment: EnvironmentName, _ options: WriteOptions) -> Int? {
        options.bypassApproval ? nil : configuration.approvals.approvals(for: environment.text)
    }

    /// A publishing write to a protected environment: its content stored as a draft (its precondition checked now
    /// against the environment), and a change request that applies it once approved. 202.
    func holdForReview(_ upload: LayoutUpload, required: Int, misses: [BuildMiss]) async -> HTTPResponse {
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
        let action = upload.restoredFrom != nil ? "layout.restore" : "layout.\(AuditContext.current?.method.lowercased() ?? "put")"
        return await holdForReview(
            action: action, account: upload.account, environment: upload.environment, version: record.version,
            precondition: upload.precondition, author: upload.author, required: required, applyAt: upload.options.applyAtMillis,
            misses: misses)
    }

    /// Stores a change request for `action` and answers 202 with it (`Location: /v1/change-requests/{id}`); `body`
    /// is the request's own, replayed when it is applied (a promotion, a rollout's plan or raise).
    func holdForReview(
        action: String, account: String, environment: EnvironmentName, version: Int?, precondition: WritePrecondition, author: String,
        required: Int, applyAt: Int64?, misses: [BuildMiss], body: [UInt8]? = nil, strings: (locale: String, contentType: String)? = nil
    ) async -> HTTPResponse {
        var ifMatch: [String]?
        if case .ifMatch(let tags) = precondition { ifMatch = tags }
        let request = ChangeRequest(
            id: ChangeRequest.newID(), author: author, createdAtMillis: currentTimeMillis(), environment: environment.text,
            account: account, action: action, version: version, ifMatch: ifMatch, required: required, applyAtMillis: applyAt,
            body: body.map { String(decoding: $0, as: UTF8.self) }, locale: strings?.locale, contentType: strings?.contentType)
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
        let environment = EnvironmentName(request.environment) ?? environmentList.served
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
        if let locale = request.locale { object["locale"] = .string(locale) } else { object["account"] = .string(request.account) }
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
        guard let diff = try? LayoutDiff(from: try current.flatMap(Self.tree), to: try Self.tree(new)) else { return object }
        object["diff"] = diff.document(account: request.account, from: current?.version, to: version)
        return object
    }

    // MARK: Routes

    static let changeRequestAnswer = """
        description: The change request.
        content:
          application/json: {schema: {type: object, required: [id, state, author, createdAt, environment, action, approvals, required]}}
        """

    static let changeRequestRoutes: [Route<TabService>] = [
        Route(
            .get, "/v1/change-requests", .scoped(.read, .service), label: "change_requests",
            APIOperation(
                "Change requests, oldest first (those the token may read).",
                parameters: [
                    "{name: state, in: query, schema: {type: string, enum: [open, approved, applied, rejected, cancelled, failed]}}",
                    "{name: account, in: query, schema: {type: string}}", "{name: limit, in: query, schema: {type: integer, minimum: 1}}",
                    "{name: after, in: query, description: 'The id the previous page ended with.', schema: {type: string}}",
                ],
                responses: [
                    (
                        200,
                        """
                        description: The change requests.
                        content:
                          application/json: {schema: {type: object, required: [changeRequests]}}
                        """
                    ), (400, APIOperation.problem), (503, APIOperation.problem),
                ])
        ) { service, request, match in service.listChangeRequestsRoute(request, match) },
        Route(
            .get, "/v1/change-requests/{id}", .scoped(.read, .service), label: "change_request",
            APIOperation(
                "One change request.", responses: [(200, changeRequestAnswer), (404, APIOperation.problem), (503, APIOperation.problem)])
        ) { service, _, match in service.changeRequestRoute(match, step: nil) },
        Route(
            .post, "/v1/change-requests/{id}/approve", .scoped(.approve, .service), label: "change_request_approve",
            APIOperation(
                "Approve (not its author; once per token name); `applyAt` schedules it.",
                requestBody: """
                    required: false
                    content:
                      application/json:
                        schema: {type: object, properties: {applyAt: {type: string, format: date-time}}}
                    """,
                responses: [
                    (200, changeRequestAnswer), (403, APIOperation.problem), (404, APIOperation.problem), (409, APIOperation.problem),
                    (422, APIOperation.problem), (503, APIOperation.problem),
                ])
        ) { service, request, match in service.changeRequestRoute(match, step: .approve(body: request.body)) },
        Route(
            .post, "/v1/change-requests/{id}/reject", .scoped(.approve, .service), label: "change_request_reject",
            APIOperation(
                "Reject, with a reason.",
                requestBody: """
                    required: false
                    content:
                      application/json:
                        schema: {type: object, properties: {reason: {type: string}}}
                    """,
                responses: [
                    (200, changeRequestAnswer), (403, APIOperation.problem), (404, APIOperation.problem), (409, APIOperation.problem),
                    (503, APIOperation.problem),
                ])
        ) { service, request, match in service.changeRequestRoute(match, step: .reject(body: request.body)) },
        Route(
            .post, "/v1/change-requests/{id}/cancel", .scoped(.write, .service), label: "change_request_cancel",
            APIOperation(
                "Cancel (its author or an admin).",
                responses: [
                    (200, changeRequestAnswer), (403, APIOperation.problem), (404, APIOperation.problem), (409, APIOperation.problem),
                    (503, APIOperation.problem),
                ])
        ) { service, _, match in service.changeRequestRoute(match, step: .cancel) },
        Route(
            .post, "/v1/change-requests/{id}/apply", .scoped(.write, .service), label: "change_request_apply",
            APIOperation(
                "Apply an approved request now, with its preconditions against the environment as it is (412 and failed when it moved).",
                responses: [
                    (200, changeRequestAnswer), (403, APIOperation.problem), (404, APIOperation.problem), (409, APIOperation.problem),
                    (412, APIOperation.problem), (422, APIOperation.problem), (503, APIOperation.problem),
                ])
        ) { service, _, match in service.changeRequestRoute(match, step: .apply) },
    ]

    /// A review step on one change request.
    enum ReviewStep: Sendable {
        case approve(body: [UInt8])
        case reject(body: [UInt8])
        case cancel
        case apply
    }

    func listChangeRequestsRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let state = request.query("state")
        if let state, ChangeRequestState(rawValue: state) == nil {
            return .response(
                Problem.badRequest("state is one of \(ChangeRequestState.allCases.map(\.rawValue).joined(separator: ", "))").response)
        }
        let account = request.query("account")
        let limit = request.query("limit").flatMap { Int($0) }.map { min(max($0, 1), 500) } ?? 100
        let after = request.query("after")
        let grant = match.grant
        return .deferred {
            do throws(StoreError) {
                // Oldest first; `after` (an id a previous page ended with) continues after it.
                var stored = try await self.store.changeRequests()
                if let after {
                    guard let index = stored.firstIndex(where: { $0.id == after }) else {
                        return Problem.badRequest("after names no change request ('\(after.prefix(64))')").response
                    }
                    stored.removeSubrange(...index)
                }
                let all = stored.compactMap { ChangeRequest(json: $0.record) }.filter {
                    (state == nil || $0.state.rawValue == state) && (account == nil || $0.account == account)
                        && (grant?.mayRead(account: $0.locale == nil ? $0.account : nil, environment: $0.environment) ?? true)
                }
                var listed: [JSONValue] = []
                for request in all.prefix(limit) { listed.append(.object(try await self.objectWithDiff(request))) }
                return json(200, ["changeRequests": .array(listed)])
            } catch {
                return self.storeProblem(error)
            }
        }
    }

    /// Reads the request, checks the token reaches its account and environment, then runs `step` (nil: read it).
    func changeRequestRoute(_ match: RouteMatch, step: ReviewStep?) -> HTTPReply {
        let id = match["id"]
        let grant = match.grant
        return .deferred {
            let stored: StoredChangeRequest?
            do throws(StoreError) {
                stored = try await self.store.changeRequests().first { $0.id == id }
            } catch {
                return self.storeProblem(error)
            }
            guard let stored, let request = ChangeRequest(json: stored.record) else {
                return Problem.notFound("there is no change request \(id.prefix(64))").response
            }
            let scope: Scope =
                switch step {
                case nil: .read
                case .approve, .reject: .approve
                case .cancel, .apply: .write
                }
            if let grant,
                let refusal = grant.authorize(
                    AccessRequest(
                        scope: scope, target: request.locale == nil ? .account(request.account) : .allAccounts,
                        environment: request.environment))
            {
                guard grant.mayRead(account: request.locale == nil ? request.account : nil, environment: request.environment) else {
                    return Problem.notFound("there is no change request \(id.prefix(64))").response
                }
                return Self.refusalResponse(refusal)
            }
            guard let step else {
                do throws(StoreError) {
                    return json(200, try await self.objectWithDiff(request))
                } catch {
                    return self.storeProblem(error)
                }
            }
            return await self.review(request, step: step, by: grant?.name ?? "", isAdmin: grant?.scopes.grant(.admin) ?? true)
        }
    }

    private func review(_ request: ChangeRequest, step: ReviewStep, by name: String, isAdmin: Bool) async -> HTTPResponse {
        let now = currentTimeMillis()
        let next: ChangeRequest
        do throws(ReviewError) {
            switch step {
            case .approve(let body):
                var applyAt: Int64?
                if let text = Self.bodyString(body, "applyAt") {
                    switch Self.applyAt(text, pointer: "/applyAt") {
                    case .success(let millis): applyAt = millis
                    case .failure(let problem): return problem.problem.response
                    }
                }
                next = try request.approved(by: name, atMillis: now, applyAtMillis: applyAt)
            case .reject(let body): next = try request.rejected(reason: Self.bodyString(body, "reason"), atMillis: now)
            case .cancel: next = try request.cancelled(by: name, isAdmin: isAdmin, atMillis: now)
            case .apply:
                guard request.state == .approved else { throw .notApproved(request.state) }
                return await apply(request, by: name)
            }
        } catch {
            return Problem(error.status == 403 ? .insufficientScope : .changeRequestConflict, detail: error.description).response
        }
        return await record(next, from: request, action: "change-request.\(next.state.rawValue)")
    }

    /// Stores `next` when `previous` is still what the store holds (409 otherwise), with its audit entry.
    private func record(_ next: ChangeRequest, from previous: ChangeRequest, action: String) async -> HTTPResponse {
        do throws(StoreError) {
            let stored = StoredChangeRequest(
                id: next.id, state: next.state.rawValue, record: next.json, createdAtMillis: next.createdAtMillis)
            guard
                try await store.update(
                    changeRequest: stored, expecting: previous.state.rawValue,
                    audit: AuditContext.current?.entry(action: action, account: next.account, status: 200)
                        ?? AuditEntry(
                            at: Date(), actor: "tabserver", tokenID: nil, address: "", method: "POST",
                            path: "/v1/change-requests/\(next.id)/apply", action: action, account: next.account,
                            environment: next.environment, version: next.version, status: 200),
                    event: Self.event(next))
            else { return Problem(.changeRequestConflict, detail: "the change request changed meanwhile; read it again").response }
            await announce(next)
            return json(200, Self.object(next))
        } catch {
            return storeProblem(error)
        }
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
        let environment = EnvironmentName(request.environment) ?? environmentList.served
        let precondition: WritePrecondition = request.ifMatch.map { .ifMatch($0) } ?? .ifNoneMatchAny
        var options = WriteOptions()
        options.applying = true
        let result: HTTPResponse
        let body = Array((request.body ?? "").utf8)
        switch request.action {
        case "layout.delete":
            result = await deleteLayout(
                account: request.account, precondition: precondition, author: request.author, environment: environment, options: options)
        case "layout.promote":
            do throws(RolloutError) {
                let promotion = try PromotionRequest.decode(body, environments: environmentList, now: Self.now)
                result = await promote(
                    account: request.account, promotion, precondition: request.ifMatch.map { .ifMatch($0) } ?? .none,
                    author: request.author, options: options)
            } catch {
                result = Problem.rollout(error).response
            }
        case "rollout.start":
            do throws(RolloutError) {
                let plan = try RolloutPlan.decode(body, now: Self.now)
                result = await startRollout(
                    account: request.account, environment: environment, plan, precondition: request.ifMatch.map { .ifMatch($0) } ?? .none,
                    author: request.author, options: options)
            } catch {
                result = Problem.rollout(error).response
            }
        case "strings.promote":
            do throws(RolloutError) {
                let promotion = try PromotionRequest.decode(body, environments: environmentList, allowsRollout: false, now: Self.now)
                result = await promoteStrings(
                    locale: request.locale ?? "", promotion, precondition: request.ifMatch.map { .ifMatch($0) } ?? .none,
                    author: request.author)
            } catch {
                result = Problem.rollout(error).response
            }
        case "strings.put":
            result = await writeStrings(
                locale: request.locale ?? "", environment: environment, body: body, contentType: request.contentType ?? "text/plain",
                precondition: request.ifMatch.map { .ifMatch($0) } ?? .none, author: request.author)
        case "rollout.patch", "rollout.complete":
            do throws(RolloutError) {
                let change = try Self.rolloutChange(request.action, body: body)
                result = await changeRollout(
                    account: request.account, environment: environment, action: request.action, author: request.author, change)
            } catch {
                result = Problem.rollout(error).response
            }
        default:
            guard let version = request.version, let draft = try? await store.version(account: request.account, number: version) else {
                return await record(
                    request.finished(applied: false, reason: "its draft is gone", atMillis: currentTimeMillis()), from: request,
                    action: "change-request.failed")
            }
            var upload = LayoutUpload(
                account: request.account, body: draft.source, contentType: draft.contentType,
                format: sourceFormat(draft.contentType) ?? .json, precondition: precondition, author: request.author,
                message: "change request \(request.id)", dryRun: false, restoredFrom: nil, environment: environment)
            upload.options = options
            result = await write(upload)
        }
        let applied = (200..<300).contains(result.status)
        let reason = applied ? nil : String(decoding: result.body, as: UTF8.self)
        let finished = request.finished(applied: applied, reason: reason.map { String($0.prefix(512)) }, atMillis: currentTimeMillis())
        let recorded = await record(finished, from: request, action: "change-request.\(finished.state.rawValue)")
        return applied ? recorded : result
    }

    /// Every second: approved requests whose `applyAt` has come are applied, once across replicas.
    func applyScheduledChangeRequests() {
        guard !configuration.approvals.required.isEmpty else { return }
        Task { [weak self] in
            while true {
                try? await Task.sleep(for: .seconds(1))
                guard let self, !self.stopping.load(ordering: .relaxed) else { return }
                let now = currentTimeMillis()
                guard let due = try? await self.store.changeRequests().compactMap({ ChangeRequest(json: $0.record) }) else { continue }
                self.changeRequestCounts.withLock { counts in
                    counts = Dictionary(ChangeRequestState.allCases.map { ($0.rawValue, 0) }, uniquingKeysWith: +)
                    for request in due { counts[request.state.rawValue, default: 0] += 1 }
                }
                for request in due where request.isDue(atMillis: now) {
                    let answer = await self.apply(request, by: "tabserver")
                    self.logger.info("change request \(request.id) applied at its time: \(answer.status)")
                }
            }
        }
    }

    /// `tabserver_change_requests{state}`: requests per state, as the clock last read them (each second).
    var changeRequestGauges: String {
        let counts = changeRequestCounts.withLock { $0 }
        guard !counts.isEmpty else { return "" }
        var text = "# HELP tabserver_change_requests Change requests by state (read by the schedule's clock each second).\n"
        text += "# TYPE tabserver_change_requests gauge\n"
        for (state, count) in counts.sorted(by: { $0.key < $1.key }) { text += "tabserver_change_requests{state=\"\(state)\"} \(count)\n" }
        return text
    }

    /// A string member of a JSON object body (nil when absent, or the body is not an object).
    static func bodyString(_ body: [UInt8], _ name: String) -> String? {
        guard !body.isEmpty, let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else { return nil }
        return object[name] as? String
    }
}
