import TabStore
import TabStorePostgres

/// Opens the store a `--store` URL names: `sqlite:PATH`, `memory:`, or `postgres://…`.
func openAnyStore(url: String) throws -> any TabStore {
    if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") { return try PostgresStore(url: url) }
    return try openStore(url: url)
}
