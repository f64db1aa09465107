import MicroHTTPD
import TabConsole
import TabLayout

/// The console's files as prepared responses, built once at start: `/console/` is `index.html`, every other
/// file by its name or its hashed name (see ``ConsolePublication``). Every answer carries the console's security
/// headers (docs/security.md, "HTTP": a CSP that allows only the console's own origin, `frame-ancestors 'none'`, `nosniff`; no
/// cookies are ever set), a strong ETag of its content, and `Cache-Control`: `no-cache` under a plain name,
/// a year and `immutable` under a hashed one. A matching `If-None-Match` is 304.
struct ConsoleFiles: Sendable {
    private let files: [String: Prepared]
    /// Where the files came from (for the start-up log).
    let origin: ConsoleAssets.Origin

    private struct Prepared: Sendable {
        let etag: String
        let ok: PreparedResponse
        let notModified: PreparedResponse
    }

    static let securityHeaders = [
        HTTPHeader(
            "Content-Security-Policy",
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; "
                + "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
        HTTPHeader("X-Content-Type-Options", "nosniff"),
        HTTPHeader("X-Frame-Options", "DENY"),
        HTTPHeader("Referrer-Policy", "no-referrer"),
    ]

    /// `Cache-Control` under a hashed name: the bytes under that name never change.
    static let immutableCacheControl = "public, max-age=31536000, immutable"

    static func load() -> ConsoleFiles {
        let (found, origin) = ConsoleAssets.load()
        var files: [String: Prepared] = [:]
        for entry in ConsolePublication.entries(found) {
            let shared =
                [
                    HTTPHeader("ETag", entry.etag),
                    HTTPHeader("Cache-Control", entry.immutable ? immutableCacheControl : "no-cache"),
                ] + securityHeaders
            guard
                let ok = try? PreparedResponse(
                    status: 200, headers: [HTTPHeader("Content-Type", entry.contentType)] + shared, body: entry.bytes),
                let notModified = try? PreparedResponse(status: 304, headers: shared, body: [])
            else { continue }
            files[entry.name] = Prepared(etag: entry.etag, ok: ok, notModified: notModified)
        }
        return ConsoleFiles(files: files, origin: origin)
    }

    /// The file's shared response (304 when `ifNoneMatch` names its ETag), or 404.
    func reply(file name: String, ifNoneMatch: String? = nil) -> HTTPReply {
        guard let prepared = files[name.isEmpty ? "index.html" : name] else {
            return .response(Problem.notFound("the console has no file \(name)").response)
        }
        if let ifNoneMatch, Self.matches(ifNoneMatch, prepared.etag) { return .prepared(prepared.notModified) }
        return .prepared(prepared.ok)
    }

    /// RFC 9110 §13.1.2: `*`, or a list naming `etag` (weak comparison).
    private static func matches(_ ifNoneMatch: String, _ etag: String) -> Bool {
        ifNoneMatch.split(separator: ",").contains { member in
            var tag = member
            while let first = tag.first, first == " " || first == "\t" { tag.removeFirst() }
            while let last = tag.last, last == " " || last == "\t" { tag.removeLast() }
            return tag == "*" || (tag.hasPrefix("W/") ? tag.dropFirst(2) : tag) == etag
        }
    }

    var isEmpty: Bool { files.isEmpty }
}
