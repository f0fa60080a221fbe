/* schedule_zbv_test.c — ZB-V is the published schedule: every rank's order equals the one
 * Qi et al.'s reference generator makes (tests/pp/zbv_reference.txt says where each came
 * from), at p = 2, 4, 8 and m = 2p, 3p, 4p. The other zbv properties (every action once,
 * memory, validity, makespan) are checked with the other schedules in schedule_test.c and
 * schedule_sim_test.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/pp/schedule.h"
#include "tests/support/testing.h"

/* Compares one rank's plan with a line of the reference ("F0c0 F1c0 ..."); fails naming the
 * first action that differs. */
static void rank_equals_reference(const pp_config *cfg, int r, char *line) {
    pp_rank_plan plan;
    pp_rank_plan_build(cfg, r, &plan);
    int i = 0;
    char name[32];
    for (char *save = NULL, *tok = strtok_r(line, " \n", &save); tok;
         tok = strtok_r(NULL, " \n", &save), i++) {
        if (i >= plan.n)
            fail_msg("p=%d m=%d rank %d: the reference has more actions", cfg->p, cfg->m, r);
        pp_action_name(&plan.actions[i], 2, name, sizeof name);
        if (strcmp(name, tok) != 0)
            fail_msg("p=%d m=%d rank %d, action %d: Trident %s, reference %s", cfg->p, cfg->m, r, i,
                     name, tok);
    }
    assert_int_equal(i, plan.n);
    pp_rank_plan_free(&plan);
}

static void orders_equal_the_reference_generator(void **state) {
    (void)state;
    FILE *f = fopen(test_runfile("tests/pp/zbv_reference.txt"), "r");
    assert_non_null(f);
    char line[8192];
    int blocks = 0;
    while (fgets(line, sizeof line, f)) {
        int p, m, makespan;
        if (line[0] == '#' || sscanf(line, "p %d m %d makespan %d", &p, &m, &makespan) != 3)
            continue;
        assert_int_equal(makespan, 6 * m + p - 1); /* the least makespan, reached */
        const pp_config cfg = {PP_ZBV, p, m, 2};
        for (int r = 0; r < p; r++) {
            assert_non_null(fgets(line, sizeof line, f));
            rank_equals_reference(&cfg, r, line);
        }
        blocks++;
    }
    fclose(f);
    assert_int_equal(blocks, 9); /* p = 2, 4, 8 × m = 2p, 3p, 4p */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(orders_equal_the_reference_generator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
