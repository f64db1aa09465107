import ArgumentParser
import Foundation
import TabRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// `tabserver healthcheck`: one `GET /healthz` to the local server, exit 0 on 200 and 1 otherwise; the
/// container image's `HEALTHCHECK` (the image has no curl). When the server speaks TLS (`TABSERVER_TLS_CERT`),
/// the probe has no TLS client: it checks only that the port accepts a connection, and says so.
struct Healthcheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Exit 0 when the local server answers GET /healthz with 200 within the timeout, 1 otherwise.",
        discussion: "With TLS (TABSERVER_TLS_CERT set) only a TCP connection to the port is checked.")

    @Option(help: "Address to ask (default: TABSERVER_HOST, or 127.0.0.1 when that is 0.0.0.0, :: or unset).") var host: String?
    @Option(help: "Port to ask (env TABSERVER_PORT; default 8080).") var port: UInt16?
    @Option(help: "Path to ask.") var path = "/healthz"
    @Option(help: "Seconds to wait for the whole answer.") var timeout = 2.0

    func run() throws {
        let environment = Environment()
        var address = host ?? environment["TABSERVER_HOST"] ?? "127.0.0.1"
        if address == "0.0.0.0" || address == "" { address = "127.0.0.1" }
        if address == "::" || address == "[::]" { address = "::1" }
        let port = try port ?? environment.integer("TABSERVER_PORT").map(UInt16.init) ?? 8080
        do {
            let probe = HealthProbe(host: address, port: port, timeout: timeout)
            if environment["TABSERVER_TLS_CERT"] != nil {
                try probe.accepts()
                return
            }
            let status = try probe.status(of: path)
            guard status == 200 else {
                FileHandle.standardError.write(Data("healthcheck: GET \(path) answered \(status)\n".utf8))
                throw ExitCode.failure
            }
        } catch let error as HealthProbeError {
            FileHandle.standardError.write(Data("healthcheck: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }
}
