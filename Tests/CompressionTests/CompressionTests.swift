import Compression
import Foundation
import Testing

/// A compiled layout the size of a real app's (20 tabs, JSON): what the server compresses at publish time.
let layoutJSON: [UInt8] = {
    let tabs = (0..<20).map { i in
        #"{"id":"tab\#(i)","title":"Onglet \#(i)","image":"icon\#(i)","rootViewController":"Tab\#(i)ViewController","badge":"\#(i)","params":{"url":"https://example.com/\#(i)","zoom":\#(i)}}"#
    }
    let document = ##"{"appearance":{"backgroundColor":"#F8F8F8","height":56},"maxVisibleTabs":5,"tabs":["##
    return Array((document + tabs.joined(separator: ",") + "]}").utf8)
}()

/// 3 MiB: text with long repeats and a pseudo-random stretch, so that the window and several blocks are used.
let largeInput: [UInt8] = {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(3 << 20)
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    while bytes.count < 3 << 20 {
        bytes.append(contentsOf: layoutJSON)
        for _ in 0..<4096 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            bytes.append(UInt8(truncatingIfNeeded: state >> 56))
        }
    }
    return Array(bytes.prefix(3 << 20))
}()

@Suite struct BrotliTests {
    @Test(arguments: [0, 1, 2, 5, 1000])
    func brotliCommandLineToolDecodesWhatWeEncode(repeats: Int) throws {
        let input = Array(repeating: layoutJSON, count: repeats).flatMap { $0 }
        let encoded = try brotli(input)
        #expect(try Tool.run("/usr/bin/brotli", ["-d", "-c"], input: encoded) == input)
    }

    @Test func textModeIsDecodedToTheSameBytes() throws {
        let encoded = try brotli(layoutJSON, mode: .text)
        #expect(try Tool.run("/usr/bin/brotli", ["-d", "-c"], input: encoded) == layoutJSON)
    }

    @Test func largeInputRoundTripsThroughTheCommandLineTool() throws {
        let encoded = try brotli(largeInput, quality: 5)
        #expect(encoded.count < largeInput.count)
        #expect(try Tool.run("/usr/bin/brotli", ["-d", "-c"], input: encoded) == largeInput)
    }

    /// nginx's `brotli_static` serves what `brotli -q 11` made: with the same window choice and mode, our bytes are
    /// those bytes, so a 200 from us is never larger than nginx's. (Empty input differs: see below.)
    @Test(arguments: [1, 3, 40])
    func bytesAreThoseOfTheBrotliToolAtQuality11(repeats: Int) throws {
        let input = Array(repeating: layoutJSON, count: repeats).flatMap { $0 }
        let tool = try Tool.run("/usr/bin/brotli", ["-q", "11", "-c"], input: input, asPath: true)
        #expect(try brotli(input, quality: 11) == tool)
    }

    @Test func sameInputGivesSameBytes() throws {
        #expect(try brotli(layoutJSON) == brotli(layoutJSON))
        #expect(try brotli(layoutJSON, mode: .text) == brotli(layoutJSON, mode: .text))
    }

    /// libbrotli's one-shot call writes the 1-byte empty stream; the tool's streaming encoder writes 2 bytes.
    @Test func emptyInputIsTheEmptyStream() throws {
        let encoded = try brotli([])
        #expect(encoded.count == 1)
        #expect(try encoded.count < Tool.run("/usr/bin/brotli", ["-q", "11", "-c"], input: [], asPath: true).count)
        #expect(try Tool.run("/usr/bin/brotli", ["-d", "-c"], input: encoded) == [])
    }

    @Test func qualityOutsideTheRangeIsATypedError() {
        #expect(throws: CompressionError.invalidParameter(name: "brotli quality", value: 12, accepted: 0...11)) {
            try brotli(layoutJSON, quality: 12)
        }
    }
}

@Suite struct GzipTests {
    @Test(arguments: [0, 1, 2, 5, 1000])
    func gzipAndPythonDecodeWhatWeEncode(repeats: Int) throws {
        let input = Array(repeating: layoutJSON, count: repeats).flatMap { $0 }
        let encoded = try gzip(input)
        #expect(try Tool.run("/usr/bin/gzip", ["-d", "-c"], input: encoded) == input)
        let python = "import gzip, sys; sys.stdout.buffer.write(gzip.decompress(sys.stdin.buffer.read()))"
        #expect(try Tool.run(Tool.python, ["-c", python], input: encoded) == input)
    }

    @Test func largeInputRoundTrips() throws {
        let encoded = try gzip(largeInput, level: 6)
        #expect(encoded.count < largeInput.count)
        #expect(try Tool.run("/usr/bin/gzip", ["-d", "-c"], input: encoded) == largeInput)
    }

    /// The header is fixed (mtime 0, no name, OS 3, XFL 2 at level 9): Python's `gzip.compress(…, mtime=0)` over
    /// the same zlib gives the same bytes.
    @Test(arguments: [0, 1, 40])
    func bytesAreThoseOfPythonGzipWithMtimeZero(repeats: Int) throws {
        let input = Array(repeating: layoutJSON, count: repeats).flatMap { $0 }
        let python = "import gzip, sys; sys.stdout.buffer.write(gzip.compress(sys.stdin.buffer.read(), 9, mtime=0))"
        let encoded = try gzip(input)
        #expect(Array(encoded.prefix(10)) == [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 2, 3])
        #expect(try Tool.run(Tool.python, ["-c", python], input: input) == encoded)
    }

    @Test func sameInputGivesSameBytes() throws {
        #expect(try gzip(layoutJSON) == gzip(layoutJSON))
    }

    @Test func emptyInputIsAnEmptyMember() throws {
        let encoded = try gzip([])
        #expect(encoded.count == 20)
        #expect(try Tool.run("/usr/bin/gzip", ["-d", "-c"], input: encoded) == [])
    }

    @Test func levelOutsideTheRangeIsATypedError() {
        #expect(throws: CompressionError.invalidParameter(name: "gzip level", value: -1, accepted: 0...9)) {
            try gzip(layoutJSON, level: -1)
        }
    }

    /// The figures the issue asks about: bytes of a 20-tab layout in each form (printed, and checked to shrink).
    @Test func compressedFormsOfALayoutAreSmaller() throws {
        let br = try brotli(layoutJSON)
        let brText = try brotli(layoutJSON, mode: .text)
        let gz = try gzip(layoutJSON)
        print("layout JSON: identity \(layoutJSON.count) B, br \(br.count) B (text mode \(brText.count) B), gzip \(gz.count) B")
        #expect(br.count < gz.count)
        #expect(gz.count < layoutJSON.count / 2)
    }
}

/// Runs a decoder or encoder of Debian's as a child process, input from a file, output read to the end, within a
/// deadline.
enum Tool {
    struct Failed: Error, CustomStringConvertible {
        let description: String
    }

    static var python: String {
        ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/bin/env"
    }

    /// - Parameter asPath: the input file's path goes last among the arguments (else it is standard input).
    static func run(
        _ executable: String, _ arguments: [String], input: [UInt8], asPath: Bool = false, deadline: Duration = .seconds(60)
    ) throws -> [UInt8] {
        let inputURL = FileManager.default.temporaryDirectory.appendingPathComponent("compression-test-\(UUID().uuidString)")
        try Data(input).write(to: inputURL)
        defer { try? FileManager.default.removeItem(at: inputURL) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = (executable == "/usr/bin/env" ? ["python3"] : []) + arguments + (asPath ? [inputURL.path] : [])
        process.standardInput = asPath ? FileHandle.nullDevice : try FileHandle(forReadingFrom: inputURL)
        let output = Pipe()
        process.standardOutput = output
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        // The deadline: a process still running then is stopped, which ends the read below.
        let watchdog = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(Int(deadline.components.seconds)), execute: watchdog)
        let bytes = output.fileHandleForReading.readDataToEndOfFile()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        watchdog.cancel()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw Failed(
                description: "\(executable) \(arguments) failed (\(process.terminationStatus)): \(String(decoding: message, as: UTF8.self))"
            )
        }
        return Array(bytes)
    }
}
