import Logging

/// swift-log's `StreamLogHandler` with every metadata value and the message made safe to read as one line of
/// `key=value` fields: a value holding a space, `=`, a quote, a backslash or a control character is written in double
/// quotes with those escaped, and control and bidi characters become `\u{…}`. A token called `ops address=203.0.113.9`
/// or an alert reason with a newline cannot forge a field or a line (docs/security.md, review 4).
public struct QuotingLogHandler: LogHandler {
    private var inner: StreamLogHandler

    /// A handler writing to standard error, labelled `label`.
    public static func standardError(label: String) -> QuotingLogHandler {
        QuotingLogHandler(inner: StreamLogHandler.standardError(label: label))
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    public var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue.mapValues(Self.quoted) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue.map(Self.quoted) }
    }

    public func log(event: LogEvent) {
        var event = event
        event.message = "\(Self.escaped(event.message.description))"
        event.metadata = event.metadata?.mapValues(Self.quoted)
        inner.log(event: event)
    }

    /// A value as a field: quoted (and escaped) when it holds anything that could end or start a field.
    static func quoted(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(quoted(text))
        case .stringConvertible(let convertible): .string(quoted(convertible.description))
        case .array(let values): .array(values.map(quoted))
        case .dictionary(let values): .dictionary(values.mapValues(quoted))
        }
    }

    static func quoted(_ text: String) -> String {
        let plain =
            !text.isEmpty
            && text.unicodeScalars.allSatisfy { scalar in
                scalar.value > 0x20 && scalar.value != 0x7F && !"=\"\\".unicodeScalars.contains(scalar) && !isHidden(scalar)
            }
        if plain { return text }
        return "\"" + escaped(text).replacingAll("\"", with: "\\\"") + "\""
    }

    /// `text` with backslashes doubled and every control, format (bidi) or separator character written as `\u{…}`.
    static func escaped(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar == "\\" {
                out += "\\\\"
            } else if isHidden(scalar) {
                out += "\\u{" + String(scalar.value, radix: 16) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }
}

extension String {
    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for character in self { if character == target { out += replacement } else { out.append(character) } }
        return out
    }
}
