import Foundation

/// The operators' web console: the static files under `Resources/`, carried inside the binary (the
/// ConsoleEmbedder build-tool plugin writes them into Swift source at build time), so that one file is the whole
/// server. `TABSERVER_CONSOLE_DIR` serves a directory instead, for working on the console without rebuilding.
public enum ConsoleAssets {
    /// One file of the console.
    public struct File: Sendable {
        public let name: String
        public let contentType: String
        public let bytes: [UInt8]

        public init(name: String, contentType: String, bytes: [UInt8]) {
            self.name = name
            self.contentType = contentType
            self.bytes = bytes
        }
    }

    /// Where the files came from.
    public enum Origin: Sendable, Equatable {
        /// Carried inside the binary.
        case embedded
        /// Read from `TABSERVER_CONSOLE_DIR`.
        case directory(String)
    }

    /// Every file of the console, from `TABSERVER_CONSOLE_DIR` when it is set and holds any, else the ones the
    /// binary carries.
    public static func load(environment: [String: String] = ProcessInfo.processInfo.environment) -> (files: [File], origin: Origin) {
        if let directory = environment["TABSERVER_CONSOLE_DIR"], !directory.isEmpty {
            let files = read(directory: directory)
            if !files.isEmpty { return (files, .directory(directory)) }
        }
        return (embeddedFiles(), .embedded)
    }

    /// The files the binary carries, in name order (every one of a kind the console serves).
    public static func embeddedFiles() -> [File] {
        embedded.compactMap { entry in
            guard let type = contentType(of: entry.name), let data = Data(base64Encoded: entry.base64) else { return nil }
            return File(name: entry.name, contentType: type, bytes: Array(data))
        }
    }

    /// The files of `directory` the console serves, in name order; empty when it cannot be read.
    static func read(directory: String) -> [File] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names.sorted().compactMap { name -> File? in
            guard let type = contentType(of: name), let data = FileManager.default.contents(atPath: directory + "/" + name) else {
                return nil
            }
            return File(name: name, contentType: type, bytes: Array(data))
        }
    }

    /// The media type the console's files are served with; nil for a kind of file it does not serve.
    static func contentType(of name: String) -> String? {
        switch name.split(separator: ".").last {
        case "html": "text/html; charset=utf-8"
        case "js": "text/javascript; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "svg": "image/svg+xml"
        case "png": "image/png"
        case "ico": "image/x-icon"
        default: nil
        }
    }
}
