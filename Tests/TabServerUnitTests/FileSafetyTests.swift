import Foundation
import TabConfigs
import Testing

@testable import tabserver

#if canImport(Glibc)
    import Glibc
#endif

/// `export --out` writes only a regular file (or standard output for `-`); `import` reads only regular files
/// inside the configs directory, and checks a file's size before reading it.
@Suite struct FileSafetyTests {
    static func directory() throws -> String {
        let path = NSTemporaryDirectory() + "file-safety-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func exportRefusesToReplaceWhatIsNotARegularFile() throws {
        let root = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let fifo = root + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let link = root + "/link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "/dev/stdout")
        for path in [fifo, link, root, "/dev/null"] {
            #expect(throws: OutputFileError.self, "\(path)") { try writeRegularFile(path, Array("{}".utf8)) }
        }
        var status = stat()
        #expect(lstat(fifo, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO, "the FIFO is still a FIFO")
        #expect(lstat(link, &status) == 0 && status.st_mode & S_IFMT == S_IFLNK, "the link is still a link")
        let file = root + "/bundle.json"
        try writeRegularFile(file, Array("one".utf8))
        try writeRegularFile(file, Array("two".utf8))
        #expect(FileManager.default.contents(atPath: file) == Data("two".utf8))
    }

    @Test func importReadsOnlyRegularFilesInsideTheDirectoryAndChecksTheSizeFirst() throws {
        let root = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let layouts = root + "/layouts"
        try FileManager.default.createDirectory(atPath: layouts, withIntermediateDirectories: true)
        let valid = #"{"schemaVersion":1,"tabs":[{"id":"a","title":"A","rootViewController":"AViewController"}]}"#
        try valid.write(toFile: layouts + "/inside.json", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: layouts + "/alias.json", withDestinationPath: layouts + "/inside.json")
        #expect(try ConfigsDirectory.load(root).layouts.map(\.name) == ["alias", "inside"], "a link inside the directory is read")

        try FileManager.default.createSymbolicLink(atPath: layouts + "/escape.json", withDestinationPath: "/etc/hostname")
        #expect(throws: ConfigsDirectory.ReadError.self) { try ConfigsDirectory.load(root) }
        try FileManager.default.removeItem(atPath: layouts + "/escape.json")

        #expect(mkfifo(layouts + "/pipe.json", 0o600) == 0)
        #expect(throws: ConfigsDirectory.ReadError.self, "a FIFO is refused, not read (which would block)") {
            try ConfigsDirectory.load(root)
        }
        try FileManager.default.removeItem(atPath: layouts + "/pipe.json")

        // A sparse 300 MB file: refused from its size, without reading it.
        let big = layouts + "/big.json"
        #expect(FileManager.default.createFile(atPath: big, contents: nil))
        #expect(truncate(big, 300 << 20) == 0)
        do {
            _ = try ConfigsDirectory.load(root)
            Issue.record("a 300 MB file was accepted")
        } catch {
            #expect(error.description.contains("314572800 bytes"), "\(error)")
        }
    }
}
