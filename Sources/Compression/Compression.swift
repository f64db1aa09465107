internal import CBrotli
internal import CZlib

/// Why a body could not be compressed.
public enum CompressionError: Error, Equatable, CustomStringConvertible {
    /// The input is larger than the encoder accepts in one call (`limit` bytes).
    case inputTooLarge(count: Int, limit: Int)
    /// A parameter is outside the range the encoder accepts.
    case invalidParameter(name: String, value: Int, accepted: ClosedRange<Int>)
    /// libbrotli's `BrotliEncoderCompress` returned `BROTLI_FALSE`.
    case brotliFailed(inputCount: Int)
    /// A zlib call returned `code` (`Z_MEM_ERROR`, `Z_STREAM_ERROR`, …); `message` is zlib's own text when it gave one.
    case zlibFailed(call: String, code: Int32, message: String?)

    public var description: String {
        switch self {
        case .inputTooLarge(let count, let limit): "cannot compress \(count) bytes in one call (the limit is \(limit))"
        case .invalidParameter(let name, let value, let accepted):
            "\(name) \(value) is outside \(accepted.lowerBound)...\(accepted.upperBound)"
        case .brotliFailed(let inputCount): "BrotliEncoderCompress failed on \(inputCount) bytes"
        case .zlibFailed(let call, let code, let message): "\(call) returned \(code)\(message.map { ": \($0)" } ?? "")"
        }
    }
}

/// How libbrotli models the input (`BrotliEncoderMode`).
public enum BrotliMode: Sendable {
    /// No assumption about the input (`BROTLI_MODE_GENERIC`), as the `brotli` command line tool uses.
    case generic
    /// UTF-8 text (`BROTLI_MODE_TEXT`).
    case text
}

/// The brotli form of `bytes` (RFC 7932), made in one call to libbrotli.
///
/// The window is the smallest that covers the input (10 to 24 bits), as the `brotli` command line tool picks it for a
/// file, so with `mode: .generic` the bytes are those of `brotli -q <quality>` on a file with the same content. The
/// same input always gives the same bytes.
/// - Parameters:
///   - bytes: the body to compress; empty gives the one-byte empty stream.
///   - quality: 0 (fastest) to 11 (smallest).
///   - mode: how the encoder models the input.
/// - Throws: ``CompressionError/invalidParameter(name:value:accepted:)`` for a quality outside 0...11,
///   ``CompressionError/inputTooLarge(count:limit:)`` when libbrotli cannot bound the output, and
///   ``CompressionError/brotliFailed(inputCount:)`` when the encoder fails.
public func brotli(_ bytes: [UInt8], quality: Int = 11, mode: BrotliMode = .generic) throws(CompressionError) -> [UInt8] {
    guard (0...11).contains(quality) else { throw .invalidParameter(name: "brotli quality", value: quality, accepted: 0...11) }
    let capacity = BrotliEncoderMaxCompressedSize(bytes.count)
    // 0 means the input is too large for the encoder to bound its output (above 2^30 bytes or so in libbrotli 1.0.9).
    guard capacity > 0 || bytes.isEmpty else { throw .inputTooLarge(count: bytes.count, limit: 1 << 30) }
    let encoderMode = mode == .generic ? BROTLI_MODE_GENERIC : BROTLI_MODE_TEXT
    var output = [UInt8](repeating: 0, count: max(capacity, 2))
    var outputCount = output.count
    let ok = bytes.withUnsafeBufferPointer { input in
        output.withUnsafeMutableBufferPointer { out in
            BrotliEncoderCompress(
                Int32(quality), Int32(brotliWindowBits(forCount: bytes.count)), encoderMode, input.count, input.baseAddress,
                &outputCount, out.baseAddress)
        }
    }
    guard ok == BROTLI_TRUE else { throw .brotliFailed(inputCount: bytes.count) }
    output.removeSubrange(outputCount...)
    return output
}

/// The window of the `brotli` tool for a file of `count` bytes: the smallest whose backward limit
/// (`2^bits - 16`) covers it, between `BROTLI_MIN_WINDOW_BITS` and `BROTLI_MAX_WINDOW_BITS`.
func brotliWindowBits(forCount count: Int) -> Int {
    var bits = Int(BROTLI_MIN_WINDOW_BITS)
    while (1 << bits) - 16 < count, bits < Int(BROTLI_MAX_WINDOW_BITS) { bits += 1 }
    return bits
}

/// The gzip form of `bytes` (RFC 1952), made by zlib's deflate with a gzip wrapper (`windowBits` 31).
///
/// The header is fixed so that the same input always gives the same bytes on every platform: no name, modification
/// time 0, operating system 3 (Unix, whatever the build's platform), as GNU gzip and Python's
/// `gzip.compress(data, mtime=0)` write it; the extra-flags byte is zlib's (2 at level 9).
/// - Parameters:
///   - bytes: the body to compress; empty gives the 20-byte empty member.
///   - level: 0 (stored) to 9 (smallest).
/// - Throws: ``CompressionError/invalidParameter(name:value:accepted:)`` for a level outside 0...9,
///   ``CompressionError/inputTooLarge(count:limit:)`` above 4 GiB - 1 (zlib counts in `uInt`), and
///   ``CompressionError/zlibFailed(call:code:message:)`` when zlib fails.
public func gzip(_ bytes: [UInt8], level: Int = 9) throws(CompressionError) -> [UInt8] {
    guard (0...9).contains(level) else { throw .invalidParameter(name: "gzip level", value: level, accepted: 0...9) }
    guard bytes.count <= Int(UInt32.max) else { throw .inputTooLarge(count: bytes.count, limit: Int(UInt32.max)) }
    // zlib keeps a pointer back to the stream (deflateStateCheck compares it), so the stream must not move:
    // it lives in memory of its own, released below after deflateEnd.
    let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    stream.initialize(to: z_stream())
    // deflate reads the header when it writes it (during the first deflate call), so it too must stay put until then.
    let header = UnsafeMutablePointer<gz_header>.allocate(capacity: 1)
    header.initialize(to: gz_header())
    defer {
        header.deinitialize(count: 1)
        header.deallocate()
        stream.deinitialize(count: 1)
        stream.deallocate()
    }
    // windowBits 15 + 16: a gzip wrapper around a 32 KiB window; memLevel 8 is zlib's default (as deflateInit uses).
    var code = czlib_deflate_init2(stream, Int32(level), Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY)
    guard code == Z_OK else { throw zlibError("deflateInit2", code, stream) }
    // Paired with deflateInit2 above: frees zlib's internal state whatever happens below.
    defer { deflateEnd(stream) }
    header.pointee.time = 0
    header.pointee.os = 3
    header.pointee.text = 0
    code = deflateSetHeader(stream, header)
    guard code == Z_OK else { throw zlibError("deflateSetHeader", code, stream) }
    let capacity = Int(deflateBound(stream, uLong(bytes.count)))
    var output = [UInt8](repeating: 0, count: capacity)
    var produced = 0
    code = bytes.withUnsafeBufferPointer { input in
        output.withUnsafeMutableBufferPointer { out in
            // zlib does not write through next_in; the mutable pointer is only its C signature.
            stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.pointee.avail_in = uInt(input.count)
            stream.pointee.next_out = out.baseAddress
            stream.pointee.avail_out = uInt(out.count)
            // deflateBound covers the whole output, so one Z_FINISH call ends the stream.
            let code = deflate(stream, Z_FINISH)
            produced = out.count - Int(stream.pointee.avail_out)
            stream.pointee.next_in = nil
            stream.pointee.next_out = nil
            return code
        }
    }
    guard code == Z_STREAM_END else { throw zlibError("deflate(Z_FINISH)", code, stream) }
    output.removeSubrange(produced...)
    return output
}

private func zlibError(_ call: String, _ code: Int32, _ stream: UnsafeMutablePointer<z_stream>) -> CompressionError {
    .zlibFailed(call: call, code: code, message: stream.pointee.msg.map { String(cString: $0) })
}
