internal import CLibPQ
import TabStore

#if canImport(Glibc)
    import Glibc
#endif

/// A parameter or a result value.
enum PGValue {
    case null
    case text(String)
    /// A `bytea` parameter, sent in binary.
    case bytes([UInt8])
    /// A result column's raw text (bytea arrives as `\x…` hex).
    case raw([UInt8])

    static func optional(_ text: String?) -> PGValue { text.map { .text($0) } ?? .null }

    var text: String? {
        switch self {
        case .text(let s): s
        case .raw(let bytes): String(decoding: bytes, as: UTF8.self)
        case .null, .bytes: nil
        }
    }

    /// A `bytea` column in text format (`\x` + hex) as bytes.
    var bytea: [UInt8] {
        guard case .raw(let bytes) = self, bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x") else {
            return []
        }
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count - 2) / 2)
        var i = 2
        func nibble(_ c: UInt8) -> UInt8 { c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x61 + 10 }
        while i + 1 < bytes.count {
            out.append(nibble(bytes[i]) << 4 | nibble(bytes[i + 1]))
            i += 2
        }
        return out
    }
}

/// One libpq connection. Safety (`@unchecked Sendable`): used by one thread at a time (under the store's
/// `Mutex`, or by the listener thread that owns it).
final class PGConnection: @unchecked Sendable {
    private let connection: OpaquePointer

    init(url: String) throws(StoreError) {
        guard let connection = PQconnectdb(url) else { throw .unavailable("libpq could not allocate a connection") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(connection)).trimmingCharacters()
            PQfinish(connection)
            throw .unavailable("cannot connect to PostgreSQL: \(message)")
        }
        self.connection = connection
        _ = try? execute("SET client_min_messages TO WARNING")
    }

    deinit { PQfinish(connection) }

    /// Reconnects when the server dropped the connection (a restart, a failover).
    private func ensureConnected() {
        if PQstatus(connection) != CONNECTION_OK { PQreset(connection) }
    }

    /// Runs one statement with `$n` parameters; rows come back as text (bytea as hex).
    /// - Throws: ``StoreError/conflict`` on a unique violation, ``StoreError/diskFull(_:)`` when the server's disk is
    ///   full (SQLSTATE 53100), ``StoreError/unavailable(_:)`` otherwise.
    func execute(_ sql: String, _ parameters: [PGValue] = []) throws(StoreError) -> [[PGValue]] {
        ensureConnected()
        var values: [UnsafeMutablePointer<CChar>?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        defer { for value in values { free(value) } }
        for parameter in parameters {
            switch parameter {
            case .null, .raw:
                values.append(nil)
                lengths.append(0)
                formats.append(0)
            case .text(let text):
                values.append(strdup(text))
                lengths.append(0)
                formats.append(0)
            case .bytes(let bytes):
                let buffer = malloc(max(bytes.count, 1))!.assumingMemoryBound(to: CChar.self)
                bytes.withUnsafeBytes { if let base = $0.baseAddress { memcpy(buffer, base, bytes.count) } }
                values.append(buffer)
                lengths.append(Int32(bytes.count))
                formats.append(1)
            }
        }
        // Without parameters, PQexec: it also runs several statements (the migrations) in one call.
        let result =
            parameters.isEmpty
            ? PQexec(connection, sql)
            : values.withUnsafeBufferPointer { valuePointers in
                valuePointers.withMemoryRebound(to: UnsafePointer<CChar>?.self) { constValues in
                    PQexecParams(connection, sql, Int32(parameters.count), nil, constValues.baseAddress, lengths, formats, 0)
                }
            }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK else {
            let message = "PostgreSQL: \(String(cString: PQresultErrorMessage(result)).trimmingCharacters())"
            switch cpq_sqlstate(result).map({ String(cString: $0) }) {
            case "23505": throw .conflict  // unique_violation
            case "53100": throw .diskFull(message)  // disk_full: "could not extend file"
            default: throw .unavailable(message)
            }
        }
        var rows: [[PGValue]] = []
        let columns = PQnfields(result)
        for row in 0..<PQntuples(result) {
            rows.append(
                (0..<columns).map { column in
                    if PQgetisnull(result, row, column) == 1 { return .null }
                    let length = Int(PQgetlength(result, row, column))
                    return .raw(Array(UnsafeRawBufferPointer(start: PQgetvalue(result, row, column), count: length)))
                })
        }
        return rows
    }

    /// Runs `body` between BEGIN and COMMIT; rolls back when it throws.
    func transaction<R>(_ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        _ = try execute("BEGIN")
        do {
            let result = try body()
            _ = try execute("COMMIT")
            return result
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
    }

    /// Waits until the socket has data or `milliseconds` pass; false when the connection is broken.
    func waitForNotifications(milliseconds: Int32) -> Bool {
        let socket = PQsocket(connection)
        guard socket >= 0 else { return false }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        _ = poll(&descriptor, 1, milliseconds)
        return PQconsumeInput(connection) == 1
    }

    /// The payloads of the notifications received so far.
    func takeNotifications() -> [String] {
        var payloads: [String] = []
        while let notification = PQnotifies(connection) {
            payloads.append(String(cString: notification.pointee.extra))
            PQfreemem(notification)
        }
        return payloads
    }
}

extension String {
    func trimmingCharacters() -> String {
        var text = self
        while let last = text.last, last.isWhitespace { text.removeLast() }
        return text
    }
}
