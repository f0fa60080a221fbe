"""Compiler options shared by every target of the project."""

# C11, strict warnings, and warnings are errors on all project code.
COPTS = [
    "-std=c11",
    "-D_POSIX_C_SOURCE=200809L",
    "-D_DEFAULT_SOURCE",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wshadow",
    "-Wno-unused-parameter",
    "-Wno-format-truncation",
    "-Wstrict-prototypes",
    "-Wmissing-prototypes",
    "-O2",
    "-g",
]

# Tests may use cmocka's macros, which trip a few of the warnings above.
TEST_COPTS = COPTS + ["-Wno-missing-prototypes"]
