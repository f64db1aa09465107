import Foundation

/// The operators' web console: the static files under `Resources/`, shipped as this target's resource bundle
/// (SwiftPM copies it beside the executable as `tabserver_TabConsole.resources`; the image installs it there too).
public enum ConsoleAssets {
    /// One file of the console.
    public struct File: Sendable {
        public let name: String
        public let contentType: String
        public let bytes: [UInt8]
    }

    /// Every file of the console, read once from the first directory of ``directories(environment:)`` that has
    /// them (empty when none does: the server then answers 404 under `/console/`, and says so in its log).
    public static func load(environment: [String: String] = ProcessInfo.processInfo.environment) -> [File] {
        for directory in directories(environment: environment) {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { continue }
            let files = names.sorted().compactMap { name -> File? in
                guard let type = contentType(of: name), let data = FileManager.default.contents(atPath: directory + "/" + name) else {
                    return nil
                }
                return File(name: name, contentType: type, bytes: Array(data))
            }
            if !files.isEmpty { return files }
        }
        return []
    }

    /// Where the console's files are looked for: `TABSERVER_CONSOLE_DIR`, then SwiftPM's resource bundle beside
    /// the executable (`tabserver_TabConsole.resources/Resources`, as `swift build` and the image lay it out).
    /// SwiftPM's own `Bundle.module` is not used: it stops the process when the bundle is missing.
    public static func directories(environment: [String: String]) -> [String] {
        var found: [String] = []
        if let given = environment["TABSERVER_CONSOLE_DIR"], !given.isEmpty { found.append(given) }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        found.append(executable.appendingPathComponent("tabserver_TabConsole.resources/Resources").path)
        return found
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
