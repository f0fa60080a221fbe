/* hostile_families.c — the round-3 families of hostile_input_test, in the order they run. */
#include "tests/robustness_input/hostile.h"

extern const hostile_case hostile_links_cases[], hostile_numbers_cases[], hostile_values_cases[],
    hostile_work_cases[];
void hostile_links_setup(void);
void hostile_numbers_setup(void);
void hostile_values_setup(void);
void hostile_work_setup(void);

const hostile_family k_round3[HOSTILE_FAMILIES] = {
    {"symbolic links", hostile_links_cases, hostile_links_setup},
    {"numbers that wrap or change meaning", hostile_numbers_cases, hostile_numbers_setup},
    {"values, silent acceptance, messages, internal checks", hostile_values_cases,
     hostile_values_setup},
    {"unbounded work", hostile_work_cases, hostile_work_setup},
};
