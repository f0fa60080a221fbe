"""exercise() — the Bazel side of one course exercise (tutorials/exercises/NN-*/).

For exercise N it declares, in the calling package (tests/exercises):
  exN_skeleton, exN_student   the concept's test binary linked with a copy of SOURCE whose
                              region between the "exercise N" markers holds skeleton.c or
                              student.c (splice.sh writes the copy; #line keeps the names)
  exN_solution                the same test binary linked with Trident's own library
  exercise_N_test             CI: the skeleton's tests fail, and the first failure is the one
                              EXPECT names, summarized with what it checks; the solution's pass
Only the spliced file is compiled per variant: the rest links the existing libraries.
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library")
load("//tools:copts.bzl", "COPTS", "TEST_COPTS")

def _path(label):
    """//src/tp:layers.c -> src/tp/layers.c"""
    return label[2:].replace(":", "/")

def _variant(number, variant, dir, source, header, lib_deps, test_src, test_deps, defines,
             extra_srcs):
    name = "ex%d_%s" % (number, variant)
    piece = "//tutorials/exercises:%s/%s.c" % (dir, variant)
    spliced = "%s_spliced/%s" % (name, source.split(":")[1])
    native.genrule(
        name = name + "_source",
        srcs = [source, piece],
        outs = [spliced],
        tools = [":splice.sh"],
        cmd = "bash $(location :splice.sh) %d $(location %s) $(location %s) %s %s > $@" % (
            number,
            source,
            piece,
            _path(source),
            _path(piece),
        ),
        testonly = True,
    )

    # The student's code may leave a helper of SOURCE unused: a warning, not an error.
    cc_library(
        name = name + "_lib",
        testonly = True,
        srcs = [":" + spliced, header] + extra_srcs,
        copts = COPTS + ["-Wno-error", "-Wno-unused-function"],
        deps = lib_deps,
    )
    cc_binary(
        name = name,
        testonly = True,
        srcs = [test_src],
        copts = TEST_COPTS,
        defines = defines,
        linkopts = ["-lm"],
        deps = test_deps + [":" + name + "_lib"],
    )

def exercise(number, dir, source, header, library, lib_deps, test_src, test_deps, expect,
             defines = [], mpi = False, extra_srcs = []):
    """One exercise; see the file's comment. library: Trident's own target for SOURCE;
    extra_srcs: the other files of that library, compiled as they are."""
    for variant in ["skeleton", "student"]:
        _variant(number, variant, dir, source, header, lib_deps, test_src, test_deps, defines,
                 extra_srcs)
    cc_binary(
        name = "ex%d_solution" % number,
        testonly = True,
        srcs = [test_src],
        copts = TEST_COPTS,
        defines = defines,
        linkopts = ["-lm"],
        deps = test_deps + [library],
    )
    checks = "//tutorials/exercises:%s/checks.txt" % dir
    native.sh_test(
        name = "exercise_%d_test" % number,
        # medium: two test binaries run one after the other; under --config=asan on a loaded
        # 2-core machine a non-MPI exercise took over small's 60 s.
        size = "medium",
        srcs = ["exercise_test.sh"],
        args = [
            "%d" % number,
            "$(location :ex%d_skeleton)" % number,
            "$(location :ex%d_solution)" % number,
            "$(location %s)" % checks,
            expect,
        ],
        data = [
            ":ex%d_skeleton" % number,
            ":ex%d_solution" % number,
            ":summarize.sh",
            checks,
            test_src,  # the summary quotes the failing assert's line
        ],
        tags = ["mpi"] if mpi else [],
    )
