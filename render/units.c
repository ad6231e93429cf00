/*
 * units.c - numbers for people (see units.h).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "units.h"

/* Text built piece by piece into out (outlen bytes, NUL-terminated, cut
 * like snprintf cuts): the outputs format tens of thousands of numbers, and
 * printf's general machinery costs more than everything else they do. */
typedef struct text {
    char *out;
    size_t len, cap;
} text;

static void put(text *t, const char *s, size_t n)
{
    for (size_t i = 0; i < n && t->len + 1 < t->cap; i++)
        t->out[t->len++] = s[i];
    if (t->cap)
        t->out[t->len] = 0;
}

static void put_str(text *t, const char *s)
{
    put(t, s, strlen(s));
}

/* v in decimal, at least min_digits digits (zeros in front). */
static void put_u64(text *t, uint64_t v, int min_digits)
{
    char digits[24];
    int n = 0;
    do {
        digits[sizeof digits - ++n] = (char)('0' + v % 10);
        v /= 10;
    } while (v || n < min_digits);
    put(t, digits + sizeof digits - n, (size_t)n);
}

/*
 * What snprintf(out, outlen, "%.*f %s", decimals, value, unit) writes, for
 * 0 <= value and decimals <= 2: value times 10^decimals is exact in a long
 * double of 64 bits of mantissa or more (53 + 7 bits), so it is rounded to
 * the nearest integer exactly as printf rounds, ties to even.  Elsewhere,
 * or for values past 2^53, printf itself.
 */
static void fixed(double value, int decimals, const char *unit, char *out, size_t outlen)
{
#if LDBL_MANT_DIG >= 64
    static const unsigned scale[] = { 1, 10, 100 };
    if (value >= 0 && value < 9007199254740992.0 && decimals >= 0 && decimals <= 2) {
        long double x = (long double)value * scale[decimals];
        long double whole = floorl(x), frac = x - whole;
        uint64_t n = (uint64_t)whole;
        if (frac > 0.5L || (frac == 0.5L && (n & 1)))
            n++;
        text t = { out, 0, outlen };
        put_u64(&t, n / scale[decimals], 1);
        if (decimals) {
            put(&t, ".", 1);
            put_u64(&t, n % scale[decimals], decimals);
        }
        put(&t, " ", 1);
        put_str(&t, unit);
        return;
    }
#endif
    snprintf(out, outlen, "%.*f %s", decimals, value, unit);
}

/* value with 3 significant digits (at most 2 decimals) and its unit. */
static char *scaled(double value, const char *unit, char *out, size_t outlen)
{
    int decimals = value < 10 ? 2 : value < 100 ? 1 : 0;
    fixed(value, decimals, unit, out, outlen);
    return out;
}

/* "N unit" (an exact count) into out. */
static char *whole(uint64_t n, const char *unit, char *out, size_t outlen)
{
    text t = { out, 0, outlen };
    put_u64(&t, n, 1);
    put(&t, " ", 1);
    put_str(&t, unit);
    return out;
}

char *mf_format_bytes(uint64_t bytes, char *out, size_t outlen)
{
    static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    if (bytes < 1024)
        return whole(bytes, "B", out, outlen);
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
    if (ns < 1000)
        return whole(ns, "ns", out, outlen);
    if (ns < 999995ull)
        return scaled((double)ns / 1e3, "us", out, outlen);
    if (ns < 999995000ull)
        return scaled((double)ns / 1e6, "ms", out, outlen);
    return scaled((double)ns / 1e9, "s", out, outlen);
}

char *mf_format_count(uint64_t count, char *out, size_t outlen)
{
    char digits[32];
    text t = { digits, 0, sizeof digits };
    put_u64(&t, count, 1);
    int n = (int)t.len;
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
