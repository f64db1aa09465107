import Foundation
import HeaderFields
import MicroHTTPD
import TabDelivery
import TabLayout
import TabPreview
import TabStore

extension ManagementRoutes {
    /// `GET …/layout/versions/{version}/preview.svg?locale=&platform=&appVersion=&environment=`: a stored version (a
    /// draft too, which no client is served) drawn as `…/tabs/preview.svg` would draw it, resolved against the
    /// layouts of `environment` (default: where writes enter). What `read` may already fetch as source, drawn: the
    /// console shows a change request's tab bars, now and after, to its reviewers with it.
    func versionPreviewRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let environment = try ManagementInputs.environment(match, in: changes.environments)
        let account = ManagementInputs.account(match)
        let number = match.inputs.path("version", as: VersionNumber.self).value
        let target = DrawingTarget(match)
        let changes = self.changes
        return .deferred {
            let record: StoredVersion?
            do throws(StoreError) {
                record = try await changes.store.version(account: account, number: number)
            } catch {
                return changes.storeProblem(error)
            }
            guard let record, !record.deleted else {
                return Problem.notFound("account '\(account)' has no version \(number) with tabs to draw").response
            }
            return Self.drawn(in: changes.snapshot(for: environment), target) { snapshot in
                let document = try LayoutSource.parse(record.source, format: sourceFormat(record.contentType))
                return try snapshot.resolve(account, version: number, document: document, strict: false)
            }
        }
    }

    /// `POST /v1/preview`: an unsaved source drawn as `…/tabs/preview.svg` would draw it, or 422.
    func previewSource(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        guard let format = ManagementInputs.uploadFormat(request) else { throw ManagementInputs.unsupportedLayoutType }
        let body = request.body
        let target = DrawingTarget(match)
        let publisher = changes.publisher
        return .deferred {
            Self.drawn(in: publisher.snapshot, target) { snapshot in
                try snapshot.resolve("preview", version: nil, document: try LayoutSource.parse(body, format: format), strict: true)
            }
        }
    }

    /// What a drawing is made for (``ManagementRoutes/drawingTargets``), as the route's inputs give it.
    struct DrawingTarget: Sendable {
        let locale: String?
        let platform: Platform?
        let appVersion: AppVersion?
        let selected: String?
        let scheme: ColourScheme

        init(_ match: RouteMatch) {
            locale = match.inputs.query("locale", as: String.self)
            platform = match.inputs.query("platform", as: ClientPlatform.self)?.platform
            appVersion = match.inputs.query("appVersion", as: ClientAppVersion.self)?.version
            selected = match.inputs.query("selected", as: String.self)
            scheme = match.inputs.query("scheme", as: ColourScheme.self) ?? .light
        }
    }

    /// The layout `resolve` gives in `snapshot`, compiled for the locale (default: the layout's), platform and app
    /// version and drawn as SVG; 422 when it does not read or resolve.
    static func drawn(in snapshot: Snapshot, _ target: DrawingTarget, _ resolve: (Snapshot) throws -> ResolvedLayout) -> HTTPResponse {
        do {
            let resolved = try resolve(snapshot)
            let compiled = LayoutCompiler.compile(
                resolved,
                for: ClientContext(
                    locale: target.locale ?? resolved.defaultLocale, platform: target.platform, appVersion: target.appVersion),
                globalStrings: snapshot.globalStrings)
            let svg = try TabPreview.svg(compiled, selected: target.selected, scheme: target.scheme, platform: target.platform)
            return HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "image/svg+xml")], body: svg)
        } catch let error as LayoutError {
            return Problem.invalidLayout(error).response
        } catch {
            return Problem.badRequest("\(error)").response
        }
    }
}
