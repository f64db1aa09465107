import ArgumentParser
import Foundation
import TabRuntime
import TabStore
import TabStorePostgres
import TabTime

/// `tabserver migrate --from URL --to URL`: copy one store into an empty one, check the copy, print a summary.
struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy a store (every table: versions, strings, and all the rest) into an empty one, and check the copy.",
        discussion: """
            The source is read as one snapshot while it may be serving; the target is written in one transaction, so
            an interrupted run leaves it empty. A target that holds rows is refused. sqlite: to sqlite: uses SQLite's
            online backup.
            """)

    @Option(help: "The store to copy: sqlite:PATH or postgres://….") var from: String
    @Option(help: "The empty store to copy into: sqlite:PATH (created when missing) or postgres://….") var to: String
    @Option(help: .hidden) var progressSeconds: Double = 3

    func run() throws {
        let environment = Environment()
        let source = try StoreLocation(url: from, environment: environment)
        let target = try StoreLocation(url: to, environment: environment)
        guard source.url != target.url else { throw ValidationError("--from and --to name the same store") }
        printError("migrate: copying \(source) to \(target)")
        let clock = TimeSource.system
        do {
            let report: StoreCopyReport
            if let from = Self.sqlitePath(source), let to = Self.sqlitePath(target) {
                guard Self.canonical(from) != Self.canonical(to) else { throw ValidationError("--from and --to name the same file") }
                var lastTold = clock.seconds
                report = try SQLiteCopyEndpoint(path: from, create: false).backup(
                    to: to, progressInterval: progressSeconds,
                    pages: { copied, total in
                        guard clock.seconds - lastTold >= progressSeconds else { return }
                        lastTold = clock.seconds
                        printError("migrate: backup: \(copied)/\(total) pages")
                    }, clock: clock
                ) { printError("migrate: " + $0.line) }
            } else {
                report = try StoreCopy.copy(
                    from: try Self.endpoint(source, create: false), to: try Self.endpoint(target, create: true),
                    progressInterval: progressSeconds, clock: clock
                ) { printError("migrate: " + $0.line) }
            }
            print("migrated \(source) to \(target)")
            print(report.summary)
        } catch let error as StoreError {
            printError("migrate: \(error)")
            throw ExitCode(1)
        }
    }

    /// The file of a `sqlite:` location, nil for another kind.
    static func sqlitePath(_ location: StoreLocation) -> String? {
        guard location.url.hasPrefix("sqlite:") else { return nil }
        let path = String(location.url.dropFirst("sqlite:".count))
        return path.hasPrefix("//") ? String(path.dropFirst(2)) : path
    }

    static func canonical(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path }

    /// One side of the copy; `memory:` and unknown schemes are refused (a memory store lives in one process).
    static func endpoint(_ location: StoreLocation, create: Bool) throws -> any StoreCopyEndpoint {
        if let path = sqlitePath(location) {
            guard !path.isEmpty else { throw StoreError.unsupportedURL(location.redacted) }
            return try SQLiteCopyEndpoint(path: path, create: create)
        }
        if location.url.hasPrefix("postgres://") || location.url.hasPrefix("postgresql://") {
            return try PostgresCopyEndpoint(url: location.url, name: location.redacted)
        }
        throw ValidationError("migrate copies sqlite:PATH and postgres://… stores, not \(location.redacted)")
    }
}
