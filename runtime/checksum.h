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

/*
 * Continue the CRC-32C crc (0 to start) over len bytes at data; returns the
 * new value.  mf_crc32c(0, "123456789", 9) == 0xe3069283.  Calls no malloc.
 */
MF_EXPORT uint32_t mf_crc32c(uint32_t crc, const void *data, size_t len);

#endif /* MEMFLOW_CHECKSUM_H */
