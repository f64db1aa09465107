#ifndef TABSERVER_CLIBPQ_SHIM_H
#define TABSERVER_CLIBPQ_SHIM_H
#include <libpq-fe.h>

/// PG_DIAG_SQLSTATE is a character macro ('C') that Swift imports as an Int32 of the wrong kind for
/// PQresultErrorField: this reads the SQLSTATE of a failed result.
static inline const char *cpq_sqlstate(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_SQLSTATE);
}
#endif
