import ArgumentParser
import Foundation
import Logging
import TabConfigs
import TabLayout
import TabLint
import TabRuntime
import TabService
import TabStore

/// `tabserver compile FILE`: print one client's compiled layout.
struct Compile: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Compile a layout file and print the result.")

    @Argument(help: "A layout source (.plist or .json).") var file: String
    @Option(help: "A configs directory whose strings tables and base layouts the file sees.") var configs: String?
    @Option(help: "The client's locale.") var locale: String?
    @Option(help: "The client's platform (iphone, ipad, mac, tv, vision, android).") var platform: String?
    @Option(help: "The client's app version.") var appVersion: String?
    @Option(help: "json or plist.") var format: String = "json"

    func run() throws {
        guard format == "json" || format == "plist" else { throw ValidationError("--format is json or plist") }
        let platform = try self.platform.map { name in
            guard let known = Platform(rawValue: name.lowercased()) else { throw ValidationError("unknown platform '\(name)'") }
            return known
        }
        let version = try appVersion.map { text in
            guard let parsed = AppVersion(text) else { throw ValidationError("'\(text)' is not a dotted version") }
            return parsed
        }
        let compiler = try OfflineCompiler(configs: configs)
        do {
            let bytes = try compiler.compile(file, locale: locale, platform: platform, appVersion: version, plist: format == "plist")
            FileHandle.standardOutput.write(Data(bytes))
        } catch {
            for line in OfflineCompiler.describe(error, file: file) { printError(line) }
            throw ExitCode(1)
        }
    }
}

/// `tabserver export ACCOUNT --out FILE`: the bundle `GET …/tabs/bundle` answers, for an app to ship.
struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write an account's layout bundle (what GET …/tabs/bundle answers) for an app to ship in its bundle.")

    @Argument(help: "The account.") var account: String
    @Option(help: "The file to write (absent or a regular file), or - for standard output.") var out: String
    @Option(help: "A store to read (sqlite:PATH or postgres://…; env TABSERVER_STORE).") var store: String?
    @Option(help: "A configs directory to read instead of a store.") var configs: String?
    @Option(help: "A locale to include (repeat; default: every locale the layout has).") var locale: [String] = []
    @Option(help: "The platform (iphone, ipad, mac, tv, vision, android).") var platform: String?
    @Option(help: "The app version.") var appVersion: String?

    func run() async throws {
        let environment = Environment()
        var logger = Logger(label: "tabserver-export")
        logger.logLevel = .error
        let tabStore: any TabStore
        if let configs {
            guard store == nil else { throw ValidationError("give --store or --configs, not both") }
            tabStore = MemoryStore()
            _ = try await ConfigsDirectory.load(configs).importInto(tabStore, force: false)
        } else {
            tabStore = try openAnyStore(
                try StoreLocation(url: store ?? environment["TABSERVER_STORE"] ?? "sqlite:data/tabs.sqlite", environment: environment))
        }
        let service = try await TabService(store: tabStore, configuration: ServiceConfiguration(), logger: logger)
        var query = locale.map { ("locale", $0) }
        if let platform { query.append(("platform", platform)) }
        if let appVersion { query.append(("appVersion", appVersion)) }
        let response = await service.respond(to: TestRequest(.get, "/v1/accounts/\(account)/tabs/bundle", query: query))
        guard response.status == 200 else {
            printError("export: \(response.status): \(response.text)")
            throw ExitCode(1)
        }
        if out == "-" {
            FileHandle.standardOutput.write(Data(response.body))
            return
        }
        do {
            try writeRegularFile(out, response.body)
        } catch {
            printError("export: \(error)")
            throw ExitCode(1)
        }
        print("wrote \(out): \(response.body.count) bytes")
    }
}

/// Why an output file was not written.
struct OutputFileError: Error, CustomStringConvertible {
    let description: String
}

/// Writes `bytes` to `path` atomically (a temporary file beside it, renamed over it), when `path` is absent or a
/// regular file. A symbolic link, FIFO, device, socket or directory there is refused, not replaced by a file.
func writeRegularFile(_ path: String, _ bytes: [UInt8]) throws(OutputFileError) {
    var status = stat()
    if lstat(path, &status) == 0 {
        let kind: String? =
            switch status.st_mode & S_IFMT {
            case S_IFREG: nil
            case S_IFLNK: "a symbolic link"
            case S_IFIFO: "a FIFO"
            case S_IFCHR, S_IFBLK: "a device"
            case S_IFDIR: "a directory"
            case S_IFSOCK: "a socket"
            default: "not a regular file"
            }
        if let kind { throw OutputFileError(description: "refusing to write \(path): it is \(kind) (use --out - for standard output)") }
    }
    do {
        try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
    } catch {
        throw OutputFileError(description: "cannot write \(path): \(error.localizedDescription)")
    }
}

/// `tabserver validate FILE...`: exit 0 when every file compiles; the lint's warnings are printed, and change nothing.
struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check layout files; print file:line: pointer: message for each problem, and file: warning: … for each lint warning.")

    @Argument(help: "Layout sources (.plist or .json).") var files: [String]
    @Option(help: "A configs directory whose base layouts overlays are checked against.") var configs: String?

    func run() throws {
        let compiler = try OfflineCompiler(configs: configs)
        var failed = false
        for file in files {
            do {
                if let resolved = try compiler.validate(file) {
                    for warning in LayoutLint.warnings(resolved, globalStrings: compiler.tables) {
                        printError("\(file): warning: \(warning)")
                    }
                }
            } catch {
                failed = true
                for line in OfflineCompiler.describe(error, file: file) { printError(line) }
            }
        }
        if failed { throw ExitCode(1) }
    }
}

/// `tabserver import DIR`: write configs into the store.
struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Import a configs directory into the store.")

    @Argument(help: "A directory with layouts/ and strings/.") var directory: String
    @Option(help: "sqlite:PATH, memory: or postgres://… (env TABSERVER_STORE; default sqlite:data/tabs.sqlite).") var store: String?
    @Flag(help: "Write a new version from every file, even for accounts the store has.") var force = false

    func run() async throws {
        let environment = Environment()
        let location = try StoreLocation(
            url: store ?? environment["TABSERVER_STORE"] ?? "sqlite:data/tabs.sqlite", environment: environment)
        // On a terminal, a progress line (overwritten in place); in a pipe or a log, only the summary.
        let onTerminal = isatty(STDERR_FILENO) == 1
        let report = try await ConfigsDirectory.load(directory).importInto(try openAnyStore(location), force: force) { done, total in
            guard onTerminal, done == total || done % 500 == 0 else { return }
            FileHandle.standardError.write(Data("\rimporting: \(done) of \(total) files\(done == total ? "\n" : "")".utf8))
        }
        print("imported \(report.imported.count)\(Self.sample(report.imported))")
        if !report.skipped.isEmpty {
            print("kept the store's version of \(report.skipped.count)\(Self.sample(report.skipped)) (use --force)")
        }
        for refusal in report.refused { printError("not imported: \(refusal)") }
        if !report.refused.isEmpty { throw ExitCode(1) }
    }

    /// `: a, b, c` for a few names, `: a, b, … and 99,997 more` for many (one line, whatever the count).
    static func sample(_ names: [String]) -> String {
        guard !names.isEmpty else { return "" }
        let shown = names.prefix(10).joined(separator: ", ")
        return names.count > 10 ? ": \(shown), … and \(names.count - 10) more" : ": \(shown)"
    }
}

func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
