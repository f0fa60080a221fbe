/* flags_test.c — the shared flag parser: values, '=' form, positionals, help text. */
#include <stdbool.h>
#include <string.h>

#include "src/core/flags.h"
#include "tests/support/testing.h"

static void parses_every_type_and_both_forms(void **state) {
    (void)state;
    int n = 1;
    float lr = 0.1f;
    const char *name = NULL;
    bool flag = false;
    const char *sched = "1f1b";
    flag_spec specs[] = {
        {"--num-layers", FLAG_INT, &n, "layers", NULL},
        {"--lr", FLAG_FLOAT, &lr, "learning rate", NULL},
        {"--data-path", FLAG_STRING, &name, "data", NULL},
        {"--bf16", FLAG_BOOL, &flag, "bf16", NULL},
        {"--pipeline-schedule", FLAG_CHOICE, &sched, "schedule", "gpipe|1f1b|interleaved"},
    };
    char *argv[] = {"--num-layers", "4",     "--lr=0.5", "pos",
                    "--data-path",  "x.txt", "--bf16",   "--pipeline-schedule=gpipe"};
    const char *pos[2];
    int np = flags_parse("test", "usage", specs, 5, 8, argv, pos, 2);
    assert_int_equal(n, 4);
    assert_true(lr == 0.5f);
    assert_string_equal(name, "x.txt");
    assert_true(flag);
    assert_string_equal(sched, "gpipe");
    assert_int_equal(np, 1);
    assert_string_equal(pos[0], "pos");
}

static void extension_check_ignores_case(void **state) {
    (void)state;
    assert_true(path_has_ext("a/b.PNG", ".png"));
    assert_false(path_has_ext("png", ".png"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_every_type_and_both_forms),
        cmocka_unit_test(extension_check_ignores_case),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
