import MicroHTTPD

/// Every route the service answers. The table below is the one place a route is declared: dispatch, the
/// 404/405 answers with `Allow`, HEAD, the token check made before a body is read, the metrics label and the
/// OpenAPI coverage test all come from it.
enum Route: Int, CaseIterable, Sendable {
    case tabs, hierarchy, preview, bundle
    case layout, versions, version, versionDiff, restore, accounts, validate, previewSource, events, strings
    case healthz, readyz, metrics, openapi, consoleRedirect, console
    /// No route matched (404), or the request broke a limit before routing.
    case unknown
}

/// Who may call a route.
enum Access: Sendable {
    /// Anyone (mobile clients, probes).
    case open
    /// `Authorization: Bearer <admin token>`.
    case admin
}

/// One route: its path template (OpenAPI's syntax), the methods it answers (GET implies HEAD), who may call it,
/// its metrics label, and whether the handler reads a request body.
struct RouteDeclaration: Sendable {
    let route: Route
    let template: String
    let methods: [HTTPMethod]
    let access: Access
    let label: String
    /// Whether the methods that send a body (PUT, PATCH, POST) have it read; other requests' bodies are refused.
    let takesBody: Bool
    let segments: [Segment]

    enum Segment: Sendable, Equatable {
        case literal([UInt8])
        /// `{name}`: one non-empty path segment.
        case parameter(String)
        /// A trailing `/` (an empty last segment).
        case empty
    }

    init(_ route: Route, _ template: String, _ methods: [HTTPMethod], _ access: Access, label: String, takesBody: Bool = false) {
        self.route = route
        self.template = template
        self.methods = methods
        self.access = access
        self.label = label
        self.takesBody = takesBody
        segments = template.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { part in
            if part.isEmpty { return .empty }
            if part.hasPrefix("{") { return .parameter(String(part.dropFirst().dropLast())) }
            return .literal(Array(part.utf8))
        }
    }

    /// The value of `Allow`: the methods, HEAD after GET.
    var allow: String {
        methods.flatMap { $0 == .get ? ["GET", "HEAD"] : [$0.token] }.joined(separator: ", ")
    }

    func allows(_ method: HTTPMethod) -> Bool { methods.contains(method) || (method == .head && methods.contains(.get)) }
}

/// The routes, most frequent first (the read path tries them in this order).
enum RouteTable {
    static let all: [RouteDeclaration] = [
        RouteDeclaration(.tabs, "/v1/accounts/{account}/tabs", [.get], .open, label: "tabs"),
        RouteDeclaration(.hierarchy, "/v1/accounts/{account}/ApplicationHierarchy.plist", [.get], .open, label: "application_hierarchy"),
        RouteDeclaration(.preview, "/v1/accounts/{account}/tabs/preview.svg", [.get], .open, label: "preview"),
        RouteDeclaration(.bundle, "/v1/accounts/{account}/tabs/bundle", [.get], .open, label: "bundle"),
        RouteDeclaration(
            .layout, "/v1/accounts/{account}/layout", [.get, .put, .patch, .delete], .admin, label: "layout", takesBody: true),
        RouteDeclaration(.versions, "/v1/accounts/{account}/layout/versions", [.get], .admin, label: "layout_versions"),
        RouteDeclaration(.version, "/v1/accounts/{account}/layout/versions/{version}", [.get], .admin, label: "layout_version"),
        RouteDeclaration(.versionDiff, "/v1/accounts/{account}/layout/versions/{version}/diff", [.get], .admin, label: "layout_diff"),
        RouteDeclaration(.restore, "/v1/accounts/{account}/layout/versions/{version}/restore", [.post], .admin, label: "layout_restore"),
        RouteDeclaration(.accounts, "/v1/accounts", [.get], .admin, label: "accounts"),
        RouteDeclaration(.validate, "/v1/validate", [.post], .admin, label: "validate", takesBody: true),
        RouteDeclaration(.previewSource, "/v1/preview", [.post], .admin, label: "preview_source", takesBody: true),
        RouteDeclaration(.events, "/v1/events", [.get], .admin, label: "events"),
        RouteDeclaration(.strings, "/v1/strings/{locale}", [.get, .put], .admin, label: "strings", takesBody: true),
        RouteDeclaration(.healthz, "/healthz", [.get], .open, label: "healthz"),
        RouteDeclaration(.readyz, "/readyz", [.get], .open, label: "readyz"),
        RouteDeclaration(.metrics, "/metrics", [.get], .open, label: "metrics"),
        RouteDeclaration(.openapi, "/openapi.yaml", [.get], .open, label: "openapi"),
        RouteDeclaration(.consoleRedirect, "/console", [.get], .open, label: "console_redirect"),
        RouteDeclaration(.console, "/console/", [.get], .open, label: "console"),
        RouteDeclaration(.console, "/console/{file}", [.get], .open, label: "console"),
    ]

    /// The declaration of each route (the first, for a route with several templates).
    static let byRoute: [RouteDeclaration] = Route.allCases.map { route in
        all.first { $0.route == route } ?? RouteDeclaration(.unknown, "", [], .open, label: "unknown")
    }

    /// The route whose template `path` fits, and the values of its parameters (in template order).
    static func match(_ path: UnsafeBufferPointer<UInt8>) -> (RouteDeclaration, RouteParameters)? {
        guard path.first == UInt8(ascii: "/") else { return nil }
        for declaration in all {
            if let parameters = fit(declaration.segments, path) { return (declaration, parameters) }
        }
        return nil
    }

    private static func fit(_ segments: [RouteDeclaration.Segment], _ path: UnsafeBufferPointer<UInt8>) -> RouteParameters? {
        var parameters = RouteParameters()
        var start = 1  // after the leading "/"
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            guard start <= path.count else { return nil }
            var end = start
            while end < path.count, path[end] != UInt8(ascii: "/") { end += 1 }
            if isLast ? end != path.count : end == path.count { return nil }
            let piece = UnsafeBufferPointer(rebasing: path[start..<end])
            switch segment {
            case .literal(let bytes):
                guard piece.elementsEqual(bytes) else { return nil }
            case .empty:
                guard piece.isEmpty else { return nil }
            case .parameter:
                guard !piece.isEmpty else { return nil }
                let value = String(decoding: piece, as: UTF8.self)
                if parameters.name == nil { parameters.name = value } else { parameters.version = value }
            }
            start = end + 1
        }
        return parameters
    }
}

/// The values of a route's `{…}` parameters, as sent (percent-decoded by libmicrohttpd). No route has more
/// than two, so they are fields, not an array (no allocation on the read path).
struct RouteParameters: Sendable {
    /// `{account}`, `{locale}` or `{file}`: the first parameter.
    var name: String?
    /// `{version}`: the second parameter, when there is one.
    var version: String?
}
