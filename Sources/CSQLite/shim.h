#ifndef TABSERVER_CSQLITE_SHIM_H
#define TABSERVER_CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a cast macro ((sqlite3_destructor_type)-1) that Swift cannot import:
/// binding with it makes SQLite copy the bytes, which is what every bind here needs.
static inline int csqlite_bind_text_copy(sqlite3_stmt *stmt, int index, const char *text, int length) {
    return sqlite3_bind_text(stmt, index, text, length, SQLITE_TRANSIENT);
}

/// The blob twin of csqlite_bind_text_copy: SQLite copies the bytes before returning.
static inline int csqlite_bind_blob_copy(sqlite3_stmt *stmt, int index, const void *bytes, int length) {
    return sqlite3_bind_blob(stmt, index, bytes, length, SQLITE_TRANSIENT);
}
#endif
