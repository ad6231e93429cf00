/*
 * units.c - numbers for people (see units.h).
 */
#include <stdio.h>

#include "units.h"

/* value with 3 significant digits (at most 2 decimals) and its unit. */
static char *scaled(double value, const char *unit, char *out, size_t outlen)
{
    int decimals = value < 10 ? 2 : value < 100 ? 1 : 0;
    snprintf(out, outlen, "%.*f %s", decimals, value, unit);
    return out;
}

char *mf_format_bytes(uint64_t bytes, char *out, size_t outlen)
{
    static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    if (bytes < 1024) {
        snprintf(out, outlen, "%llu B", (unsigned long long)bytes);
        return out;
    }
    double value = (double)bytes / 1024.0;
    size_t unit = 0;
    while (value >= 999.5 && unit + 1 < sizeof units / sizeof units[0]) {
        value /= 1024.0;
        unit++;
    }
    return scaled(value, units[unit], out, outlen);
}

char *mf_format_time(uint64_t ns, char *out, size_t outlen)
{
    if (ns == 0) {
        snprintf(out, outlen, "0");
        return out;
    }
    if (ns < 1000) {
        snprintf(out, outlen, "%llu ns", (unsigned long long)ns);
        return out;
    }
    if (ns < 999995ull)
        return scaled((double)ns / 1e3, "us", out, outlen);
    if (ns < 999995000ull)
        return scaled((double)ns / 1e6, "ms", out, outlen);
    return scaled((double)ns / 1e9, "s", out, outlen);
}

char *mf_format_count(uint64_t count, char *out, size_t outlen)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)count);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < outlen; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
    return out;
}

char *mf_format_device_info(const char *name, const uint8_t uuid[16], uint32_t mig,
                            uint64_t total_bytes, char *out, size_t outlen)
{
    char total[32];
    int n = snprintf(out, outlen, "%s, GPU-%02x%02x%02x%02x", name, uuid[0], uuid[1], uuid[2],
                     uuid[3]);
    if (n >= 0 && (size_t)n < outlen && mig != UINT32_MAX)
        n += snprintf(out + n, outlen - (size_t)n, ", MIG %u/%u", mig >> 16, mig & 0xffff);
    if (n >= 0 && (size_t)n < outlen && total_bytes)
        snprintf(out + n, outlen - (size_t)n, ", %s",
                 mf_format_bytes(total_bytes, total, sizeof total));
    return out;
}
