import Foundation
import Testing

@testable import TabClient

/// The install id: made once from secure random bits, kept beside the cache, read back by the next launch,
/// replaced when the file is unusable, and taken from the configuration when the app has one.
@Suite struct InstallIDTests {
    /// A lowercase version 4 UUID (RFC 9562 §5.4: version nibble 4, variant bits `10`).
    static func isLowercaseUUIDv4(_ text: String) -> Bool {
        text.wholeMatch(of: #/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/#) != nil
    }

    /// A client on `cache` that cannot reach any server (nothing here needs one).
    static func offlineClient(cache: URL?, installID: String? = nil, onEvent: (@Sendable (TabClientEvent) -> Void)? = nil)
        throws -> TabClient
    {
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        return try TabClient(
            configuration: Fixtures.configuration(server: refusing.url, installID: installID, cache: cache, onEvent: onEvent),
            bundle: try Fixtures.jackBundle())
    }

    @Test func theIDIsMadeOnceAndTheNextLaunchReadsItBack() throws {
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let first = try Self.offlineClient(cache: cache)
        #expect(Self.isLowercaseUUIDv4(first.installID), "\(first.installID)")
        let file = cache.appendingPathComponent("install-id")
        #expect(try String(contentsOf: file, encoding: .utf8) == first.installID)
        let modified = try FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as? Date

        let second = try Self.offlineClient(cache: cache)
        #expect(second.installID == first.installID)
        // Read, not written again; and nothing else left beside it.
        #expect(try FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as? Date == modified)
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path) == ["install-id"])

        // Another install (another cache directory) has another id.
        let elsewhere = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        #expect(try Self.offlineClient(cache: elsewhere).installID != first.installID)
    }

    /// What an unusable `install-id` file may hold, named for the test's output.
    struct StoredContent: Sendable, CustomTestStringConvertible {
        var name: String
        var bytes: [UInt8]
        var testDescription: String { name }
    }

    static let unusable: [StoredContent] = [
        StoredContent(name: "empty", bytes: []),
        StoredContent(name: "129 characters", bytes: Array(String(repeating: "a", count: 129).utf8)),
        StoredContent(name: "a newline", bytes: Array("3f1c9e2a-7d4b-4c1e-9a55-0b6d2e8f1a77\n".utf8)),
        StoredContent(name: "a NUL", bytes: Array("abc".utf8) + [0] + Array("def".utf8)),
        StoredContent(name: "not UTF-8", bytes: [0xFF, 0xFE, 0x41]),
        StoredContent(name: "a leading space", bytes: Array(" abc".utf8)),
    ]

    @Test(arguments: unusable)
    func anUnusableFileIsReplacedWithANewID(content: StoredContent) throws {
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let file = cache.appendingPathComponent("install-id")
        try Data(content.bytes).write(to: file)
        let resolution = InstallIDFile(directory: cache).resolve()
        #expect(resolution.replaced != nil)
        #expect(resolution.notStored == nil)

        let client = try Self.offlineClient(cache: cache)
        #expect(client.installID == resolution.id)
        #expect(Self.isLowercaseUUIDv4(client.installID))
        #expect(try Data(contentsOf: file) == Data(client.installID.utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path) == ["install-id"])
    }

    @Test func aClientReplacesAnUnusableFileItself() throws {
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let file = cache.appendingPathComponent("install-id")
        try Data("\u{7}".utf8).write(to: file)
        let client = try Self.offlineClient(cache: cache)
        #expect(Self.isLowercaseUUIDv4(client.installID))
        #expect(try String(contentsOf: file, encoding: .utf8) == client.installID)
    }

    @Test func aValidIDThatIsNotAUUIDIsKept() throws {
        // An id an earlier version (or the app) stored is opaque: any valid one is read back as it is.
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        try Data("légacy id 42".utf8).write(to: cache.appendingPathComponent("install-id"))
        #expect(try Self.offlineClient(cache: cache).installID == "légacy id 42")
    }

    @Test func clientsMakingTheFirstIDTogetherAllKeepTheSameOne() async throws {
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let ids = await withTaskGroup(of: String.self) { group in
            for _ in 0..<16 { group.addTask { InstallIDFile(directory: cache).resolve().id } }
            return await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(ids.count == 1)
        #expect(try ids.first == String(contentsOf: cache.appendingPathComponent("install-id"), encoding: .utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path) == ["install-id"])
    }

    @Test func aFirstIDNeverOverwritesOneStoredMeanwhile() throws {
        // What decides the race above: a client that found no file does not replace the file another made since.
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let file = InstallIDFile(directory: cache)
        try file.store("made-first", replacing: false)
        try file.store("made-second", replacing: false)
        #expect(file.read() == .success("made-first"))
        // Replacing an unusable file does replace it.
        try file.store("replacement", replacing: true)
        #expect(file.read() == .success("replacement"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path) == ["install-id"])
    }

    @Test func anIDThatCannotBeStoredIsUsedForThisRunAndSaysWhy() throws {
        // A regular file where the cache directory should be.
        let parent = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: parent) }
        let blocker = parent.appendingPathComponent("not-a-directory")
        try Data("x".utf8).write(to: blocker)
        let events = EventLog()
        let client = try Self.offlineClient(cache: blocker, onEvent: events.handler)
        #expect(Self.isLowercaseUUIDv4(client.installID))
        let failures = events.all.compactMap { event -> TabClientError? in if case .failed(let error, nil, _) = event { error } else { nil }
        }
        #expect(failures.contains { if case .cacheWriteFailed(let path, _) = $0 { path.hasSuffix("/install-id") } else { false } })
    }

    @Test func withoutACacheDirectoryEachClientMakesItsOwnID() throws {
        let first = try Self.offlineClient(cache: nil)
        let second = try Self.offlineClient(cache: nil)
        #expect(Self.isLowercaseUUIDv4(first.installID) && Self.isLowercaseUUIDv4(second.installID))
        #expect(first.installID != second.installID)
    }

    @Test func anExplicitIDIsUsedAndNoFileIsWritten() throws {
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let longest = String(repeating: "é", count: 128)  // 128 Unicode scalars, 256 UTF-8 bytes: allowed
        for id in ["the-app's own id", longest] {
            #expect(try Self.offlineClient(cache: cache, installID: id).installID == id)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path).isEmpty)
    }

    @Test(arguments: [
        ("", "empty"),
        (String(repeating: "a", count: 129), "at most 128 characters; this one has 129"),
        (String(repeating: "é", count: 129), "at most 128 characters; this one has 129"),
        ("abc\u{0}", "control characters (U+0000)"),
        ("tab\there", "control characters (U+0009)"),
        ("del\u{7F}", "control characters (U+007F)"),
        ("line\r\nX-Other: 1", "control characters (U+000D)"),
        ("trailing ", "begin or end with a space"),
    ])
    func anInvalidExplicitIDIsRefusedWithTheReason(id: String, reason: String) throws {
        let error = #expect(throws: TabClientError.self) { try Self.offlineClient(cache: nil, installID: id) }
        guard case .invalidInstallID(let why)? = error else {
            Issue.record("unexpected \(String(describing: error))")
            return
        }
        #expect(why.contains(reason), "\(why)")
        #expect(error?.description == "invalid install id: \(why)")
    }

    @Test func newIDsAreVersion4UUIDsFromRandomBits() {
        let ids = (0..<2000).map { _ in InstallID.random() }
        #expect(ids.allSatisfy(Self.isLowercaseUUIDv4))
        #expect(Set(ids).count == ids.count)
        // Every hexadecimal digit outside the fixed version and variant bits varies.
        for position in [0, 7, 9, 15, 20, 35] {
            let digits = Set(ids.map { $0[$0.index($0.startIndex, offsetBy: position)] })
            #expect(digits.count == 16, "position \(position): \(digits.sorted())")
        }
    }
}
