/*
 * checksum.h - CRC-32C (Castagnoli), the one checksum of the log format:
 * the header's static_check, and the compact form's index.  The writer and
 * the reader both use this function, so they cannot disagree.
 */
#ifndef MEMFLOW_CHECKSUM_H
#define MEMFLOW_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "log_format.h"

/*
 * Continue the CRC-32C crc (0 to start) over len bytes at data; returns the
 * new value.  mf_crc32c(0, "123456789", 9) == 0xe3069283.  Calls no malloc.
 */
MF_EXPORT uint32_t mf_crc32c(uint32_t crc, const void *data, size_t len);

/*
 * The file header's static_check: CRC-32C of the header bytes from `version`
 * through `host` with `flags` and `chunks_claimed` counted as zero (they
 * change while the log grows), then `run_id`, then the argv_len argv bytes
 * that follow the header.  The log writer stores it; a reader recomputes it
 * from what it read.  Calls no malloc.
 */
MF_EXPORT uint32_t mf_header_static_check(const mf_file_header *h, const void *argv,
                                          size_t argv_len);

#endif /* MEMFLOW_CHECKSUM_H */
