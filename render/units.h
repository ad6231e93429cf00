/*
 * units.h - numbers for people, the same in every output: bytes in binary
 * units (B, KiB, MiB, GiB, ...), times in ns, us, ms and s, counts with
 * thousands separators.  (MXNet's "Device Storage" table keeps its own kB =
 * 1000 bytes, labelled as such; everything else uses these.)
 */
#ifndef MEMFLOW_UNITS_H
#define MEMFLOW_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

/* "512 B", "5.00 KiB", "12.3 MiB", "300 GiB" (3 significant digits) into out. */
MF_EXPORT char *mf_format_bytes(uint64_t bytes, char *out, size_t outlen);

/* "0", "850 ns", "12.5 us", "1.23 ms", "4.56 s" into out. */
MF_EXPORT char *mf_format_time(uint64_t ns, char *out, size_t outlen);

/* "1,234,567" into out. */
MF_EXPORT char *mf_format_count(uint64_t count, char *out, size_t outlen);

/* What a GPU is, for people: "NVIDIA H100 80GB HBM3, GPU-1a2b3c4d, MIG 1/0,
 * 74.5 GiB" (model as given, the short UUID, the MIG instance when there is
 * one, the memory) into out; name is the model's text (raw: escape it for
 * the output). */
MF_EXPORT char *mf_format_device_info(const char *name, const uint8_t uuid[16], uint32_t mig,
                                      uint64_t total_bytes, char *out, size_t outlen);

#endif /* MEMFLOW_UNITS_H */
