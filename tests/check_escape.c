/*
 * check_escape.c - unit tests of render/escape.c and render/sink.c: the one
 * set of rules by which program strings reach every output (text, XML,
 * JSON, CSV), U+FFFD for invalid UTF-8, and the sink they are written into.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <signal.h>
#include <unistd.h>

#include "escape.h"
#include "sink.h"
#include "units.h"

typedef int (*escape_fn)(mf_sink *s, const char *text);

static int xml(mf_sink *s, const char *t) { return mf_escape_xml(s, t, MF_ESCAPE_WHOLE); }
static int text(mf_sink *s, const char *t) { return mf_escape_text(s, t, MF_ESCAPE_WHOLE); }

/* Escape s with fn into a memory sink and compare with want. */
static void expect_escape(escape_fn fn, const char *s, const char *want)
{
    mf_sink sink = { 0 };
    ck_assert_int_eq(fn(&sink, s), 0);
    char *got = mf_sink_take(&sink);
    ck_assert_str_eq(got, want);
    free(got);
}

START_TEST(xml_specials)
{
    expect_escape(xml, "a<b>&\"c'", "a&lt;b&gt;&amp;&quot;c&#39;");
    expect_escape(xml, "bell\x07", "bell\\x07");
    expect_escape(xml, "\xef\xbf\xbe", "\xef\xbf\xbd"); /* U+FFFE */
}
END_TEST

/* A newline is "\n" to a reader in every output made for reading: the
 * terminal table, the picture's hover titles and its labels (one rule). */
START_TEST(newline_shows_the_same_everywhere)
{
    expect_escape(xml, "l1\nl2\tx\r", "l1\\nl2\\tx\\r");
    expect_escape(text, "l1\nl2\tx\r", "l1\\nl2\\tx\\r");
    char clean[64];
    ck_assert_str_eq(mf_clean_text("l1\nl2\tx\r", 100, clean, sizeof clean), "l1\\nl2\\tx\\r");
}
END_TEST

START_TEST(invalid_utf8_becomes_replacement)
{
    expect_escape(xml, "s\xff\xfe:", "s\xef\xbf\xbd\xef\xbf\xbd:");
    expect_escape(mf_escape_csv, "\xc3", "\xef\xbf\xbd");          /* truncated */
    expect_escape(mf_escape_csv, "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"); /* overlong */
    expect_escape(mf_escape_csv, "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    expect_escape(mf_escape_csv, "caf\xc3\xa9 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xf0\x9f\x98\x80");
}
END_TEST

START_TEST(json_specials)
{
    expect_escape(mf_escape_json, "q\"b\\s/", "q\\\"b\\\\s/");
    expect_escape(mf_escape_json, "a\nb\tc\rd\be\ff\x01", "a\\nb\\tc\\rd\\be\\ff\\u0001");
    expect_escape(mf_escape_json, "\xff\xfe", "\\ufffd\\ufffd");
    expect_escape(mf_escape_json, "<&>", "<&>");
}
END_TEST

START_TEST(csv_doubles_quotes)
{
    expect_escape(mf_escape_csv, "say \"hi\"\n", "say \"\"hi\"\"\n");
    expect_escape(mf_escape_csv, NULL, "");
}
END_TEST

START_TEST(text_shows_invisible)
{
    expect_escape(text, "a\nb\x1b\x7f\\", "a\\nb\\x1b\\x7f\\");
}
END_TEST

START_TEST(cut_at_whole_characters)
{
    mf_sink s = { 0 };
    mf_escape_xml(&s, "abcdef", 3);
    char *got = mf_sink_take(&s);
    ck_assert_str_eq(got, "abc...");
    free(got);
    char out[64];
    ck_assert_str_eq(mf_clean_text("a\nb\x01\xff", 10, out, sizeof out), "a\\nb\\x01\xef\xbf\xbd");
    ck_assert_str_eq(mf_clean_text("\xe2\x82\xac\xe2\x82", 10, out, sizeof out),
                     "\xe2\x82\xac\xef\xbf\xbd\xef\xbf\xbd");
    ck_assert_str_eq(mf_clean_text("\xe2\x82\xac\xe2\x82\xac", 10, out, 5), "\xe2\x82\xac");
}
END_TEST

START_TEST(sink_grows_counts_and_formats)
{
    mf_sink s = { 0 };
    for (int i = 0; i < 1000; i++)
        mf_sink_printf(&s, "%04d,", i);
    ck_assert_uint_eq(mf_sink_bytes(&s), 5000);
    ck_assert(strncmp(s.buf + 4995, "0999,", 5) == 0);
    mf_sink_free(&s);
    mf_sink_u64(&s, 18446744073709551615ull);
    mf_sink_putc(&s, ' ');
    mf_sink_micros(&s, 1234567);
    mf_sink_putc(&s, ' ');
    mf_sink_micros(&s, 5);
    char *got = mf_sink_take(&s);
    ck_assert_str_eq(got, "18446744073709551615 1234.567 0.005");
    free(got);
}
END_TEST

/* A write the file system refuses (here a file size limit) is kept as the
 * sink's error; nothing after it is written. */
START_TEST(sink_keeps_the_first_error)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = { 100000, 100000 };
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    char path[] = "/tmp/memflow-sink-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    unlink(path);
    mf_sink s;
    mf_sink_fd(&s, fd);
    for (int i = 0; i < 100000; i++)
        mf_sink_puts(&s, "0123456789");
    ck_assert_int_eq(mf_sink_flush(&s), -1);
    ck_assert_int_eq(s.error, EFBIG);
    ck_assert_uint_le(s.flushed, 100000);
    mf_sink_free(&s);
    close(fd);
}
END_TEST

START_TEST(units)
{
    char out[64];
    ck_assert_str_eq(mf_format_bytes(512, out, sizeof out), "512 B");
    ck_assert_str_eq(mf_format_bytes(5120, out, sizeof out), "5.00 KiB");
    ck_assert_str_eq(mf_format_bytes(1536 * 1024, out, sizeof out), "1.50 MiB");
    ck_assert_str_eq(mf_format_bytes(50000000, out, sizeof out), "47.7 MiB");
    ck_assert_str_eq(mf_format_bytes(300ull << 30, out, sizeof out), "300 GiB");
    ck_assert_str_eq(mf_format_time(850, out, sizeof out), "850 ns");
    ck_assert_str_eq(mf_format_time(12500, out, sizeof out), "12.5 us");
    ck_assert_str_eq(mf_format_time(300000000, out, sizeof out), "300 ms");
    ck_assert_str_eq(mf_format_time(4560000000ull, out, sizeof out), "4.56 s");
    ck_assert_str_eq(mf_format_count(1234567, out, sizeof out), "1,234,567");
    ck_assert_str_eq(mf_format_count(999, out, sizeof out), "999");
}
END_TEST

/* The sink's printf writes what the C library's does, for the plain
 * conversions it formats itself and for those it hands on. */
START_TEST(sink_printf_is_printf)
{
    mf_sink s = { 0 };
    char want[512];
    mf_sink_printf(&s, "%u|%d|%i|%x|%s|%c|%%|%lu|%ld|%lx|%llu|%lld|%llx|%zu|%zd", 0u, -2147483647 - 1,
                   42, 0xdeadbeefu, "text", 'q', 18446744073709551615ul, -9223372036854775807l - 1,
                   0xfful, 12345678901234567890ull, -1ll, 0x123456789abcdefull, (size_t)7,
                   (ssize_t)-7);
    snprintf(want, sizeof want, "%u|%d|%i|%x|%s|%c|%%|%lu|%ld|%lx|%llu|%lld|%llx|%zu|%zd", 0u,
             -2147483647 - 1, 42, 0xdeadbeefu, "text", 'q', 18446744073709551615ul,
             -9223372036854775807l - 1, 0xfful, 12345678901234567890ull, -1ll,
             0x123456789abcdefull, (size_t)7, (ssize_t)-7);
    mf_sink_printf(&s, "<%5u|%-3d|%.2f|%08x|%p>", 7u, 1, 2.5, 255u, (void *)0);
    snprintf(want + strlen(want), sizeof want - strlen(want), "<%5u|%-3d|%.2f|%08x|%p>", 7u, 1,
             2.5, 255u, (void *)0);
    char *got = mf_sink_take(&s);
    ck_assert_str_eq(got, want);
    free(got);
}
END_TEST

/* Sizes and times round as printf's "%.2f" rounds the same double, ties to
 * even included (0.125 -> 0.12, 0.375 -> 0.38). */
START_TEST(units_round_as_printf)
{
    char out[64], want[64];
    ck_assert_str_eq(mf_format_time(1125, out, sizeof out), "1.12 us");
    ck_assert_str_eq(mf_format_time(1375, out, sizeof out), "1.38 us");
    ck_assert_str_eq(mf_format_time(10250, out, sizeof out), "10.2 us");
    ck_assert_str_eq(mf_format_time(999994, out, sizeof out), "1000 us");
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t v = x >> (x % 60);
        double d = (double)v;
        const char *names[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
        size_t u = 0;
        d /= 1024.0;
        while (d >= 999.5 && u + 1 < 6) {
            d /= 1024.0;
            u++;
        }
        if (v >= 1024) {
            snprintf(want, sizeof want, "%.*f %s", d < 10 ? 2 : d < 100 ? 1 : 0, d, names[u]);
            ck_assert_str_eq(mf_format_bytes(v, out, sizeof out), want);
        }
        uint64_t ns = v % 100000000000ull;
        if (ns >= 1000 && ns < 999995ull) {
            double us = (double)ns / 1e3;
            snprintf(want, sizeof want, "%.*f us", us < 10 ? 2 : us < 100 ? 1 : 0, us);
            ck_assert_str_eq(mf_format_time(ns, out, sizeof out), want);
        }
    }
}
END_TEST

static Suite *escape_suite(void)
{
    Suite *s = suite_create("escape");
    TCase *tc = tcase_create("escape");
    tcase_add_test(tc, xml_specials);
    tcase_add_test(tc, newline_shows_the_same_everywhere);
    tcase_add_test(tc, invalid_utf8_becomes_replacement);
    tcase_add_test(tc, json_specials);
    tcase_add_test(tc, csv_doubles_quotes);
    tcase_add_test(tc, text_shows_invisible);
    tcase_add_test(tc, cut_at_whole_characters);
    tcase_add_test(tc, sink_grows_counts_and_formats);
    tcase_add_test(tc, sink_keeps_the_first_error);
    tcase_add_test(tc, units);
    tcase_add_test(tc, sink_printf_is_printf);
    tcase_add_test(tc, units_round_as_printf);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(escape_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
