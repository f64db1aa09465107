import MicroHTTPD
import TabConsole
import TabLayout

/// The console's files as prepared responses, built once at start: `/console/` is `index.html`, every other
/// file by its name. Every answer carries the console's security headers (API.md: a CSP that allows only the
/// console's own origin, `frame-ancestors 'none'`, `nosniff`; no cookies are ever set).
struct ConsoleFiles: Sendable {
    private let files: [String: PreparedResponse]

    static let securityHeaders = [
        HTTPHeader(
            "Content-Security-Policy",
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; "
                + "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
        HTTPHeader("X-Content-Type-Options", "nosniff"),
        HTTPHeader("X-Frame-Options", "DENY"),
        HTTPHeader("Referrer-Policy", "no-referrer"),
        HTTPHeader("Cache-Control", "no-cache"),
    ]

    static func load() -> ConsoleFiles {
        var files: [String: PreparedResponse] = [:]
        for file in ConsoleAssets.load() {
            let headers =
                [HTTPHeader("Content-Type", file.contentType), HTTPHeader("ETag", EntityTag.strong(for: file.bytes))] + securityHeaders
            files[file.name] = try? PreparedResponse(status: 200, headers: headers, body: file.bytes)
        }
        return ConsoleFiles(files: files)
    }

    /// The file's shared response, or 404.
    func reply(file name: String) -> HTTPReply {
        if let prepared = files[name.isEmpty ? "index.html" : name] { return .prepared(prepared) }
        return .response(Problem.notFound("the console has no file \(name)").response)
    }

    var isEmpty: Bool { files.isEmpty }
}
