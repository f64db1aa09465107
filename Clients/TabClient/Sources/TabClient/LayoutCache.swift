import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The last good layout of one account in one environment on disk, with its ETag, in one file:
/// `{"etag":"…","perInstall":true,"layout":{…the body as the server sent it…}}` (`perInstall` only when the
/// answer was one arm of a running rollout: its `Vary` named `X-Install-Id`). The file is `<account>.tabs.json`
/// for the server's default environment and `<account>@<environment>.tabs.json` for a named one, so that a layout
/// is never shown in another environment than the one it came from (`@` is in neither an account nor an
/// environment name). The install id does not change the name: one install has one id.
///
/// With pinned keys, an answer keeps its exact bytes and signature too, as a bundle entry does:
/// `"signed":{"body":base64,"keyid":…,"sig":…}`, and the layout is read from those bytes (the ones a pinned key
/// verifies), never from `layout`; without keys `signed` is neither written nor read (the Java client may not touch
/// base64 below Android API 26, and one cache format serves both). In manifest mode `revision` is the revision of the
/// manifest that chose the version.
///
/// A write goes to a temporary file in the same directory, is flushed, and is renamed over the old file, so
/// a crash at any point leaves either the previous copy or the new one, never a mix. A file that does not
/// decode or validate is treated as absent.
struct LayoutCache: Sendable {
    /// The file this account's layout lives in.
    let file: URL

    /// - Parameter environment: the configuration's ``TabClientConfiguration/environment`` (nil: the default).
    init(directory: URL, account: String, environment: String? = nil) {
        let name = environment.map { "\(account)@\($0)" } ?? account
        file = directory.appendingPathComponent("\(name).tabs.json", isDirectory: false)
    }

    /// What a cache file holds.
    struct Entry: Sendable, Equatable, Decodable {
        var etag: String
        /// The answer was one arm of a running rollout (absent in files written before rollouts: false).
        var perInstall: Bool?
        /// Manifest mode: the revision of the manifest that chose this version.
        var revision: Int?
        /// The answer's bytes and `Tabs-Signature`, when it had one.
        var signed: SignedBody?
        var layout: CompiledLayout
    }

    /// The stored layout, or why there is none usable (nil error: no file).
    /// - Parameter signed: keys are pinned: the layout is the one `signed.body` holds (`signed` is then required,
    ///   and verified by the caller).
    func load(signed: Bool = false) -> Result<Entry, TabClientError>? {
        guard let data = FileManager.default.contents(atPath: file.path) else { return nil }
        let entry: Entry
        do {
            entry = try JSONDecoder().decode(Entry.self, from: data)
        } catch {
            return .failure(.invalidLayout([LayoutProblem(pointer: "", message: "cache file: \(CompiledLayout.describe(error))")]))
        }
        guard signed, let signed = entry.signed else {
            do {
                try entry.layout.validate()
            } catch {
                return .failure(error)
            }
            return .success(entry)
        }
        guard let body = signed.bytes else {
            return .failure(.invalidLayout([LayoutProblem(pointer: "/signed/body", message: "cache file: not base64")]))
        }
        do {
            var read = entry
            read.layout = try CompiledLayout.decode(body)
            return .success(read)
        } catch {
            return .failure(error)
        }
    }

    /// Replaces the stored layout with `body` (a validated layout document) and its ETag, atomically.
    /// - Parameters:
    ///   - perInstall: the answer's `Vary` named `X-Install-Id` (one arm of a running rollout).
    ///   - signature: the answer's `Tabs-Signature`, kept with the bytes it signs so that the copy is verified again.
    ///   - revision: manifest mode: the revision of the manifest that chose this version.
    /// - Throws: ``TabClientError/cacheWriteFailed(path:reason:)``; the previous copy is then unchanged.
    func store(body: Data, etag: String, perInstall: Bool = false, signature: Signature? = nil, revision: Int? = nil) throws(TabClientError)
    {
        var document = Data(#"{"etag":"#.utf8)
        document.append(Self.jsonString(etag))
        if perInstall { document.append(Data(#","perInstall":true"#.utf8)) }
        if let revision { document.append(Data(#","revision":\#(revision)"#.utf8)) }
        if let signature {
            document.append(Data(#","signed":{"body":"#.utf8))
            document.append(Self.jsonString(body.base64EncodedString()))
            document.append(Data(#","keyid":"#.utf8))
            document.append(Self.jsonString(signature.keyID))
            document.append(Data(#","sig":"#.utf8))
            document.append(Self.jsonString(signature.value))
            document.append(Data("}".utf8))
        }
        document.append(Data(#","layout":"#.utf8))
        document.append(body)
        document.append(Data("}".utf8))
        let directory = file.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(".\(file.lastPathComponent).tmp-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try document.write(to: temporary)
            let handle = try FileHandle(forWritingTo: temporary)
            try handle.synchronize()
            try handle.close()
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw .cacheWriteFailed(path: file.path, reason: error.localizedDescription)
        }
        guard rename(temporary.path, file.path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(at: temporary)
            throw .cacheWriteFailed(path: file.path, reason: reason)
        }
    }

    /// Removes temporary files a crash left behind (they are never read).
    func removeLeftovers() {
        let directory = file.deletingLastPathComponent()
        let prefix = ".\(file.lastPathComponent).tmp-"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        for name in names where name.hasPrefix(prefix) {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
    }

    /// Removes the stored layout.
    func remove() {
        try? FileManager.default.removeItem(at: file)
    }

    private static func jsonString(_ text: String) -> Data {
        // A JSON string encoding never fails for a String.
        (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8)
    }
}
