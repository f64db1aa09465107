import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A child process spoken to by lines on its standard input and output, every read with a deadline. Safety
/// (`@unchecked Sendable`): one test uses it from one task at a time.
public final class LineProcess: @unchecked Sendable {
    public let process = Process()
    let input = Pipe()
    let output = Pipe()
    private var buffered: [UInt8] = []

    public init(_ executable: String, _ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    public func writeLine(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }

    /// The next line of output, read on a thread of its own (the server's deferred replies need the pool).
    public func readLine(seconds: Double) async throws -> String { try await offPool { try self.readLineBlocking(seconds: seconds) } }

    private func readLineBlocking(seconds: Double) throws -> String {
        let fd = output.fileHandleForReading.fileDescriptor
        let deadline = now() + seconds
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let newline = buffered.firstIndex(of: 10) {
                defer { buffered.removeFirst(newline + 1) }
                return String(decoding: buffered[..<newline], as: UTF8.self)
            }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = deadline - now()
            guard left > 0, poll(&descriptor, 1, Int32(left * 1000)) > 0 else {
                throw RawConnection.Failure(description: "no line within \(seconds) s")
            }
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { throw RawConnection.Failure(description: "the process ended") }
            buffered.append(contentsOf: chunk[..<count])
        }
    }

    /// Ends the process (SIGKILL; it is ours) and waits for it.
    public func end() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
