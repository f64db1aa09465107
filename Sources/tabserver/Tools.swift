import ArgumentParser
import Foundation
import TabLayout
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

/// `tabserver validate FILE...`: exit 0 when every file compiles.
struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Check layout files; print file:line: pointer: message for each problem.")

    @Argument(help: "Layout sources (.plist or .json).") var files: [String]
    @Option(help: "A configs directory whose base layouts overlays are checked against.") var configs: String?

    func run() throws {
        let compiler = try OfflineCompiler(configs: configs)
        var failed = false
        for file in files {
            do {
                try compiler.validate(file)
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
    @Option(help: "sqlite:PATH or memory: (env TABSERVER_STORE; default sqlite:data/tabs.sqlite).") var store: String?
    @Flag(help: "Write a new version from every file, even for accounts the store has.") var force = false

    func run() async throws {
        let url = store ?? Environment()["TABSERVER_STORE"] ?? "sqlite:data/tabs.sqlite"
        let report = try await ConfigsDirectory.load(directory).importInto(try openAnyStore(url: url), force: force)
        print("imported \(report.imported.count): \(report.imported.joined(separator: ", "))")
        if !report.skipped.isEmpty {
            print("kept the store's version of \(report.skipped.count): \(report.skipped.joined(separator: ", ")) (use --force)")
        }
        for refusal in report.refused { printError("not imported: \(refusal)") }
        if !report.refused.isEmpty { throw ExitCode(1) }
    }
}

func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
