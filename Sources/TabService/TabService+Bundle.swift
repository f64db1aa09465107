import Foundation
import HeaderFields
import MicroHTTPD
import TabDelivery
import TabLayout
import TabPreview
import TabStore

extension TabService {
    /// `GET …/layout/versions/{version}/preview.svg?locale=&platform=&appVersion=&environment=`: a stored version (a
    /// draft too, which no client is served) drawn as `…/tabs/preview.svg` would draw it, resolved against the
    /// layouts of `environment` (default: where writes enter). What `read` may already fetch as source, drawn: the
    /// console shows a change request's tab bars, now and after, to its reviewers with it.
    func versionPreviewRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let environment: EnvironmentName
        switch managedEnvironment(request) {
        case .success(let chosen): environment = chosen
        case .failure(let problem): return .response(problem.response)
        }
        let locale = request.query("locale")
        let platform = request.query("platform").flatMap { Platform(rawValue: $0.lowercased()) }
        let appVersion = request.query("appVersion").flatMap { AppVersion($0) }
        let selected = request.query("selected")
        return withLayoutAddress(match) { account, number in
            .deferred {
                let record: StoredVersion?
                do throws(StoreError) {
                    record = try await self.store.version(account: account, number: number ?? 0)
                } catch {
                    return self.storeProblem(error)
                }
                guard let record, !record.deleted, let number else {
                    return Problem.notFound("account '\(account)' has no version \(number ?? 0) with tabs to draw").response
                }
                return Self.drawn(
                    in: self.snapshot(for: environment), locale: locale, platform: platform, appVersion: appVersion, selected: selected
                ) { snapshot in
                    let document = try LayoutSource.parse(record.source, format: sourceFormat(record.contentType))
                    return try snapshot.resolve(account, version: number, document: document, strict: false)
                }
            }
        }
    }

    /// `POST /v1/preview`: an unsaved source drawn as `…/tabs/preview.svg` would draw it, or 422.
    func previewSource(_ request: borrowing HTTPRequest) -> HTTPReply {
        guard let format = uploadFormat(request) else { return unsupportedMediaType() }
        let body = request.body
        let locale = request.query("locale")
        let platform = request.query("platform").flatMap { Platform(rawValue: $0.lowercased()) }
        let appVersion = request.query("appVersion").flatMap { AppVersion($0) }
        let selected = request.query("selected")
        return .deferred {
            Self.drawn(in: self.snapshot, locale: locale, platform: platform, appVersion: appVersion, selected: selected) { snapshot in
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

/// Milliseconds since 1970 by the wall clock.
func currentTimeMillisecond() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
}

#if canImport(Glibc)
    import Glibc
#endif
