import ArgumentParser
import Foundation
import TabClient

/// `tabs-watch URL`: prints an account's tab bar as text, and again each time the server changes it.
@main
struct TabsWatch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tabs-watch",
        abstract: "Print an account's tab bar as text, and again whenever the server changes it (long-poll).")

    @Argument(help: "The tabserver, e.g. http://127.0.0.1:8080.") var server: String
    @Option(help: "The account (default: default).") var account = "default"
    @Option(help: "A preferred locale, best first; repeat for more (default: the process's preferred languages).")
    var locale: [String] = []
    @Option(help: "Sent as X-Client-Platform: iphone, ipad, mac, tv, vision, android.") var platform: String?
    @Option(help: "Sent as X-App-Version.") var appVersion: String?
    @Option(help: "A …/tabs/bundle file to start from (default: download it from the server).") var bundle: String?
    @Option(help: "Keep the last good layout in this directory (default: memory only).") var cache: String?
    @Option(help: "Seconds the server may hold each long-poll.") var wait = 50

    func validate() throws {
        guard let url = URL(string: server), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw ValidationError("'\(server)' is not an http(s) URL")
        }
        guard (1...3600).contains(wait) else { throw ValidationError("--wait is 1 to 3600 seconds") }
    }

    func run() async throws {
        var configuration = TabClientConfiguration(
            server: URL(string: server)!, account: account,
            preferredLanguages: locale.isEmpty ? Locale.preferredLanguages : locale, platform: platform,
            appVersion: appVersion, cacheDirectory: cache.map { URL(fileURLWithPath: $0, isDirectory: true) },
            longPollWait: .seconds(wait))
        configuration.onEvent = { event in
            switch event {
            case .failed(let error, let retryIn, let kept):
                let retry = retryIn.map { String(format: "; retrying in %.1f s", $0.seconds) } ?? ""
                standardError("tabs-watch: \(error)\(retry); showing \(kept)")
            case .cacheIgnored(let error, let shown):
                standardError("tabs-watch: ignored the cache file: \(error); showing \(shown)")
            case .droppedOlder(let dropped, let kept):
                standardError("tabs-watch: dropped \(dropped), older than \(kept)")
            case .droppedOlderManifest(let revision, let kept):
                standardError("tabs-watch: dropped manifest revision \(revision), older than \(kept)")
            case .reverted(let version, let reason, let shown):
                standardError("tabs-watch: reverted version \(version) (\(reason)), blocked it; showing \(shown)")
            case .blocked(let refused, let kept):
                standardError("tabs-watch: blocked \(refused) (blocked or revoked); showing \(kept)")
            case .revoked(let version, let shown):
                standardError("tabs-watch: version \(version) revoked; showing \(shown)")
            case .requestSent, .notModified, .unchanged, .updated:
                break
            }
        }
        let client = try TabClient(configuration: configuration, bundle: try await startingBundle(configuration))
        // Revalidate once before the first print, so that its header says whether the server agrees (a failure is
        // reported by onEvent, and the bundled or cached layout is printed).
        _ = try? await client.refresh()
        // Printed is rendered, for a watcher: the launch guard must not undo what it showed.
        standardOutput(TabBarText.render(client.current, etag: client.validators.first, source: "\(client.source)"))
        client.markRendered()
        for await layout in client.updates() {
            standardOutput(TabBarText.render(layout, etag: client.validators.first, source: "\(client.source)"))
            client.markRendered()
        }
    }

    /// `--bundle FILE`, else `…/tabs/bundle` from the server, retried with backoff until it answers.
    private func startingBundle(_ configuration: TabClientConfiguration) async throws -> LayoutBundle {
        if let bundle { return try LayoutBundle.load(contentsOf: URL(fileURLWithPath: bundle)) }
        var delay = Duration.seconds(1)
        while true {
            do {
                return try await TabClient.downloadBundle(configuration)
            } catch .unexpectedStatus(let status, let detail, _) where (400..<500).contains(status) {
                throw ValidationError("the server refused \(configuration.account)'s bundle: HTTP \(status) \(detail ?? "")")
            } catch {
                // The error's text is not a format: a server's % would be read as one.
                standardError("tabs-watch: \(error); retrying in " + String(format: "%.0f s", delay.seconds))
                try await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(30))
            }
        }
    }
}

/// Text on standard output, written at once (`print` would sit in a buffer when the output is a pipe).
func standardOutput(_ text: String) {
    FileHandle.standardOutput.write(Data(text.utf8))
}

/// A line on standard error (standard output carries the tab bars only), at most ``maximumLineBytes``: the client's errors
/// quote a few hundred bytes of an answer, escaped, and an ETag or a layout name in a line stays within that too.
func standardError(_ line: String) {
    var bytes = Data(line.utf8)
    if bytes.count > maximumLineBytes { bytes = bytes.prefix(maximumLineBytes) + Data("…".utf8) }
    FileHandle.standardError.write(bytes + Data("\n".utf8))
}

/// The longest line `tabs-watch` writes on standard error, in bytes.
let maximumLineBytes = 1024

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
