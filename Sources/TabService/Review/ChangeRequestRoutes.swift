import Foundation
import MicroHTTPD
import TabAccess
import TabBuilds
import TabDelivery
import TabLayout
import TabReview
import TabStore

/// "Change requests and scheduled changes" (docs/change-requests.md): change requests listed, read, approved,
/// rejected, cancelled and applied. Holding a change for review, and its apply, are ``Changes``'s.
struct ChangeRequestRoutes: RouteCollection {
    let changes: Changes

    static let changeRequestAnswer = APIOperation.json(
        "The change request.", .object(required: ["id", "state", "author", "createdAt", "environment", "action", "approvals", "required"]))

    /// The `{id}` of a change request's paths: any text (one that names none is 404 once the store was asked).
    static let changeRequestID = RouteInput.path("id", String.self)

    static let routes: [Route<ChangeRequestRoutes>] = [
        Route(
            .get, "/v1/change-requests", .scoped(.read, .service), label: "change_requests",
            inputs: [
                .query("state", ChangeRequestState.self), .query("account", String.self), .query("limit", ChangeRequestPageSize.self),
                .query("after", String.self, description: "The id the previous page ended with."),
            ], touchesStore: true,
            APIOperation(
                "Change requests, oldest first (those the token may read).",
                responses: [
                    (200, APIOperation.json("The change requests.", .object(required: ["changeRequests"])))
                ], problems: [400, 503])
        ) { routes, _, match in routes.listChangeRequestsRoute(match) },
        Route(
            .get, "/v1/change-requests/{id}", .scoped(.read, .service), label: "change_request", inputs: [changeRequestID],
            touchesStore: true,
            APIOperation(
                "One change request.", responses: [(200, changeRequestAnswer)], problems: [404, 503])
        ) { routes, _, match in routes.changeRequestRoute(match, step: nil) },
        Route(
            .post, "/v1/change-requests/{id}/approve", .scoped(.approve, .service), label: "change_request_approve",
            inputs: [changeRequestID], touchesStore: true,
            APIOperation(
                "Approve (not its author; once per token name); `applyAt` schedules it.",
                body: .object(["applyAt": .string(format: "date-time")]), bodyRequired: false,
                responses: [
                    (200, changeRequestAnswer)
                ], problems: [403, 404, 409, 422, 503])
        ) { routes, request, match in routes.changeRequestRoute(match, step: .approve(body: request.body)) },
        Route(
            .post, "/v1/change-requests/{id}/reject", .scoped(.approve, .service), label: "change_request_reject",
            inputs: [changeRequestID], touchesStore: true,
            APIOperation(
                "Reject, with a reason.",
                body: .object(["reason": .string()]), bodyRequired: false,
                responses: [
                    (200, changeRequestAnswer)
                ], problems: [403, 404, 409, 503])
        ) { routes, request, match in routes.changeRequestRoute(match, step: .reject(body: request.body)) },
        Route(
            .post, "/v1/change-requests/{id}/cancel", .scoped(.write, .service), label: "change_request_cancel", inputs: [changeRequestID],
            touchesStore: true,
            APIOperation(
                "Cancel (its author or an admin).",
                responses: [
                    (200, changeRequestAnswer)
                ], problems: [403, 404, 409, 503])
        ) { routes, _, match in routes.changeRequestRoute(match, step: .cancel) },
        Route(
            .post, "/v1/change-requests/{id}/apply", .scoped(.write, .service), label: "change_request_apply", inputs: [changeRequestID],
            touchesStore: true,
            APIOperation(
                "Apply an approved request now, with its preconditions against the environment as it is (412 and failed when it moved).",
                responses: [
                    (200, changeRequestAnswer)
                ], problems: [403, 404, 409, 412, 422, 503])
        ) { routes, _, match in routes.changeRequestRoute(match, step: .apply) },
    ]

    /// A review step on one change request.
    enum ReviewStep: Sendable {
        case approve(body: [UInt8])
        case reject(body: [UInt8])
        case cancel
        case apply
    }

    /// `GET /v1/change-requests`: those the token may read, oldest first, by `?state=` and `?account=`.
    func listChangeRequestsRoute(_ match: RouteMatch) -> HTTPReply {
        let state = match.inputs.query("state", as: ChangeRequestState.self)
        let account = match.inputs.query("account", as: String.self)
        let limit = match.inputs.query("limit", as: ChangeRequestPageSize.self)?.value ?? 100
        let after = match.inputs.query("after", as: String.self)
        let grant = match.grant
        return .deferred {
            do throws(StoreError) {
                // Oldest first; `after` (an id a previous page ended with) continues after it.
                var stored = try await self.changes.store.changeRequests()
                if let after {
                    guard let index = stored.firstIndex(where: { $0.id == after }) else {
                        return Problem.badRequest("after names no change request ('\(after.prefix(64))')").response
                    }
                    stored.removeSubrange(...index)
                }
                let all = stored.compactMap { ChangeRequest(json: $0.record) }.filter {
                    (state == nil || $0.state == state) && (account == nil || $0.account == account)
                        && (grant?.mayRead(account: $0.ownAccount, environment: $0.environment) ?? true)
                }
                var listed: [JSONValue] = []
                for request in all.prefix(limit) { listed.append(.object(try await self.changes.objectWithDiff(request))) }
                return json(200, ["changeRequests": .array(listed)])
            } catch {
                return self.changes.storeProblem(error)
            }
        }
    }

    /// Reads the request, checks the token reaches its account and environment, then runs `step` (nil: read it).
    func changeRequestRoute(_ match: RouteMatch, step: ReviewStep?) -> HTTPReply {
        let id = match.inputs.path("id", as: String.self)
        let grant = match.grant
        return .deferred {
            let stored: StoredChangeRequest?
            do throws(StoreError) {
                stored = try await self.changes.store.changeRequest(id: id)
            } catch {
                return self.changes.storeProblem(error)
            }
            guard let stored, let request = ChangeRequest(json: stored.record) else {
                return Problem.noChangeRequest(id).response
            }
            let scope: Scope =
                switch step {
                case nil: .read
                case .approve, .reject: .approve
                case .cancel, .apply: request.build == nil ? .write : .deploy  // what the held change itself needs
                }
            if let grant,
                let refusal = grant.authorize(
                    AccessRequest(
                        scope: scope, target: request.accessTarget,
                        environment: request.environment))
            {
                guard grant.mayRead(account: request.ownAccount, environment: request.environment) else {
                    return Problem.noChangeRequest(id).response
                }
                return Problem.refused(refusal).response
            }
            guard let step else {
                do throws(StoreError) {
                    return json(200, try await self.changes.objectWithDiff(request))
                } catch {
                    return self.changes.storeProblem(error)
                }
            }
            return await self.review(stored, request, step: step, by: grant?.name ?? "", isAdmin: grant?.scopes.grant(.admin) ?? true)
        }
    }

    /// An approval, written over the very record it was computed from: when another approval (by another token, on
    /// any replica) was written meanwhile, the request is read again and the approval added to it, so that every
    /// approval counts. Audited as `change-request.approved` whether or not it is the last one needed.
    private func approve(_ first: StoredChangeRequest, body: [UInt8], by name: String) async -> HTTPResponse {
        var applyAt: Int64?
        if let text = Self.bodyString(body, "applyAt") {
            do throws(Problem) {
                applyAt = try ManagementInputs.applyAtMillis(ApplyAt(text, pointer: "/applyAt"), pointer: "/applyAt", clock: changes.clock)
            } catch {
                return error.response
            }
        }
        var stored = first
        for _ in 0..<16 {
            guard let request = ChangeRequest(json: stored.record) else { return Problem.noChangeRequest(stored.id).response }
            let next: ChangeRequest
            do throws(ReviewError) {
                next = try request.approved(by: name, atMillis: changes.clock.unixMillis, applyAtMillis: applyAt)
            } catch {
                return Problem(error.status == 403 ? .insufficientScope : .changeRequestConflict, detail: error.description).response
            }
            do throws(StoreError) {
                if try await changes.store(next, from: request, replacing: stored.record, action: "change-request.approved") {
                    return json(200, Changes.object(next))
                }
                guard let again = try await changes.store.changeRequest(id: stored.id) else {
                    return Problem.noChangeRequest(stored.id).response
                }
                stored = again
            } catch {
                return changes.storeProblem(error)
            }
        }
        return Problem(.changeRequestConflict, detail: "the change request keeps changing; approve it again").response
    }

    /// The longest `reason` a rejection keeps, in bytes.
    static let maximumReasonBytes = 2_048

    private func review(_ stored: StoredChangeRequest, _ request: ChangeRequest, step: ReviewStep, by name: String, isAdmin: Bool)
        async -> HTTPResponse
    {
        let now = changes.clock.unixMillis
        let next: ChangeRequest
        do throws(ReviewError) {
            switch step {
            case .approve(let body): return await approve(stored, body: body, by: name)
            case .reject(let body):
                let reason = Self.bodyString(body, "reason")
                if let reason, reason.utf8.count > Self.maximumReasonBytes {
                    return ManagementInputs.invalidField("/reason", "at most \(Self.maximumReasonBytes) bytes").response
                }
                next = try request.rejected(reason: reason, atMillis: now)
            case .cancel: next = try request.cancelled(by: name, isAdmin: isAdmin, atMillis: now)
            case .apply:
                try request.checkApplicable(atMillis: now)
                return await changes.apply(request, by: name)
            }
        } catch {
            return Problem(error.status == 403 ? .insufficientScope : .changeRequestConflict, detail: error.description).response
        }
        return await changes.record(next, from: request, action: "change-request.\(next.state.rawValue)")
    }

    /// A string member of a JSON object body (nil when absent, or the body is not an object).
    static func bodyString(_ body: [UInt8], _ name: String) -> String? {
        guard !body.isEmpty, let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else { return nil }
        return object[name] as? String
    }
}

extension ChangeRequest {
    /// The account it changes; nil for what belongs to none (a strings table, a build).
    var ownAccount: String? { locale == nil && build == nil ? account : nil }

    /// What a token must reach to review it: its account, every account (a strings table), or every account in every
    /// environment (a build, which every environment's answers depend on).
    var accessTarget: AccessRequest.Target {
        if build != nil { return .everything }
        return ownAccount.map(AccessRequest.Target.account) ?? .allAccounts
    }
}
