/*
 * check_escape.c - unit tests of render/escape.c: every output's escaping
 * of program strings (XML, JSON, CSV, text) and U+FFFD for invalid UTF-8.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"

/* Escape s with fn into a fresh buffer and compare with want. */
static void expect_escape(int (*fn)(mf_buf *, const char *), const char *s, const char *want)
{
    mf_buf b = MF_BUF_INIT;
    ck_assert_int_eq(fn(&b, s), 0);
    char *got = mf_buf_take(&b);
    ck_assert_str_eq(got, want);
    free(got);
}

START_TEST(xml_specials)
{
    expect_escape(mf_escape_xml_buf, "a<b>&\"c'", "a&lt;b&gt;&amp;&quot;c&#39;");
    expect_escape(mf_escape_xml_buf, "l1\nl2\tx\r", "l1&#10;l2&#9;x&#13;");
    expect_escape(mf_escape_xml_buf, "bell\x07", "bell\xef\xbf\xbd");
    expect_escape(mf_escape_xml_buf, "\xef\xbf\xbe", "\xef\xbf\xbd"); /* U+FFFE */
}
END_TEST

START_TEST(invalid_utf8_becomes_replacement)
{
    expect_escape(mf_escape_xml_buf, "s\xff\xfe:", "s\xef\xbf\xbd\xef\xbf\xbd:");
    expect_escape(mf_escape_csv_buf, "\xc3", "\xef\xbf\xbd");          /* truncated */
    expect_escape(mf_escape_csv_buf, "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"); /* overlong */
    expect_escape(mf_escape_csv_buf, "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    expect_escape(mf_escape_csv_buf, "caf\xc3\xa9 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xf0\x9f\x98\x80");
}
END_TEST

START_TEST(json_specials)
{
    expect_escape(mf_escape_json_buf, "q\"b\\s/", "q\\\"b\\\\s/");
    expect_escape(mf_escape_json_buf, "a\nb\tc\rd\be\ff\x01", "a\\nb\\tc\\rd\\be\\ff\\u0001");
    expect_escape(mf_escape_json_buf, "\xff\xfe", "\\ufffd\\ufffd");
    expect_escape(mf_escape_json_buf, "<&>", "<&>");
}
END_TEST

START_TEST(csv_doubles_quotes)
{
    expect_escape(mf_escape_csv_buf, "say \"hi\"\n", "say \"\"hi\"\"\n");
    expect_escape(mf_escape_csv_buf, NULL, "");
}
END_TEST

START_TEST(text_shows_invisible)
{
    expect_escape(mf_escape_text_buf, "a\nb\x1b\x7f\\", "a\\nb\\x1b\\x7f\\");
}
END_TEST

START_TEST(file_form_matches_buffer_form)
{
    char *mem = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&mem, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(mf_escape_xml(f, "<\xff>"), 0);
    fclose(f);
    ck_assert_str_eq(mem, "&lt;\xef\xbf\xbd&gt;");
    free(mem);
}
END_TEST

START_TEST(buffer_printf_grows)
{
    mf_buf b = MF_BUF_INIT;
    for (int i = 0; i < 1000; i++)
        ck_assert_int_eq(mf_buf_printf(&b, "%04d,", i), 0);
    ck_assert_uint_eq(b.len, 5000);
    ck_assert(strncmp(b.data + 4995, "0999,", 5) == 0);
    mf_buf_free(&b);
    ck_assert_ptr_null(b.data);
}
END_TEST

static Suite *escape_suite(void)
{
    Suite *s = suite_create("escape");
    TCase *tc = tcase_create("escape");
    tcase_add_test(tc, xml_specials);
    tcase_add_test(tc, invalid_utf8_becomes_replacement);
    tcase_add_test(tc, json_specials);
    tcase_add_test(tc, csv_doubles_quotes);
    tcase_add_test(tc, text_shows_invisible);
    tcase_add_test(tc, file_form_matches_buffer_form);
    tcase_add_test(tc, buffer_printf_grows);
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
