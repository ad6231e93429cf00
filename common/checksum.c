/*
 * checksum.c - CRC-32C, bitwise-reflected polynomial 0x82f63b78.
 *
 * On x86-64 with SSE4.2 the crc32 instruction does 8 bytes a step; elsewhere
 * a 256-entry table built on first use does a byte a step.  Both give the
 * same values (checked in tests/check_runtime.c against the standard check
 * value of "123456789").  mf_header_static_check applies it to a log's
 * file header, for the writer and every reader alike.
 */
#include <stddef.h>
#include <string.h>

#include "checksum.h"

#define CRC32C_POLY 0x82f63b78u

static uint32_t table[256];
static int table_ready;

static void table_build(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        table[i] = c;
    }
    __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

static uint32_t crc_bytes(uint32_t crc, const unsigned char *p, size_t len)
{
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE))
        table_build();
    while (len--)
        crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc,
                                                            const unsigned char *p,
                                                            size_t len)
{
    uint64_t c = crc;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
    }
    uint32_t c32 = (uint32_t)c;
    for (; len; p++, len--)
        c32 = __builtin_ia32_crc32qi(c32, *p);
    return c32;
}
#endif

uint32_t mf_crc32c(uint32_t crc, const void *data, size_t len)
{
    const unsigned char *p = data;
    crc = ~crc;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2"))
        return ~crc_sse42(crc, p, len);
#endif
    return ~crc_bytes(crc, p, len);
}

uint32_t mf_header_static_check(const mf_file_header *h, const void *argv, size_t argv_len)
{
    mf_file_header fixed = *h;
    fixed.flags = 0;
    fixed.chunks_claimed = 0;
    const char *from = (const char *)&fixed.version;
    const char *to = (const char *)&fixed.host + sizeof fixed.host;
    uint32_t crc = mf_crc32c(0, from, (size_t)(to - from));
    crc = mf_crc32c(crc, fixed.run_id, sizeof fixed.run_id);
    return mf_crc32c(crc, argv, argv_len);
}
