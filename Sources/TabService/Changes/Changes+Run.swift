import MicroHTTPD
import TabBuilds
import TabDelivery
import TabLayout
import TabReview
import TabStore

/// A change a write request asks for: the command (a layout's new content until it is held as a draft) and where, by
/// whom, with which choices. Each handler builds one and hands it to ``Changes/run(_:)``.
struct ChangeOrder: Sendable {
    /// What changes.
    enum Change: Sendable {
        /// A layout's new content: held as a draft version (``HeldCommand/layoutWrite(_:draft:)`` or
        /// ``HeldCommand/layoutRestore(draft:)``), written at once otherwise.
        case layout(Changes.LayoutUpload)
        /// Any other change that can be held, as it is held.
        case command(HeldCommand)
    }

    var change: Change
    var account: String
    var environment: EnvironmentName
    var precondition: WritePrecondition
    var author: String
    var options: WriteOptions
    /// The request's body as sent, when the command's text may not be byte for byte it (a strings table in UTF-16 is
    /// written as sent when it is not held).
    var sentBody: [UInt8]?
}

// In an extension, so that the struct keeps its memberwise initializer, which both of these call.
extension ChangeOrder {
    /// A layout write (its account, environment, precondition, author and options are the upload's).
    init(_ upload: Changes.LayoutUpload) {
        self.init(
            change: .layout(upload), account: upload.account, environment: upload.environment, precondition: upload.precondition,
            author: upload.author, options: upload.options)
    }

    /// Any other change (`account` empty for a strings table or a build).
    init(
        _ command: HeldCommand, account: String, environment: EnvironmentName, precondition: WritePrecondition, author: String,
        options: WriteOptions
    ) {
        self.init(
            change: .command(command), account: account, environment: environment, precondition: precondition, author: author,
            options: options)
    }
}

/// The one place a change is held or run (docs/change-requests.md): ``run(_:)`` alone decides whether a request's
/// change waits for review; ``perform(_:)`` runs a change (a request's that is not held, or a change request's at its
/// apply) and never holds it.
extension Changes {
    /// Holds `order` as a change request (202) when its environment is protected and it does not bypass review;
    /// runs it at once otherwise.
    func run(_ order: ChangeOrder) async -> HTTPResponse {
        guard let review = review(of: order) else {
            if let refused = await requestGate(order) { return refused }
            return await perform(order)
        }
        return await hold(order, in: review.environment, required: review.required)
    }

    /// The builds gate a request's change that is not held passes before it runs, beyond the one its command runs: a
    /// rollout's raise or completion is refused (422) unless every live build opens its candidate (builds declared
    /// since the rollout started). A change request's apply does not run it.
    private func requestGate(_ order: ChangeOrder) async -> HTTPResponse? {
        guard case .command(.rolloutChange) = order.change, !order.options.allowIncompatible,
            let candidate = snapshot(for: order.environment).contents.rollouts[order.account]?.rollout.candidateVersion
        else { return nil }
        return await gate(account: order.account, version: candidate, in: order.environment)
    }

    /// The environment whose approvals `order` waits for, and how many; nil when it goes through at once (not
    /// protected, bypassed, a draft that does not publish, a change to the builds that changes no answer).
    private func review(of order: ChangeOrder) -> (environment: EnvironmentName, required: Int)? {
        let environment: EnvironmentName
        switch order.change {
        case .layout(let upload):
            guard upload.publish else { return nil }
            environment = upload.environment
        case .command(.buildDeclare(let build, let body)):
            guard let declared = try? declaredBuild(build, body: body, by: order.author), declarationChangesAnswers(declared) else {
                return nil
            }
            return buildReview(order.options)
        case .command(.buildRetire(let build)):
            guard let id = try? Self.buildID(build), retirementChangesAnswers(id) else { return nil }
            return buildReview(order.options)
        case .command:
            environment = order.environment
        }
        return reviewRequired(in: environment, order.options).map { (environment, $0) }
    }

    /// Holds `order` for `required` approvals in `environment`: what can be checked now is (a layout compiles, a
    /// precondition holds against what the environment serves), the live builds it would fail are named, then the
    /// change request is stored. 202.
    private func hold(_ order: ChangeOrder, in environment: EnvironmentName, required: Int) async -> HTTPResponse {
        let command: HeldCommand
        switch order.change {
        case .layout(let upload):
            return await holdLayout(upload, required: required)
        case .command(let held):
            command = held
        }
        var version: Int?
        var misses: [BuildMiss] = []
        do throws(StoreError) {
            switch command {
            case .layoutWrite, .layoutRestore:
                // A draft stored already: held as it is.
                break
            case .layoutDelete:
                if let refused = deleteRefusal(account: order.account, precondition: order.precondition, in: environment) { return refused }
            case .rolloutStart(let body):
                version = (try? RolloutPlan.decode(Array(body.utf8), now: clock.now))?.version
                misses = try await gateMisses(account: order.account, version: version, in: environment)
            case .promotion(let body):
                let promotion = try? PromotionRequest.decode(Array(body.utf8), environments: environments, now: clock.now)
                version = promotion.flatMap { snapshot(for: $0.from).record(order.account).flatMap { $0.deleted ? nil : $0.version } }
                misses = try await gateMisses(account: order.account, version: version, in: environment)
            case .rolloutChange:
                version = snapshot(for: environment).contents.rollouts[order.account]?.rollout.candidateVersion
                misses = try await gateMisses(account: order.account, version: version, in: environment)
            case .stringsWrite(let locale, _, let body):
                do throws(LayoutError) {
                    _ = try StringsTable.read(order.sentBody ?? Array(body.utf8))
                } catch {
                    return Problem.invalidLayout(error).response
                }
                try order.precondition.checkWrite(current: snapshot(for: environment).stringsRecords[locale]?.etag)
            case .stringsPromotion(let locale, _):
                try order.precondition.checkWrite(current: snapshot(for: environment).stringsRecords[locale]?.etag)
            case .buildDeclare, .buildRetire:
                break
            }
        } catch {
            return storeProblem(error)
        }
        return await holdForReview(
            command, account: order.account, environment: environment, version: version, precondition: order.precondition,
            author: order.author, required: required, applyAt: order.options.applyAtMillis, misses: misses)
    }

    /// Runs `order` now, never holding it: a request's change that is not held, or a change request's at its apply.
    func perform(_ order: ChangeOrder) async -> HTTPResponse {
        let command: HeldCommand
        switch order.change {
        case .layout(let upload):
            return await write(upload)
        case .command(let held):
            command = held
        }
        let (account, environment, precondition, author) = (order.account, order.environment, order.precondition, order.author)
        do throws(RolloutError) {
            switch command {
            case .layoutWrite(_, let draft), .layoutRestore(let draft):
                return await writeDraft(draft, order, message: "draft \(draft)")
            case .layoutDelete:
                return await deleteLayout(
                    account: account, precondition: precondition, author: author, environment: environment, options: order.options)
            case .promotion(let body):
                let promotion = try PromotionRequest.decode(Array(body.utf8), environments: environments, now: clock.now)
                return await promote(account: account, promotion, precondition: precondition, author: author, options: order.options)
            case .rolloutStart(let body):
                let plan = try RolloutPlan.decode(Array(body.utf8), now: clock.now)
                return await startRollout(
                    account: account, environment: environment, plan, precondition: precondition, author: author, options: order.options)
            case .rolloutChange(_, let body):
                let change = try rolloutChange(command.action, body: Array(body.utf8))
                return await changeRollout(account: account, environment: environment, action: command.action, author: author, change)
            case .stringsWrite(let locale, let contentType, let body):
                return await writeStrings(
                    locale: locale, environment: environment, body: order.sentBody ?? Array(body.utf8), contentType: contentType,
                    precondition: precondition,
                    author: author)
            case .stringsPromotion(let locale, let body):
                let promotion = try PromotionRequest.decode(
                    Array(body.utf8), environments: environments, allowsRollout: false, now: clock.now)
                return await promoteStrings(locale: locale, promotion, precondition: precondition, author: author)
            case .buildDeclare(let build, let body):
                do throws(BuildError) {
                    return await declare(try declaredBuild(build, body: body, by: author))
                } catch {
                    return BuildRoutes.buildProblem(error).response
                }
            case .buildRetire(let build):
                do throws(BuildError) {
                    return await retire(try Self.buildID(build))
                } catch {
                    return BuildRoutes.buildProblem(error).response
                }
            }
        } catch {
            return Problem.rollout(error).response
        }
    }

    /// Writes the stored draft `draft` of the order's account as a new version in its environment (404 when the
    /// draft is gone).
    func writeDraft(_ draft: Int, _ order: ChangeOrder, message: String) async -> HTTPResponse {
        let stored: StoredVersion?
        do throws(StoreError) {
            stored = try await store.version(account: order.account, number: draft)
        } catch {
            return storeProblem(error)
        }
        guard let stored else { return Problem.noVersion(order.account, draft).response }
        return await write(Self.upload(of: stored, order, message: message))
    }

    /// The upload that writes the content of `draft` as the order says.
    static func upload(of draft: StoredVersion, _ order: ChangeOrder, message: String) -> LayoutUpload {
        var upload = LayoutUpload(
            account: order.account, body: draft.source, contentType: draft.contentType, format: sourceFormat(draft.contentType) ?? .json,
            precondition: order.precondition, author: order.author, message: message, dryRun: false, restoredFrom: nil,
            environment: order.environment)
        upload.options = order.options
        return upload
    }

    /// The build a command names, `{platform}/{appVersion}`.
    /// - Throws: ``BuildError`` for a platform or version that is not one.
    static func buildID(_ build: String) throws(BuildError) -> BuildID {
        let parts = build.split(separator: "/", maxSplits: 1).map(String.init)
        return try BuildID(platform: parts.first ?? "", appVersion: parts.count == 2 ? parts[1] : "")
    }

    /// The build a declaration declares, dated now, by `author`.
    /// - Throws: ``BuildError`` for a build or body that does not read.
    func declaredBuild(_ build: String, body: String, by author: String) throws(BuildError) -> Build {
        let id = try Self.buildID(build)
        let spec = try BuildSpec.decode(Array(body.utf8))
        return Build(
            id: id, viewControllers: spec.viewControllers, images: spec.images, note: spec.note, declaredAtMillis: clock.unixMillis,
            declaredBy: author)
    }
}
