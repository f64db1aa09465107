import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The opaque id an install names itself with in `X-Install-Id` (docs/client.md, "Install id and environments"): at most
/// 128 characters (Unicode scalars), none of them a control character. The server hashes it into a rollout
/// bucket; it never says anything about the device.
enum InstallID {
    /// The longest id the server accepts, in Unicode scalars.
    static let maximumLength = 128

    /// What is wrong with `text` as an install id, or nil. Besides the server's rule (docs/client.md), a space at either end is
    /// refused: a header value loses it on the way (RFC 9110 §5.5), and the server would bucket another id.
    static func problem(with text: String) -> String? {
        if text.isEmpty { return "an install id is empty" }
        let length = text.unicodeScalars.count
        if length > maximumLength { return "an install id has at most \(maximumLength) characters; this one has \(length)" }
        if let control = text.unicodeScalars.first(where: { $0.properties.generalCategory == .control }) {
            return "an install id may not contain control characters (\(codePoint(control)))"
        }
        if text.unicodeScalars.first == " " || text.unicodeScalars.last == " " {
            return "an install id may not begin or end with a space: a header value loses it"
        }
        return nil
    }

    /// A new random id: a version 4 UUID in lower case, its 122 random bits from the system's cryptographically
    /// secure generator (`SystemRandomNumberGenerator`: `getrandom`/`arc4random_buf`), nothing derived from the
    /// device.
    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40  // version 4 (RFC 9562 §5.4)
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // variant 10
        let uuid = UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
        return uuid.uuidString.lowercased()
    }

    private static func codePoint(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}

/// The install id kept in the client's cache directory, in the file `install-id` beside the layouts: the id's
/// UTF-8 bytes, nothing else. Made once, on first use, and read back at every launch; deleting the directory
/// (or the app) makes a new install.
struct InstallIDFile: Sendable {
    /// The file the id lives in.
    let file: URL

    init(directory: URL) {
        file = directory.appendingPathComponent("install-id", isDirectory: false)
    }

    /// What ``resolve()`` found and did.
    struct Resolution: Sendable, Equatable {
        /// The id this install sends.
        var id: String
        /// Why the file's previous content was refused (it was then replaced), or nil.
        var replaced: String?
        /// Why the id could not be kept on disk (the next launch then makes another), or nil.
        var notStored: TabClientError?
    }

    /// The stored id, else a new one, stored. A file that cannot be read or holds no valid id is replaced. When
    /// two clients make the first id at once, both end up with the one that reached the disk first.
    func resolve() -> Resolution {
        var replaced: String?
        switch read() {
        case .success(let id): return Resolution(id: id)
        case .failure(let problem): replaced = problem.description
        case nil: break
        }
        let made = InstallID.random()
        do throws(TabClientError) {
            try store(made, replacing: replaced != nil)
        } catch {
            return Resolution(id: made, replaced: replaced, notStored: error)
        }
        // Another client may have stored its id first: the file decides.
        if case .success(let stored)? = read() { return Resolution(id: stored, replaced: replaced) }
        return Resolution(id: made, replaced: replaced)
    }

    /// The stored id; a failure says why the file is unusable; nil when there is no file.
    func read() -> Result<String, InstallIDProblem>? {
        guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        guard let data = FileManager.default.contents(atPath: file.path) else {
            return .failure(InstallIDProblem("\(file.path) cannot be read"))
        }
        guard let text = String(data: data, encoding: .utf8) else {
            return .failure(InstallIDProblem("\(file.path) is not UTF-8"))
        }
        if let problem = InstallID.problem(with: text) { return .failure(InstallIDProblem("\(file.path): \(problem)")) }
        return .success(text)
    }

    /// Writes `id` to a temporary file, flushes it, then links it into place (when there was no file: a file
    /// another client made meanwhile is kept) or renames it over the unusable one.
    /// - Throws: ``TabClientError/cacheWriteFailed(path:reason:)``.
    func store(_ id: String, replacing: Bool) throws(TabClientError) {
        let directory = file.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(".\(file.lastPathComponent).tmp-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: temporary) }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(id.utf8).write(to: temporary)
            let handle = try FileHandle(forWritingTo: temporary)
            try handle.synchronize()
            try handle.close()
        } catch {
            throw .cacheWriteFailed(path: file.path, reason: error.localizedDescription)
        }
        if !replacing {
            if link(temporary.path, file.path) == 0 || errno == EEXIST { return }
            // A file system without hard links: a rename, which may replace a file made meanwhile.
        }
        guard rename(temporary.path, file.path) == 0 else {
            throw .cacheWriteFailed(path: file.path, reason: String(cString: strerror(errno)))
        }
    }
}

/// Why a stored install id was refused.
struct InstallIDProblem: Error, Sendable, Equatable, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
