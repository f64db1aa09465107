#ifndef TABSERVER_CBROTLI_SHIM_H
#define TABSERVER_CBROTLI_SHIM_H
// The encoder half of libbrotli (Debian: libbrotli-dev, pkg-config libbrotlienc). Nothing needs wrapping:
// BrotliEncoderCompress and BrotliEncoderMaxCompressedSize import into Swift as they are.
#include <brotli/encode.h>
#endif
