import TabJSON

/// The body of `POST …/layout/versions/{n}/revoke`: `{"reason"}`.
public enum RevokeRequest {
    /// The most a kept reason holds, in UTF-8 bytes (after the characters below are taken out).
    public static let maximumReasonBytes = 2048

    /// The reason, with control, format (bidi overrides and isolates, zero-width marks) and line or paragraph
    /// separator characters taken out, and surrounding spaces trimmed: what the versions list, the audit log, the
    /// events and the console show.
    /// - Throws: ``RolloutError/invalidBody(_:)`` (422) when the body is not `{"reason": string}`, the reason is empty
    ///   once cleaned, or longer than ``maximumReasonBytes``.
    public static func reason(from body: [UInt8]) throws(RolloutError) -> String {
        let object = try BodyReader.object(body, limit: 64 * 1024, emptyIsObject: true)
        var reader = BodyReader()
        reader.refuseUnknown(object, known: ["reason"], at: "")
        var reason = ""
        if let value = object["reason"] {
            if let text = reader.string(value, at: "/reason", maximumLength: 64 * 1024) {
                reason = cleaned(text)
                if reason.isEmpty {
                    reader.fail("/reason", "must say why (it is empty once control and bidi characters are taken out)")
                } else if reason.utf8.count > maximumReasonBytes {
                    reader.fail("/reason", "is longer than \(maximumReasonBytes) bytes of UTF-8")
                }
            }
        } else {
            reader.fail("/reason", "is required: say why the version is revoked")
        }
        try reader.finish()
        return reason
    }

    /// `text` without control, format and separator characters, trimmed of spaces.
    public static func cleaned(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator: continue
            default: scalars.append(scalar)
            }
        }
        return String(scalars).trimmingSpaces()
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }
}
