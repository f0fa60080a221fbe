/* hostile_work.c — round 3 of the hostile-input table (issue 31): see hostile.h. */
#include "tests/robustness_input/hostile.h"

const hostile_case hostile_work_cases[] = {
    {0, NULL, NULL, NULL},
};

void hostile_work_setup(void) {}
