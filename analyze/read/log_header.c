/*
 * log_header.c - parse and check chunk 0 (see log_header.h).
 *
 * The checksum covers the header from version through host, which includes
 * the two fields the recorder changes while it runs (flags, chunks_claimed):
 * it is accepted computed over them as they are, as they were when the log
 * was created (0 and 1), or as zero; static_check 0 means a writer that did
 * not compute it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "log_header.h"

#define HEADER_SIZE sizeof(mf_file_header)
#define CHECKED_END offsetof(mf_file_header, static_check)   /* version..run_id */

/* CRC of a header copy h with argv_len bytes of argv, flags/claimed set. */
static uint32_t crc_with(const mf_file_header *h, const uint8_t *argv, uint32_t argv_len,
                         uint32_t flags, uint64_t claimed)
{
    mf_file_header c = *h;
    c.flags = flags;
    c.chunks_claimed = claimed;
    uint32_t crc = mf_crc32c(0, (const uint8_t *)&c + 8, CHECKED_END - 8);
    return mf_crc32c(crc, argv, argv_len);
}

/* Does h (with its argv_len argv bytes) match its static_check? */
static int crc_matches(const mf_file_header *h, const uint8_t *bytes, size_t len)
{
    uint32_t argv_len = h->argv_len;
    if (argv_len > len - HEADER_SIZE)
        return 0;
    const uint8_t *argv = bytes + HEADER_SIZE;
    return crc_with(h, argv, argv_len, h->flags, h->chunks_claimed) == h->static_check ||
           crc_with(h, argv, argv_len, 0, 1) == h->static_check ||
           crc_with(h, argv, argv_len, 0, 0) == h->static_check;
}

static int one_bit_apart(uint32_t a, uint32_t b)
{
    uint32_t x = a ^ b;
    return x && !(x & (x - 1));
}

/* Where the argv bytes really end: after the last non-zero byte and its NUL. */
static uint32_t argv_extent(const uint8_t *bytes, size_t len)
{
    size_t end = len;
    while (end > HEADER_SIZE && bytes[end - 1] == 0)
        end--;
    if (end == HEADER_SIZE)
        return 0;
    return (uint32_t)(end + 1 - HEADER_SIZE);
}

/*
 * The checksum does not match: find the one field whose repair makes it
 * match, repair it in h and say so.  Returns 1 when repaired, 0 when not.
 */
static int repair(const char *path, mf_file_header *h, const uint8_t *bytes, size_t len,
                  mf_damage *d)
{
    uint32_t extent = argv_extent(bytes, len);
    for (uint32_t n = extent; n + 1 >= extent && n <= extent; n--) {
        mf_file_header fixed = *h;
        fixed.argv_len = n;
        if (n != h->argv_len && crc_matches(&fixed, bytes, len)) {
            mf_damage_add(d, path, offsetof(mf_file_header, argv_len),
                          "argv_len says %u bytes, the program's arguments are %u (the header "
                          "checksum agrees with %u)", h->argv_len, n, n);
            h->argv_len = n;
            return 1;
        }
        if (n == 0)
            break;
    }
    static const struct { size_t offset; uint32_t good; const char *name; } fields[] = {
        { offsetof(mf_file_header, version), MF_LOG_VERSION, "version" },
        { offsetof(mf_file_header, header_size), HEADER_SIZE, "header_size" },
        { offsetof(mf_file_header, chunk_size), MF_CHUNK_SIZE, "chunk_size" },
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        uint32_t v;
        memcpy(&v, (const char *)h + fields[i].offset, 4);
        if (!one_bit_apart(v, fields[i].good))   /* a flip, not a genuine value */
            continue;
        mf_file_header fixed = *h;
        memcpy((char *)&fixed + fields[i].offset, &fields[i].good, 4);
        if (crc_matches(&fixed, bytes, len)) {
            mf_damage_add(d, path, fields[i].offset, "%s is %u, the header checksum says %u",
                          fields[i].name, v, fields[i].good);
            *h = fixed;
            return 1;
        }
    }
    return 0;
}

static int split_argv(mf_log_meta *meta, const uint8_t *bytes, uint32_t len)
{
    int argc = 0;
    for (uint32_t i = 0; i < len; i++)
        argc += bytes[i] == 0;
    if (len && bytes[len - 1] != 0)
        argc++;
    meta->argv = calloc((size_t)argc + 1, sizeof *meta->argv);
    meta->program = malloc((size_t)len + 1);
    if (!meta->argv || !meta->program)
        return -1;
    uint32_t at = 0;
    size_t used = 0;
    for (int i = 0; i < argc; i++) {
        uint32_t n = 0;
        while (at + n < len && bytes[at + n])
            n++;
        if (!(meta->argv[i] = strndup((const char *)bytes + at, n)))
            return -1;
        meta->argc = i + 1;
        if (i)
            meta->program[used++] = ' ';
        memcpy(meta->program + used, bytes + at, n);
        used += n;
        at += n + 1;
    }
    meta->program[used] = 0;
    return 0;
}

/* The magic, allowing one damaged byte when the checksum vouches for the rest. */
static int magic_ok(const uint8_t *bytes, size_t len, int *damaged)
{
    int differ = 0;
    for (int i = 0; i < 8; i++)
        differ += bytes[i] != (uint8_t)MF_LOG_MAGIC[i];
    *damaged = differ == 1;
    if (differ == 0)
        return 1;
    if (differ > 1 || len < HEADER_SIZE)
        return 0;
    mf_file_header h;
    memcpy(&h, bytes, HEADER_SIZE);
    return h.static_check != 0 && crc_matches(&h, bytes, len);
}

/* Bounds of fields the checksum does not cover. */
static void check_dynamic(const char *path, mf_file_header *h, mf_damage *d)
{
    if (h->end_how > MF_END_SNAPSHOT) {
        mf_damage_add(d, path, offsetof(mf_file_header, end_how),
                      "unknown end_how %u (expected 0..6); how the process ended is unknown",
                      h->end_how);
        h->end_how = MF_END_UNKNOWN;
    }
    if (!(h->flags & MF_HEADER_DROPPED))
        return;
    char count[48] = "";
    if (h->dropped_events)
        snprintf(count, sizeof count, " (%llu events)", (unsigned long long)h->dropped_events);
    mf_damage_add(d, path, offsetof(mf_file_header, flags),
                  "the recorder could not grow the log (disk full or file size limit): "
                  "events were dropped%s", count);
}

int mf_log_header_parse(const char *path, const uint8_t *bytes, size_t len, mf_log_meta *meta,
                        mf_damage *d, char *err, size_t errlen)
{
    memset(meta, 0, sizeof *meta);
    int magic_damaged = 0;
    if (len < 8 || !magic_ok(bytes, len, &magic_damaged)) {
        snprintf(err, errlen, "%s: not a memflow log (no MEMFLOW magic at offset 0)", path);
        return -1;
    }
    if (len < HEADER_SIZE) {
        snprintf(err, errlen, "%s: offset %zu: file ends inside the %zu-byte header", path, len,
                 HEADER_SIZE);
        return -1;
    }
    mf_file_header *h = &meta->header;
    memcpy(h, bytes, HEADER_SIZE);
    if (magic_damaged)
        mf_damage_add(d, path, 0, "one byte of the MEMFLOW magic is damaged (the header "
                      "checksum vouches for the rest)");
    if (h->static_check && !crc_matches(h, bytes, len) && !repair(path, h, bytes, len, d))
        mf_damage_add(d, path, offsetof(mf_file_header, static_check),
                      "the header checksum 0x%08x does not match the header (pid, program "
                      "arguments or run id may be wrong)", h->static_check);
    else
        meta->checked = h->static_check != 0;
    if (h->version != MF_LOG_VERSION) {
        snprintf(err, errlen, "%s: offset 8: log version %u, this memflow reads version %u",
                 path, h->version, MF_LOG_VERSION);
        return -1;
    }
    if (h->chunk_size != MF_CHUNK_SIZE) {
        snprintf(err, errlen, "%s: offset 16: chunk size %u, this memflow reads %u", path,
                 h->chunk_size, MF_CHUNK_SIZE);
        return -1;
    }
    if (h->header_size != HEADER_SIZE)
        mf_damage_add(d, path, offsetof(mf_file_header, header_size),
                      "header_size %u, expected %zu", h->header_size, HEADER_SIZE);
    if (h->argv_len > len - HEADER_SIZE) {
        mf_damage_add(d, path, offsetof(mf_file_header, argv_len),
                      "argv_len %u runs past the header chunk (%zu bytes there)", h->argv_len,
                      len - HEADER_SIZE);
        h->argv_len = (uint32_t)(len - HEADER_SIZE);
    }
    check_dynamic(path, h, d);
    if (split_argv(meta, bytes + HEADER_SIZE, h->argv_len) < 0) {
        mf_log_meta_free(meta);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    return 0;
}

void mf_log_header_update(mf_log_meta *meta, const mf_file_header *fresh)
{
    mf_file_header *h = &meta->header;
    h->flags = fresh->flags;
    h->chunks_claimed = fresh->chunks_claimed;
    h->end_how = fresh->end_how <= MF_END_SNAPSHOT ? fresh->end_how : MF_END_UNKNOWN;
    h->end_ns = fresh->end_ns;
    h->end_status = fresh->end_status;
    h->dropped_events = fresh->dropped_events;
}

void mf_log_meta_free(mf_log_meta *meta)
{
    for (int i = 0; meta->argv && i < meta->argc; i++)
        free(meta->argv[i]);
    free(meta->argv);
    free(meta->program);
    memset(meta, 0, sizeof *meta);
}
