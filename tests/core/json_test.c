/* json_test.c — the JSON writer: the three layouts byte for byte, the escaper, non-finite numbers
 * refused (or null where the caller says a value may be absent). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/json.h"
#include "tests/support/testing.h"

static void compact_objects_have_no_spaces_and_keep_key_order(void **state) {
    (void)state;
    json_writer w;
    json_init_buffer(&w, 0);
    json_begin_object(&w, JSON_COMPACT);
    json_field_int(&w, "step", 3);
    json_field_double(&w, "loss", "%.7g", 2.5);
    json_field_uint(&w, "bytes", 18446744073709551615ull);
    json_field_bool(&w, "skipped", false);
    json_key(&w, "list");
    json_begin_array(&w, JSON_COMPACT);
    json_int(&w, -1);
    json_string(&w, NULL);
    json_end_array(&w);
    json_end_object(&w);
    char *s = json_take(&w);
    assert_string_equal(s,
                        "{\"step\":3,\"loss\":2.5,\"bytes\":18446744073709551615,\"skipped\":false,"
                        "\"list\":[-1,null]}");
    free(s);
    /* the writer is empty again */
    json_begin_array(&w, JSON_COMPACT);
    json_end_array(&w);
    s = json_take(&w);
    assert_string_equal(s, "[]");
    free(s);
    free(json_take(&w));
}

static void spaced_and_lines_layouts(void **state) {
    (void)state;
    json_writer w;
    json_init_buffer(&w, 2);
    json_begin_object(&w, JSON_LINES);
    json_key(&w, "layout");
    json_begin_object(&w, JSON_SPACED);
    json_field_int(&w, "a", 1);
    json_field_string(&w, "b", "x");
    json_end_object(&w);
    json_key(&w, "tp");
    json_begin_array(&w, JSON_SPACED);
    for (int g = 0; g < 2; g++) {
        json_begin_array(&w, JSON_COMPACT);
        json_int(&w, 2 * g);
        json_int(&w, 2 * g + 1);
        json_end_array(&w);
    }
    json_end_array(&w);
    json_key(&w, "ranks");
    json_begin_array(&w, JSON_LINES);
    json_int(&w, 0);
    json_int(&w, 1);
    json_end_array(&w);
    json_end_object(&w);
    char *s = json_take(&w);
    assert_string_equal(s, "{\n  \"layout\": {\"a\": 1, \"b\": \"x\"},\n  \"tp\": [[0,1], [2,3]],\n"
                           "  \"ranks\": [\n    0,\n    1\n  ]\n}");
    free(s);
    /* indent 0: one element per line, as in a Chrome trace */
    json_init_buffer(&w, 0);
    json_begin_array(&w, JSON_LINES);
    json_begin_object(&w, JSON_COMPACT);
    json_end_object(&w);
    json_begin_object(&w, JSON_COMPACT);
    json_end_object(&w);
    json_end_array(&w);
    s = json_take(&w);
    assert_string_equal(s, "[\n{},\n{}\n]");
    free(s);
    free(json_take(&w));
}

static void strings_are_escaped_as_rfc_8259_asks(void **state) {
    (void)state;
    json_writer w;
    json_init_buffer(&w, 0);
    json_string(&w, "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f é");
    char *s = json_take(&w);
    assert_string_equal(s, "\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f é\"");
    free(s);
}

/* Bytes that are not well-formed UTF-8 (a path or a name can hold any) become U+FFFD, one per
 * byte; well-formed sequences of 2, 3 and 4 bytes pass as they are. */
static void bytes_that_are_not_utf8_become_the_replacement_character(void **state) {
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"ok \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
         "\"ok \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
        {"a\xff"
         "b",
         "\"a\\ufffdb\""},                                        /* never in UTF-8 */
        {"\x80", "\"\\ufffd\""},                                  /* a stray continuation byte */
        {"\xc0\xaf", "\"\\ufffd\\ufffd\""},                       /* overlong '/' */
        {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},            /* a UTF-16 surrogate */
        {"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""}, /* above U+10FFFF */
        {"x\xe2\x82", "\"x\\ufffd\\ufffd\""},                     /* cut short by the end */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_writer w;
        json_init_buffer(&w, 0);
        json_string(&w, cases[i].in);
        char *s = json_take(&w);
        assert_string_equal(s, cases[i].out);
        free(s);
    }
}

/* json_double_or_null: a value that may be absent is null when it is not finite. */
static void non_finite_numbers_are_null_only_when_asked(void **state) {
    (void)state;
    json_writer w;
    json_init_buffer(&w, 0);
    json_begin_array(&w, JSON_COMPACT);
    json_double_or_null(&w, "%.3f", NAN);
    json_double_or_null(&w, "%.3f", INFINITY);
    json_double_or_null(&w, "%.3f", -INFINITY);
    json_double_or_null(&w, "%.3f", 1.0 / 3);
    json_end_array(&w);
    char *s = json_take(&w);
    assert_string_equal(s, "[null,null,null,0.333]");
    free(s);
}

static void write_one_double(const void *arg) {
    json_writer w;
    json_init_file(&w, stdout, 0);
    json_begin_object(&w, JSON_COMPACT);
    json_field_double(&w, "aux_loss", "%.7g", *(const double *)arg);
    json_end_object(&w);
    fflush(stdout);
}

/* json_double refuses inf and NaN (a bare `inf` would make the whole document unreadable):
 * the process stops with the writer's check before anything of the number is written. */
static void the_writer_refuses_non_finite_numbers(void **state) {
    (void)state;
    const double bad[3] = {INFINITY, -INFINITY, NAN};
    char out[4096];
    for (int i = 0; i < 3; i++) {
        assert_int_not_equal(run_in_child(write_one_double, &bad[i], out, sizeof out), 0);
        assert_non_null(strstr(out, "a number that is not finite reached the JSON writer"));
        assert_null(strstr(out, "inf,"));
        assert_null(strstr(out, "\"aux_loss\":inf"));
        assert_null(strstr(out, "\"aux_loss\":nan"));
    }
    const double fine = 2.5;
    assert_int_equal(run_in_child(write_one_double, &fine, out, sizeof out), 0);
    assert_non_null(strstr(out, "{\"aux_loss\":2.5}"));
}

static void a_file_writer_writes_the_same_bytes(void **state) {
    (void)state;
    const char *dir = test_tmpdir("json_test");
    char path[4200];
    snprintf(path, sizeof path, "%s/x.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    json_writer w;
    json_init_file(&w, f, 2);
    json_begin_object(&w, JSON_LINES);
    json_field_string(&w, "k", "v\n");
    json_end_object(&w);
    fclose(f);
    char got[64] = {0};
    f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(got, 1, sizeof got - 1, f);
    fclose(f);
    got[n] = 0;
    assert_string_equal(got, "{\n  \"k\": \"v\\n\"\n}");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(compact_objects_have_no_spaces_and_keep_key_order),
        cmocka_unit_test(spaced_and_lines_layouts),
        cmocka_unit_test(strings_are_escaped_as_rfc_8259_asks),
        cmocka_unit_test(bytes_that_are_not_utf8_become_the_replacement_character),
        cmocka_unit_test(non_finite_numbers_are_null_only_when_asked),
        cmocka_unit_test(the_writer_refuses_non_finite_numbers),
        cmocka_unit_test(a_file_writer_writes_the_same_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
