import MicroHTTPD

/// The routes' endpoints, grouped by path template in the order given (the read path's templates first: they are tried
/// in order). Built once from ``TabService/routeSections`` (or a ``Router``'s collections); checked at build time so that
/// a template's routes agree on whether a token is needed (each declares its own scope) and no method is declared twice.
struct RouteTable: Sendable {
    /// One path template and the routes on it.
    struct Template: Sendable {
        let template: String
        let segments: [Segment]
        let parameterNames: [String]
        /// Whether anyone may call its routes (else a valid token is needed before its methods are disclosed).
        let isOpen: Bool
        /// Index into ``RouteTable/routes`` (and a ``Router``'s handlers) by method (HEAD is GET's).
        let routes: [(method: HTTPMethod, index: Int)]
        /// The value of `Allow`: the methods, HEAD after GET.
        let allow: String
        let label: String
        /// The metrics slot of its label (``RouteTable/labels``).
        let slot: Int
    }

    enum Segment: Sendable, Equatable {
        case literal([UInt8])
        /// `{name}`: one non-empty path segment.
        case parameter(String)
        /// A trailing `/` (an empty last segment).
        case empty
    }

    /// Every route's endpoint, in the order given.
    let routes: [Endpoint]
    let templates: [Template]
    /// Metrics labels, each once: index 0 is `unknown` (no route matched, or a limit was broken before routing),
    /// then the templates' labels in order.
    let labels: [String]

    init(_ routes: [Endpoint]) {
        self.routes = routes
        var order: [String] = []
        var byTemplate: [String: [Int]] = [:]
        for (index, route) in routes.enumerated() {
            if byTemplate[route.template] == nil { order.append(route.template) }
            byTemplate[route.template, default: []].append(index)
        }
        var labels = ["unknown"]
        for template in order {
            let label = routes[byTemplate[template]![0]].label
            if !labels.contains(label) { labels.append(label) }
        }
        self.labels = labels
        templates = order.map { template in
            let indices = byTemplate[template]!  // every template in `order` has at least its first route
            let first = routes[indices[0]]
            let methods = indices.map { routes[$0].method }
            precondition(Set(methods.map(\.token)).count == methods.count, "\(template): a method is declared twice")
            precondition(
                indices.allSatisfy { routes[$0].access.isOpen == first.access.isOpen }, "\(template): open and scoped routes mixed")
            precondition(indices.allSatisfy { routes[$0].label == first.label }, "\(template): routes disagree on their label")
            let segments = Self.segments(template)
            let parameterNames = segments.compactMap { if case .parameter(let name) = $0 { name } else { nil } }
            for index in indices {
                let paths = routes[index].inputs.filter { $0.location == .path }.map(\.name)
                precondition(paths.allSatisfy(parameterNames.contains), "\(template): a path input names no {parameter}")
            }
            return Template(
                template: template, segments: segments,
                parameterNames: parameterNames,
                isOpen: first.access.isOpen, routes: indices.map { (routes[$0].method, $0) },
                allow: methods.flatMap { $0 == .get ? ["GET", "HEAD"] : [$0.token] }.joined(separator: ", "), label: first.label,
                slot: labels.firstIndex(of: first.label)!)  // every label was added above
        }
    }

    static func segments(_ template: String) -> [Segment] {
        template.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { part in
            if part.isEmpty { return .empty }
            if part.hasPrefix("{") { return .parameter(String(part.dropFirst().dropLast())) }
            return .literal(Array(part.utf8))
        }
    }

    /// The template `path` fits (its index in ``templates``), and the values of its
    /// parameters in template order.
    func match(_ path: UnsafeBufferPointer<UInt8>) -> (template: Int, first: String?, second: String?)? {
        guard path.first == UInt8(ascii: "/") else { return nil }
        for (index, template) in templates.enumerated() {
            if let (first, second) = Self.fit(template.segments, path) { return (index, first, second) }
        }
        return nil
    }

    /// The index in ``routes`` of the route for `method` on a template (HEAD is answered by GET's), nil when the
    /// template does not answer it.
    func route(_ method: HTTPMethod, onTemplate index: Int) -> Int? {
        let wanted = method == .head ? HTTPMethod.get : method
        return templates[index].routes.first { $0.method == wanted }?.index
    }

    private static func fit(_ segments: [Segment], _ path: UnsafeBufferPointer<UInt8>) -> (String?, String?)? {
        var first: String?
        var second: String?
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
                if first == nil { first = value } else { second = value }
            }
            start = end + 1
        }
        return (first, second)
    }
}
