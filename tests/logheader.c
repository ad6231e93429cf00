/*
 * logheader.c - print a log's file header, read with plain pread() and
 * common/log_format.h alone (no reader), for the reliability tests.
 *
 * One "key=value" per line: version, flags, chunks_claimed, file_size,
 * allocated (bytes of disk blocks the file holds), pid, ppid, run_id (32 hex
 * digits), static_check, check_ok (1 when static_check matches the header
 * and argv as read), end_how, end_ns, end_status, dropped_events and the
 * chunk indexes below chunks_claimed whose chunk header is missing
 * (holes=N) - in a compact log (flags bit 2), whose frame is missing (its
 * frame headers walked from the end of the argv: docs/FORMAT.md).
 * Usage: logheader LOG   (exit 1 if it cannot be read or has no magic)
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "compact_layout.h"
#include "log_format.h"

static char argv_bytes[MF_CHUNK_SIZE];

/* Chunks below chunks_claimed whose chunk header has no magic. */
static unsigned long long count_holes(int fd, uint64_t claimed, uint64_t size)
{
    unsigned long long holes = 0;
    for (uint64_t i = 1; i < claimed; i++) {
        mf_chunk_header ch = { 0 };
        if (i * MF_CHUNK_SIZE >= size ||
            pread(fd, &ch, sizeof ch, (off_t)(i * MF_CHUNK_SIZE)) != (ssize_t)sizeof ch ||
            ch.magic != MF_CHUNK_MAGIC || ch.index != i)
            holes++;
    }
    return holes;
}

/* The same for a compact log: chunks below claimed with no frame (a frame
 * header holds when its magic and CRC-32C do; the walk stops at the first
 * that does not: the index). */
static unsigned long long count_compact_holes(int fd, uint64_t claimed, uint64_t at)
{
    static uint8_t seen[1 << 20];  /* chunk indexes below 2^20 (1 TiB of live log) */
    memset(seen, 0, sizeof seen);
    mf_compact_frame f;
    while (pread(fd, &f, sizeof f, (off_t)at) == (ssize_t)sizeof f &&
           memcmp(f.magic, MF_COMPACT_FRAME_MAGIC, 4) == 0 &&
           f.header_check == mf_compact_frame_sum(&f)) {
        if (f.index < sizeof seen)
            seen[f.index] = 1;
        at += sizeof f + f.payload_size;
    }
    unsigned long long holes = 0;
    for (uint64_t i = 1; i < claimed; i++)
        holes += i >= sizeof seen || !seen[i];
    return holes;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: logheader LOG\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
    mf_file_header h;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h ||
        memcmp(h.magic, MF_LOG_MAGIC, 8) != 0) {
        fprintf(stderr, "logheader: %s: not a readable memflow log\n", argv[1]);
        return 1;
    }
    uint32_t argv_len = h.argv_len < sizeof argv_bytes ? h.argv_len : 0;
    ssize_t got = pread(fd, argv_bytes, argv_len, sizeof h);
    int check_ok = got == (ssize_t)argv_len &&
                   mf_header_static_check(&h, argv_bytes, argv_len) == h.static_check;
    printf("version=%u\nflags=%u\nchunks_claimed=%llu\nfile_size=%llu\nallocated=%llu\n",
           h.version, h.flags, (unsigned long long)h.chunks_claimed,
           (unsigned long long)st.st_size, (unsigned long long)st.st_blocks * 512);
    printf("pid=%llu\nppid=%llu\nrun_id=", (unsigned long long)h.pid,
           (unsigned long long)h.ppid);
    for (size_t i = 0; i < sizeof h.run_id; i++)
        printf("%02x", h.run_id[i]);
    printf("\nstatic_check=%08x\ncheck_ok=%d\n", h.static_check, check_ok);
    printf("end_how=%u\nend_ns=%llu\nend_status=%lld\ndropped_events=%llu\n", h.end_how,
           (unsigned long long)h.end_ns, (long long)h.end_status,
           (unsigned long long)h.dropped_events);
    printf("holes=%llu\n", h.flags & MF_HEADER_COMPACT
                                ? count_compact_holes(fd, h.chunks_claimed, sizeof h + argv_len)
                                : count_holes(fd, h.chunks_claimed, (uint64_t)st.st_size));
    close(fd);
    return 0;
}
