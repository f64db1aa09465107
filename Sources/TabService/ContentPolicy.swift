import MicroHTTPD

/// What every answer that is not JSON carries: an SVG, a property list or a text opened from this origin is a
/// document a browser may render, and an SVG document may run script. This policy lets it load nothing, run
/// nothing (`sandbox`: no script, no forms, a unique origin), keep only its inline styles (the preview's
/// `<style>`), and never be sniffed as another type. The console's files carry a policy of their own
/// (``ConsoleFiles/securityHeaders``).
enum ContentPolicy {
    static let headers = [
        HTTPHeader("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox"),
        HTTPHeader("X-Content-Type-Options", "nosniff"),
    ]

    /// Whether an answer of `contentType` gets ``headers``: one with a type that is not JSON (`application/json`,
    /// `application/problem+json`, any `+json`). An answer without a body has no type and nothing to render.
    static func applies(to contentType: String?) -> Bool {
        guard let contentType else { return false }
        let type = mediaType(contentType)
        return type != "application/json" && !type.hasSuffix("+json")
    }

    /// Adds ``headers`` to `response` when ``applies(to:)`` and it has no policy of its own yet.
    static func apply(to response: inout HTTPResponse) {
        let type = response.headers.first { $0.name.lowercased() == "content-type" }?.value
        guard applies(to: type), !response.headers.contains(where: { $0.name.lowercased() == "content-security-policy" }) else {
            return
        }
        response.headers += headers
    }
}
