#ifndef NEWSPUSH_CSQLITE_SHIM_H
#define NEWSPUSH_CSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import:
// these wrappers bind text and blobs that SQLite copies before the call returns.
static inline int np_sqlite3_bind_text_transient(sqlite3_stmt *s, int i, const char *text, int bytes) {
    return sqlite3_bind_text(s, i, text, bytes, SQLITE_TRANSIENT);
}
static inline int np_sqlite3_bind_blob_transient(sqlite3_stmt *s, int i, const void *data, int bytes) {
    return sqlite3_bind_blob(s, i, data, bytes, SQLITE_TRANSIENT);
}

#endif
