import Foundation

extension AccessToken {
    /// The token as `GET /v1/tokens` lists it (no secret, no hash) and `POST /v1/tokens` answers it (with the
    /// secret, once): `{"id", "name", "token"?, "scopes", "accounts", "environments", "expiresAt", "createdAt",
    /// "createdBy", "lastUsedAt", "revokedAt"}`; absent dates and `environments` (all) are null.
    public struct JSON: Encodable, Sendable {
        let token: AccessToken
        let secret: String?

        enum CodingKeys: String, CodingKey {
            case id, name, token, scopes, accounts, environments, expiresAt, createdAt, createdBy, lastUsedAt, revokedAt
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(token.id, forKey: .id)
            try container.encode(token.name, forKey: .name)
            try container.encodeIfPresent(secret, forKey: .token)
            try container.encode(token.scopes.sorted(), forKey: .scopes)
            try container.encode(token.accounts, forKey: .accounts)
            try container.encode(token.environments?.sorted(), forKey: .environments)
            try container.encode(token.expiresAt.map(RFC3339.string(from:)), forKey: .expiresAt)
            try container.encode(RFC3339.string(from: token.createdAt), forKey: .createdAt)
            try container.encode(token.createdBy, forKey: .createdBy)
            try container.encode(token.lastUsedAt.map(RFC3339.string(from:)), forKey: .lastUsedAt)
            try container.encode(token.revokedAt.map(RFC3339.string(from:)), forKey: .revokedAt)
        }
    }

    /// The listing form, without the secret.
    public var listed: JSON { JSON(token: self, secret: nil) }

    /// The form answered once, when `secret` was made for this token.
    public func issued(with secret: IssuedSecret) -> JSON { JSON(token: self, secret: secret.token) }
}
