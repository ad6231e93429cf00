/*
 * run_id.c - make, parse and print run ids (see run_id.h).  Used by the log
 * writer inside the program and by `memflow run` outside it.
 */
#include <stddef.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "checksum.h"
#include "run_id.h"

/* No entropy from the kernel (very early boot, seccomp): mix what differs
 * between processes and runs instead. */
static void fallback_bytes(uint8_t id[MF_RUN_ID_BYTES])
{
    struct timespec real, mono;
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    uint64_t mix[4] = { (uint64_t)real.tv_sec * 1000000000u + (uint64_t)real.tv_nsec,
                        (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec,
                        (uint64_t)getpid(), (uint64_t)(uintptr_t)id };
    for (int i = 0; i < 4; i++) {
        uint32_t crc = mf_crc32c((uint32_t)i, mix, sizeof mix);
        memcpy(id + 4 * i, &crc, 4);
    }
}

void mf_run_id_fresh(uint8_t id[MF_RUN_ID_BYTES])
{
    static const uint8_t zero[MF_RUN_ID_BYTES];
    if (getrandom(id, MF_RUN_ID_BYTES, GRND_NONBLOCK) != MF_RUN_ID_BYTES)
        fallback_bytes(id);
    if (memcmp(id, zero, sizeof zero) == 0)
        id[0] = 1;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int mf_run_id_parse(const char *hex, uint8_t id[MF_RUN_ID_BYTES])
{
    if (!hex || strlen(hex) != 2 * MF_RUN_ID_BYTES)
        return -1;
    for (size_t i = 0; i < MF_RUN_ID_BYTES; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        id[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

void mf_run_id_format(const uint8_t id[MF_RUN_ID_BYTES], char hex[MF_RUN_ID_HEX])
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < MF_RUN_ID_BYTES; i++) {
        hex[2 * i] = digits[id[i] >> 4];
        hex[2 * i + 1] = digits[id[i] & 15];
    }
    hex[2 * MF_RUN_ID_BYTES] = 0;
}
