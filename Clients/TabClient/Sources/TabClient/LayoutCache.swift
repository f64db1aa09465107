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
/// In manifest mode a second file, `<account>.tabs.prefetch.json` (`<account>@<environment>.tabs.prefetch.json`), holds
/// the candidate a rollout's coming step will give this install, prefetched and not shown yet (``Prefetched``):
/// `{"etag":…,"at":…,"revision":…,"keyid":…,"sig":…,"body":"…"}`, `at` the step's time as the manifest wrote it,
/// `revision` the manifest that scheduled it, `keyid` and `sig` its signature (with pinned keys only), and `body` the
/// answer's bytes as a JSON string (a layout is UTF-8 JSON), so that they are verified and written again exactly, without
/// base64 (which the Java client may not use below Android API 26).
///
/// A write goes to a temporary file in the same directory, is flushed, and is renamed over the old file, so
/// a crash at any point leaves either the previous copy or the new one, never a mix. A file that does not
/// decode or validate is treated as absent.
struct LayoutCache: Sendable {
    /// The file this account's layout lives in.
    let file: URL
    /// The launch guard's record, written with every layout stored (``GuardRecord``).
    let record = Locked(GuardRecord())
    /// The launch guard: the entry of the last layout that rendered (a cache file's bytes, without its record), written
    /// after the layout as `"previous"` while the layout stored is pending; nil: none.
    let previous = Locked<Data?>(nil)

    /// - Parameters:
    ///   - environment: the configuration's ``TabClientConfiguration/environment`` (nil: the default).
    ///   - prefetch: the file of the prefetched candidate instead of the layout's.
    /// A writer of `file` (the report queue's): the same atomic writes.
    init(file: URL) { self.file = file }

    init(directory: URL, account: String, environment: String? = nil, prefetch: Bool = false) {
        let name = environment.map { "\(account)@\($0)" } ?? account
        file = directory.appendingPathComponent("\(name).tabs\(prefetch ? ".prefetch" : "").json", isDirectory: false)
    }

    /// What a prefetch file holds.
    struct Prefetched: Sendable, Equatable, Decodable {
        var etag: String
        /// The step's time, as the manifest wrote it.
        var at: String
        /// The revision of the manifest that scheduled it.
        var revision: Int
        var keyid: String?
        var sig: String?
        /// The answer's bytes, as a string.
        var body: String

        var signature: Signature? {
            guard let keyid, let sig else { return nil }
            return Signature(keyID: keyid, value: sig)
        }
    }

    /// The prefetched candidate's file, or why it is unusable (nil: no file). Its layout is decoded (and validated) by the
    /// caller, after the signature is checked.
    func loadPrefetched() -> Result<Prefetched, TabClientError>? {
        guard let data = FileManager.default.contents(atPath: file.path) else { return nil }
        do {
            return .success(try JSONLimits.decode(Prefetched.self, from: data))
        } catch {
            return .failure(.invalidLayout([LayoutProblem(pointer: "", message: "prefetch file: \(CompiledLayout.describe(error))")]))
        }
    }

    /// Replaces the prefetch file with a candidate's bytes (as text: its UTF-8), atomically.
    /// - Throws: ``TabClientError/cacheWriteFailed(path:reason:)``; the previous copy is then unchanged.
    func storePrefetched(body: String, etag: String, at: String, revision: Int, signature: Signature?) throws(TabClientError) {
        var document = Data(#"{"etag":"#.utf8)
        document.append(Self.jsonString(etag))
        document.append(Data(#","at":"#.utf8))
        document.append(Self.jsonString(at))
        document.append(Data(#","revision":\#(revision)"#.utf8))
        if let signature {
            document.append(Data(#","keyid":"#.utf8))
            document.append(Self.jsonString(signature.keyID))
            document.append(Data(#","sig":"#.utf8))
            document.append(Self.jsonString(signature.value))
        }
        document.append(Data(#","body":"#.utf8))
        document.append(Self.jsonString(body))
        document.append(Data("}".utf8))
        try write(document)
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
        guard let data = FileManager.default.contents(atPath: file.path), !holdsOnlyGuard() else { return nil }
        let entry: Entry
        do {
            entry = try JSONLimits.decode(Entry.self, from: data)
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
        document.append(record.withLock { $0.fragment })
        document.append(Data(#","layout":"#.utf8))
        document.append(body)
        if let previous = previous.withLock({ $0 }) {
            document.append(Data(#","previous":"#.utf8))
            document.append(previous)
        }
        document.append(Data("}".utf8))
        try write(document)
    }

    /// Writes `document` to a temporary file beside ``file``, flushes it and renames it over ``file``.
    func writeAtomically(_ document: Data) throws(TabClientError) { try write(document) }

    private func write(_ document: Data) throws(TabClientError) {
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
