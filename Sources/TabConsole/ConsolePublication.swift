import ContentHash

/// The console's files as served: each under its own name (revalidated: `no-cache`), and each file other than an
/// HTML page also under a name that carries its content's hash (`app.1f2e3d4c5b.js`: cached for a year,
/// immutable). The pages and scripts refer to the hashed names (`src="app.js"` and `from "./api.js"` are
/// rewritten), so a browser fetches a changed file under its new name at once and never revalidates the others.
public enum ConsolePublication {
    /// One name the console answers under.
    public struct Entry: Sendable {
        public let name: String
        public let contentType: String
        /// The file's bytes with its references to other files rewritten to their hashed names.
        public let bytes: [UInt8]
        /// The strong ETag of `bytes`.
        public let etag: String
        /// The name carries the content's hash: the answer never changes.
        public let immutable: Bool
    }

    /// How many hex digits of the SHA-256 a hashed name carries.
    static let hashDigits = 10

    /// Every name `files` are served under.
    public static func entries(_ files: [ConsoleAssets.File]) -> [Entry] {
        var resolver = Resolver(files: files)
        var entries: [Entry] = []
        for file in files {
            let bytes = resolver.rewritten(file.name)
            let etag = EntityTag.strong(for: bytes)
            entries.append(Entry(name: file.name, contentType: file.contentType, bytes: bytes, etag: etag, immutable: false))
            if let hashed = resolver.hashedName(file.name) {
                entries.append(Entry(name: hashed, contentType: file.contentType, bytes: bytes, etag: etag, immutable: true))
            }
        }
        return entries
    }

    /// Resolves files in dependency order: a file's hashed name depends on its bytes after its own references were
    /// rewritten. A reference that would close a cycle keeps the plain name (the console's modules import in one
    /// direction; a cycle would load the module it closes on twice, under both names).
    private struct Resolver {
        let files: [String: ConsoleAssets.File]
        var done: [String: (bytes: [UInt8], hashed: String?)] = [:]
        var visiting: Set<String> = []

        init(files: [ConsoleAssets.File]) {
            self.files = Dictionary(files.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        }

        mutating func rewritten(_ name: String) -> [UInt8] {
            resolve(name)?.bytes ?? []
        }

        mutating func hashedName(_ name: String) -> String? {
            resolve(name)?.hashed
        }

        private mutating func resolve(_ name: String) -> (bytes: [UInt8], hashed: String?)? {
            if let known = done[name] { return known }
            guard let file = files[name], !visiting.contains(name) else { return nil }
            visiting.insert(name)
            defer { visiting.remove(name) }
            var bytes = file.bytes
            let isPage = name.hasSuffix(".html")
            for other in files.keys.sorted() where other != name {
                // Only the forms the console's pages and modules use: an attribute value, a relative module path.
                let reference = isPage ? "=\"\(other)\"" : "\"./\(other)\""
                guard bytes.contains(reference), let target = resolve(other), let hashed = target.hashed else { continue }
                bytes = bytes.replacing(reference, with: isPage ? "=\"\(hashed)\"" : "\"./\(hashed)\"")
            }
            let result = (bytes: bytes, hashed: isPage ? nil : ConsolePublication.hashed(name, bytes))
            done[name] = result
            return result
        }
    }

    /// `name` with the first ``hashDigits`` hex digits of the SHA-256 of `bytes` before its extension.
    static func hashed(_ name: String, _ bytes: [UInt8]) -> String {
        let digest = String(SHA256.hex(SHA256.hash(bytes)).prefix(hashDigits))
        guard let dot = name.lastIndex(of: ".") else { return name + "." + digest }
        return String(name[..<dot]) + "." + digest + String(name[dot...])
    }
}

extension [UInt8] {
    fileprivate func contains(_ text: String) -> Bool { firstRange(of: Array(text.utf8)) != nil }

    /// A copy with every occurrence of `text` replaced by `replacement`.
    fileprivate func replacing(_ text: String, with replacement: String) -> [UInt8] {
        let pattern = Array(text.utf8)
        let new = Array(replacement.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(count)
        var index = 0
        while index < count {
            if index + pattern.count <= count, self[index..<(index + pattern.count)].elementsEqual(pattern) {
                out += new
                index += pattern.count
            } else {
                out.append(self[index])
                index += 1
            }
        }
        return out
    }

    private func firstRange(of pattern: [UInt8]) -> Range<Int>? {
        guard !pattern.isEmpty, pattern.count <= count else { return nil }
        for start in 0...(count - pattern.count) where self[start..<(start + pattern.count)].elementsEqual(pattern) {
            return start..<(start + pattern.count)
        }
        return nil
    }
}
