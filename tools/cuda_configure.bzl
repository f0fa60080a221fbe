"""Finds the CUDA toolkit, if any, and makes the repository @local_cuda.

@local_cuda//:defs.bzl says whether nvcc was found (CUDA_FOUND) so that BUILD files
can add the CUDA kernels only then: a CPU-only machine never needs nvcc.
@local_cuda//:cuda is the runtime, cuBLAS and NCCL to link against (empty without CUDA).
The toolkit is looked for at $CUDA_PATH, else /usr/local/cuda.
"""

def _cuda_configure_impl(ctx):
    root = ctx.os.environ.get("CUDA_PATH", "/usr/local/cuda")
    nvcc = ctx.path(root + "/bin/nvcc")
    found = nvcc.exists
    if found:
        ctx.symlink(root + "/include", "include")
        ctx.symlink(root + "/bin", "bin")
        real = ctx.path(root + "/lib64").realpath
        ctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])
exports_files(["bin/nvcc"])
filegroup(name = "nvcc", srcs = ["bin/nvcc"])
cc_library(
    name = "cuda_headers",
    hdrs = glob(["include/*.h", "include/*.hpp", "include/crt/*.h", "include/crt/*.hpp"]),
    includes = ["include"],
)
cc_library(
    name = "cuda",
    deps = [":cuda_headers"],
    linkopts = ["-L{lib}", "-Wl,-rpath,{lib}", "-lcublas", "-lcublasLt", "-lnccl", "-lcudart"],
)
""".format(lib = str(real)))
    else:
        ctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])
cc_library(name = "cuda_headers")
cc_library(name = "cuda")
""")
    ctx.file("defs.bzl", "CUDA_FOUND = %s\nCUDA_ROOT = \"%s\"\n" % (found, root))

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["CUDA_PATH"],
    local = True,
)
