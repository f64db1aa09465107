#ifndef TABSERVER_CZLIB_SHIM_H
#define TABSERVER_CZLIB_SHIM_H
#include <zlib.h>

/// deflateInit2 is a function-like macro (it passes ZLIB_VERSION and sizeof(z_stream) to deflateInit2_),
/// which Swift cannot import.
static inline int czlib_deflate_init2(z_streamp stream, int level, int method, int window_bits, int mem_level,
                                      int strategy) {
    return deflateInit2(stream, level, method, window_bits, mem_level, strategy);
}
#endif
