/*
 * log_header.h - chunk 0 of a log: the file header and the program's
 * arguments, checked against the header's own checksum.
 *
 * A damaged header does not make a log unreadable.  static_check (CRC-32C
 * of version..host, run_id and the argv bytes; common/checksum.h) tells a
 * flipped byte from a genuine value: when it does not match, the one field
 * whose repair makes it match (argv_len from where the argv bytes end, a
 * version, chunk or header size off by one bit) is repaired and the repair
 * reported; otherwise the mismatch is reported and the fields are used with
 * their bounds enforced.  Only a file that is no memflow log at all, or one
 * of another version, is refused.
 */
#ifndef MEMFLOW_LOG_HEADER_H
#define MEMFLOW_LOG_HEADER_H

#include <stddef.h>
#include <stdint.h>

#include "damage.h"
#include "log_format.h"

typedef struct mf_log_meta {
    mf_file_header header;   /* as read, with the repairs described above */
    int argc;
    char **argv;             /* program and arguments (argc of them, NULL-terminated) */
    char *program;           /* argv joined with spaces ("" when none) */
    int checked;             /* 1: static_check matched (after a repair, if any) */
} mf_log_meta;

/*
 * Read chunk 0 (len bytes at bytes) of the log at path into meta.  Damage
 * goes to d.  Returns 0, or -1 with "PATH: why" in err when the file is no
 * memflow log or has another version (meta is then empty).
 */
int mf_log_header_parse(const char *path, const uint8_t *bytes, size_t len, mf_log_meta *meta,
                        mf_damage *d, char *err, size_t errlen);

/*
 * Take the dynamic fields (flags, chunks_claimed, end_*, dropped_events)
 * from a fresh copy of the header of a log being written; the rest stays.
 */
void mf_log_header_update(mf_log_meta *meta, const mf_file_header *fresh);

void mf_log_meta_free(mf_log_meta *meta);

#endif /* MEMFLOW_LOG_HEADER_H */
