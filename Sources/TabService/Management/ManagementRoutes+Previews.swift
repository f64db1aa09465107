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
    func versionPreviewRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let environment: EnvironmentName
        switch ManagementInputs.environment(request, in: changes.environments) {
        case .success(let chosen): environment = chosen
        case .failure(let problem): return .response(problem.response)
        }
        let locale = request.query("locale")
        let platform = request.query("platform").flatMap { Platform(rawValue: $0.lowercased()) }
        let appVersion = request.query("appVersion").flatMap { AppVersion($0) }
        let selected = request.query("selected")
        let changes = self.changes
        return ManagementInputs.withLayoutAddress(match) { account, number in
            .deferred {
                let record: StoredVersion?
                do throws(StoreError) {
                    record = try await changes.store.version(account: account, number: number ?? 0)
                } catch {
                    return changes.storeProblem(error)
                }
                guard let record, !record.deleted, let number else {
                    return Problem.notFound("account '\(account)' has no version \(number ?? 0) with tabs to draw").response
                }
                return Self.drawn(
                    in: changes.publisher.snapshot(for: environment, served: changes.environments.served), locale: locale,
                    platform: platform, appVersion: appVersion, selected: selected
                ) { snapshot in
                    let document = try LayoutSource.parse(record.source, format: sourceFormat(record.contentType))
                    return try snapshot.resolve(account, version: number, document: document, strict: false)
                }
            }
        }
    }

    /// `POST /v1/preview`: an unsaved source drawn as `…/tabs/preview.svg` would draw it, or 422.
    func previewSource(_ request: borrowing HTTPRequest) -> HTTPReply {
        guard let format = ManagementInputs.uploadFormat(request) else { return .response(ManagementInputs.unsupportedLayoutType.response) }
        let body = request.body
        let locale = request.query("locale")
        let platform = request.query("platform").flatMap { Platform(rawValue: $0.lowercased()) }
        let appVersion = request.query("appVersion").flatMap { AppVersion($0) }
        let selected = request.query("selected")
        let publisher = changes.publisher
        return .deferred {
            Self.drawn(in: publisher.snapshot, locale: locale, platform: platform, appVersion: appVersion, selected: selected) { snapshot in
                try snapshot.resolve("preview", version: nil, document: try LayoutSource.parse(body, format: format), strict: true)
            }
        }
    }

    /// The layout `resolve` gives in `snapshot`, compiled for the locale (default: the layout's), platform and app
    /// version and drawn as SVG; 422 when it does not read or resolve.
    static func drawn(
        in snapshot: Snapshot, locale: String?, platform: Platform?, appVersion: AppVersion?, selected: String?,
        _ resolve: (Snapshot) throws -> ResolvedLayout
    ) -> HTTPResponse {
        do {
            let resolved = try resolve(snapshot)
            let compiled = LayoutCompiler.compile(
                resolved, for: ClientContext(locale: locale ?? resolved.defaultLocale, platform: platform, appVersion: appVersion),
                globalStrings: snapshot.globalStrings)
            let svg = try TabPreview.svg(compiled, selected: selected)
            return HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "image/svg+xml")], body: svg)
        } catch let error as LayoutError {
            return Problem.invalidLayout(error).response
        } catch {
            return Problem.badRequest("\(error)").response
        }
    }
}
