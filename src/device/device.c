/* device.c — see device.h.
 *
 * Reading guide: the process has one current device (g.kind). Memory calls and kernels
 * branch on it: cuda goes to kernels/ops_cuda.h (CUDA builds only), the two CPU devices to
 * kernels/ops.h. The cpu-guarded device adds one thing around every kernel and copy: the
 * pages of device memory are readable only inside it (guard_open / guard_close).
 *
 * cpu-guarded memory: one large reservation of address space (PROT_NONE, no memory behind it
 * until touched), handed out page-aligned from the bottom; freed blocks are reused by later
 * allocations that fit. Only the used prefix is ever unprotected, with one mprotect call:
 *
 *   region                                                         region + reserved
 *   | block | block (free) | block |  ... never used ...                         |
 *   '------- used (PROT_NONE outside kernels) -'
 */
#define _GNU_SOURCE
#include "src/device/device.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernels/ops.h"
#include "src/core/check.h"
#include "src/optim/adamw.h"
#include "src/precision/loss_scaler.h"

#ifdef TRIDENT_CUDA
#include "kernels/ops_cuda.h"
#endif

/* One live allocation of a non-host device. */
typedef struct {
    char *base;
    size_t bytes;    /* what was asked for */
    size_t capacity; /* cpu-guarded: the block's size (pages); reused when free */
    bool live;
} block;

static struct {
    device_kind kind;
    int gpu;
    block *blocks;
    int nblocks, cap_blocks;
    size_t in_use, peak;
    /* cpu-guarded */
    char *region;
    size_t reserved, used; /* bytes */
    int open_depth;
#ifdef TRIDENT_CUDA
    cuda_context ctx;
#endif
} g = {.kind = DEVICE_CPU, .gpu = -1};

const char *device_kind_name(device_kind k) {
    switch (k) {
    case DEVICE_CPU: return "cpu";
    case DEVICE_CUDA: return "cuda";
    case DEVICE_CPU_GUARDED: return "cpu-guarded";
    }
    return "?";
}

bool device_kind_parse(const char *s, device_kind *out) {
    for (int k = DEVICE_CPU; k <= DEVICE_CPU_GUARDED; k++)
        if (strcmp(s, device_kind_name((device_kind)k)) == 0) {
            *out = (device_kind)k;
            return true;
        }
    return false;
}

bool device_kind_built(device_kind k) {
#ifdef TRIDENT_CUDA
    (void)k;
    return true;
#else
    return k != DEVICE_CUDA;
#endif
}

device_kind device_current(void) { return g.kind; }
bool device_is_host(void) { return g.kind == DEVICE_CPU; }
int device_gpu(void) { return g.gpu; }

int device_cuda_count(void) {
#ifdef TRIDENT_CUDA
    return cuda_device_count();
#else
    return 0;
#endif
}
void device_set_threads(int n) { ops_set_threads(n); }

size_t device_bytes_in_use(void) { return g.in_use; }
size_t device_bytes_peak(void) { return g.peak; }

#ifdef TRIDENT_CUDA
#define ON_CUDA (g.kind == DEVICE_CUDA)
#define CTX (&g.ctx)
#endif

/* ---------------------------------------------------------------- cpu-guarded pages */

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

static void guard_protect(int prot) {
    if (g.used && mprotect(g.region, g.used, prot) != 0)
        die("cpu-guarded device: mprotect of %zu bytes failed", g.used);
}

/* Device memory readable and writable (inside a kernel or a copy); nests. */
static void guard_open(void) {
    if (g.kind != DEVICE_CPU_GUARDED) return;
    if (g.open_depth++ == 0) guard_protect(PROT_READ | PROT_WRITE);
}
static void guard_close(void) {
    if (g.kind != DEVICE_CPU_GUARDED) return;
    if (--g.open_depth == 0) guard_protect(PROT_NONE);
}

/* A fault inside the region is host code touching device memory: say so, then let the
 * default action end the process (the handler is reset before it returns). */
static void guard_fault(int sig, siginfo_t *info, void *uctx) {
    (void)sig;
    (void)uctx;
    const char *a = (const char *)info->si_addr;
    if (g.region && a >= g.region && a < g.region + g.reserved) {
        char line[256];
        int n = snprintf(line, sizeof line,
                         "trident: host code touched device memory at offset %zu of the cpu-guarded "
                         "region outside a kernel (a missing device_download / device_upload?)\n",
                         (size_t)(a - g.region));
        if (n > 0) {
            ssize_t w = write(2, line, (size_t)n);
            (void)w;
        }
    }
}

static void guard_reserve(void) {
    for (size_t gb = 64; gb >= 1; gb /= 2) {
        size_t bytes = gb << 30;
        void *p = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p != MAP_FAILED) {
            g.region = p;
            g.reserved = bytes;
            g.used = 0;
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_sigaction = guard_fault;
            sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
            sigaction(SIGSEGV, &sa, NULL);
            return;
        }
    }
    die("cpu-guarded device: could not reserve 1 GiB of address space");
}

/* A block of at least `bytes` (page multiple): a free one that fits, else fresh pages. */
static char *guard_take(size_t bytes, size_t *capacity) {
    size_t need = (bytes + page_size() - 1) / page_size() * page_size();
    if (need == 0) need = page_size();
    int best = -1;
    for (int i = 0; i < g.nblocks; i++)
        if (!g.blocks[i].live && g.blocks[i].capacity >= need &&
            (best < 0 || g.blocks[i].capacity < g.blocks[best].capacity))
            best = i;
    if (best >= 0) {
        char *p = g.blocks[best].base;
        *capacity = g.blocks[best].capacity;
        g.blocks[best] = g.blocks[--g.nblocks]; /* the caller records it again as live */
        return p;
    }
    if (g.used + need > g.reserved)
        die("cpu-guarded device: out of reserved address space (%zu of %zu bytes used, %zu more asked)",
            g.used, g.reserved, need);
    char *p = g.region + g.used;
    g.used += need;
    *capacity = need;
    /* new pages join the used prefix with the protection of the moment */
    if (mprotect(p, need, g.open_depth ? PROT_READ | PROT_WRITE : PROT_NONE) != 0)
        die("cpu-guarded device: mprotect failed");
    return p;
}

/* ---------------------------------------------------------------- the table of blocks */

static void record(char *base, size_t bytes, size_t capacity) {
    if (g.nblocks == g.cap_blocks) {
        g.cap_blocks = g.cap_blocks ? 2 * g.cap_blocks : 64;
        block *grown = mallocCheck(sizeof *grown * (size_t)g.cap_blocks);
        if (g.nblocks) memcpy(grown, g.blocks, sizeof *grown * (size_t)g.nblocks);
        free(g.blocks);
        g.blocks = grown;
    }
    g.blocks[g.nblocks++] = (block){base, bytes, capacity, true};
    g.in_use += bytes;
    if (g.in_use > g.peak) g.peak = g.in_use;
}

static int find_block(const void *p) {
    const char *c = p;
    for (int i = 0; i < g.nblocks; i++)
        if (g.blocks[i].live && c >= g.blocks[i].base && c < g.blocks[i].base + (g.blocks[i].bytes ? g.blocks[i].bytes : 1))
            return i;
    return -1;
}

bool device_owns(const void *p) { return g.kind != DEVICE_CPU && p && find_block(p) >= 0; }

/* ---------------------------------------------------------------- init */

bool device_init(device_kind kind, int gpu, char *err, size_t errlen) {
    if (kind == g.kind) return true;
    CHECK(g.nblocks == 0 || g.kind == DEVICE_CPU, "device_init: device memory still allocated");
    if (!device_kind_built(kind)) {
        snprintf(err, errlen,
                 "--device %s: this trident was built without CUDA (nvcc was not found at build time); "
                 "use --device cpu",
                 device_kind_name(kind));
        return false;
    }
    if (g.kind != DEVICE_CPU) device_shutdown();
    if (kind == DEVICE_CUDA) {
#ifdef TRIDENT_CUDA
        if (gpu < 0 || gpu >= cuda_device_count()) {
            snprintf(err, errlen, "--device cuda: no GPU is visible to this process (no driver, or "
                                  "CUDA_VISIBLE_DEVICES is empty); use --device cpu");
            return false;
        }
        g.gpu = gpu;
        cuda_context_init(&g.ctx, g.gpu);
#endif
    } else if (kind == DEVICE_CPU_GUARDED) {
        guard_reserve();
    }
    (void)gpu;
    g.kind = kind;
    return true;
}

void device_shutdown(void) {
    if (g.kind == DEVICE_CPU) return;
    CHECK(g.in_use == 0, "device_shutdown: device memory is still allocated (a missing device_free)");
#ifdef TRIDENT_CUDA
    if (ON_CUDA) cuda_context_free(&g.ctx);
#endif
    if (g.kind == DEVICE_CPU_GUARDED) {
        munmap(g.region, g.reserved);
        g.region = NULL;
        g.reserved = g.used = 0;
        signal(SIGSEGV, SIG_DFL);
    }
    free(g.blocks);
    g.blocks = NULL;
    g.nblocks = g.cap_blocks = 0;
    g.kind = DEVICE_CPU;
    g.gpu = -1;
}

/* ---------------------------------------------------------------- memory */

void *device_alloc(size_t bytes, const char *what) {
    if (g.kind == DEVICE_CPU) return callocCheck(bytes ? bytes : 1, 1);
    char *p = NULL;
    size_t capacity = bytes;
#ifdef TRIDENT_CUDA
    if (ON_CUDA) {
        void *d = NULL;
        cudaError_t e = cudaMalloc(&d, bytes ? bytes : 1);
        if (e != cudaSuccess)
            die("--device cuda: cudaMalloc of %zu bytes for %s failed (%s); %zu bytes already in use",
                bytes, what, cudaGetErrorString(e), g.in_use);
        p = d;
        cuda_zero(CTX, p, bytes);
    }
#endif
    if (g.kind == DEVICE_CPU_GUARDED) {
        p = guard_take(bytes, &capacity);
        guard_open();
        memset(p, 0, bytes);
        guard_close();
    }
    CHECK(p != NULL, "device_alloc: no memory");
    (void)what;
    record(p, bytes, capacity);
    return p;
}

void device_free(void *p) {
    if (!p) return;
    if (g.kind == DEVICE_CPU) {
        free(p);
        return;
    }
    int i = find_block(p);
    CHECK(i >= 0 && g.blocks[i].base == p, "device_free of a pointer device_alloc did not return");
    g.in_use -= g.blocks[i].bytes;
#ifdef TRIDENT_CUDA
    if (ON_CUDA) {
        cudaCheck(cudaFree(p));
        g.blocks[i] = g.blocks[--g.nblocks];
        return;
    }
#endif
    g.blocks[i].live = false; /* cpu-guarded: the pages stay reserved, for the next fit */
}

void device_upload(void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
#ifdef TRIDENT_CUDA
    if (ON_CUDA) {
        cuda_upload(CTX, dst, src, bytes);
        return;
    }
#endif
    guard_open();
    memcpy(dst, src, bytes);
    guard_close();
}

void device_download(void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
#ifdef TRIDENT_CUDA
    if (ON_CUDA) {
        cuda_download(CTX, dst, src, bytes);
        return;
    }
#endif
    guard_open();
    memcpy(dst, src, bytes);
    guard_close();
}

void device_copy(void *dst, const void *src, size_t bytes) {
    if (!bytes || dst == src) return;
#ifdef TRIDENT_CUDA
    if (ON_CUDA) {
        cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, g.ctx.stream));
        return;
    }
#endif
    guard_open();
    memmove(dst, src, bytes);
    guard_close();
}

void device_zero(void *dst, size_t bytes) {
    if (!bytes) return;
#ifdef TRIDENT_CUDA
    if (ON_CUDA) {
        cuda_zero(CTX, dst, bytes);
        return;
    }
#endif
    guard_open();
    memset(dst, 0, bytes);
    guard_close();
}

void device_sync(void) {
#ifdef TRIDENT_CUDA
    if (ON_CUDA) cuda_context_sync(CTX);
#endif
}

/* ---------------------------------------------------------------- kernels
 *
 * KERNEL(cuda call, cpu call): the CUDA twin on the cuda device, else the CPU kernel with the
 * guarded pages open. */
#ifdef TRIDENT_CUDA
#define KERNEL(cuda_call, cpu_call)                                                                \
    do {                                                                                           \
        if (ON_CUDA) {                                                                             \
            cuda_call;                                                                             \
        } else {                                                                                   \
            guard_open();                                                                          \
            cpu_call;                                                                              \
            guard_close();                                                                         \
        }                                                                                          \
    } while (0)
#else
#define KERNEL(cuda_call, cpu_call)                                                                \
    do {                                                                                           \
        guard_open();                                                                              \
        cpu_call;                                                                                  \
        guard_close();                                                                             \
    } while (0)
#endif

void dev_matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                        size_t N, size_t C, size_t OC) {
    KERNEL(cuda_matmul_forward(CTX, out, inp, weight, bias, N, C, OC),
           matmul_forward(out, inp, weight, bias, N, C, OC));
}

void dev_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                         const float *inp, const float *weight, size_t N, size_t C, size_t OC) {
    KERNEL(cuda_matmul_backward(CTX, dinp, dweight, dbias, dout, inp, weight, N, C, OC),
           matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC));
}

void dev_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                           const float *w, const float *b, size_t N, size_t C) {
    KERNEL(cuda_layernorm_forward(CTX, out, mean, rstd, inp, w, b, N, C),
           layernorm_forward(out, mean, rstd, inp, w, b, N, C));
}

void dev_layernorm_backward(float *dinp, float *dw, float *db, const float *dout,
                            const float *inp, const float *w, const float *mean,
                            const float *rstd, size_t N, size_t C) {
    KERNEL(cuda_layernorm_backward(CTX, dinp, dw, db, dout, inp, w, mean, rstd, N, C),
           layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C));
}

void dev_attention_forward(float *out, float *att, const float *qkv, size_t B, size_t T,
                           size_t NH, size_t HS) {
    KERNEL(cuda_attention_forward(CTX, out, att, qkv, B, T, NH, HS),
           attention_forward(out, att, qkv, B, T, NH, HS));
}

void dev_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                            float *scratch, size_t B, size_t T, size_t NH, size_t HS) {
    KERNEL(cuda_attention_backward(CTX, dqkv, dout, qkv, att, scratch, B, T, NH, HS),
           attention_backward(dqkv, dout, qkv, att, scratch, B, T, NH, HS));
}

size_t dev_attention_scratch_floats(size_t T, size_t NH) {
    /* the CPU works one head at a time, the GPU on all heads of a batch row at once */
    return g.kind == DEVICE_CUDA ? NH * T * T : T * T;
}

void dev_gelu_forward(float *out, const float *inp, size_t n) {
    KERNEL(cuda_gelu_forward(CTX, out, inp, n), gelu_forward(out, inp, n));
}

void dev_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n) {
    KERNEL(cuda_gelu_backward(CTX, dinp, inp, dout, n), gelu_backward(dinp, inp, dout, n));
}

void dev_add_inplace(float *y, const float *x, size_t n) {
    KERNEL(cuda_add_inplace(CTX, y, x, n), add_inplace(y, x, n));
}

void dev_add_bias_rows(float *x, const float *bias, size_t N, size_t OC) {
    KERNEL(cuda_add_bias_rows(CTX, x, bias, N, OC), add_bias_rows(x, bias, N, OC));
}

void dev_embedding_forward(float *out, const int32_t *tokens, const float *wte, size_t N,
                           size_t C, int64_t v_start, size_t V) {
    KERNEL(cuda_embedding_forward(CTX, out, tokens, wte, N, C, v_start, V),
           embedding_forward(out, tokens, wte, N, C, v_start, V));
}

void dev_embedding_backward(float *dwte, const float *dout, const int32_t *tokens, size_t N,
                            size_t C, int64_t v_start, size_t V) {
    KERNEL(cuda_embedding_backward(CTX, dwte, dout, tokens, N, C, v_start, V),
           embedding_backward(dwte, dout, tokens, N, C, v_start, V));
}

void dev_position_forward(float *out, const float *wpe, size_t B, size_t T, size_t C) {
    KERNEL(cuda_position_forward(CTX, out, wpe, B, T, C), position_forward(out, wpe, B, T, C));
}

void dev_position_backward(float *dwpe, const float *dout, size_t B, size_t T, size_t C) {
    KERNEL(cuda_position_backward(CTX, dwpe, dout, B, T, C), position_backward(dwpe, dout, B, T, C));
}

void dev_crossentropy_local_max(float *rowmax, const float *logits, size_t N, size_t V,
                                int64_t v_start, int64_t real_vocab) {
    KERNEL(cuda_crossentropy_local_max(CTX, rowmax, logits, N, V, v_start, real_vocab),
           crossentropy_local_max(rowmax, logits, N, V, v_start, real_vocab));
}

void dev_crossentropy_local_sums(float *sumexp, float *target_logit, const float *logits,
                                 const float *rowmax, const int32_t *targets, size_t N, size_t V,
                                 int64_t v_start, int64_t real_vocab) {
    KERNEL(cuda_crossentropy_local_sums(CTX, sumexp, target_logit, logits, rowmax, targets, N, V,
                                        v_start, real_vocab),
           crossentropy_local_sums(sumexp, target_logit, logits, rowmax, targets, N, V, v_start,
                                   real_vocab));
}

void dev_crossentropy_loss(float *loss, const float *sumexp, const float *rowmax,
                           const float *target_logit, size_t N) {
    KERNEL(cuda_crossentropy_loss(CTX, loss, sumexp, rowmax, target_logit, N),
           crossentropy_loss(loss, sumexp, rowmax, target_logit, N));
}

void dev_crossentropy_backward(float *dlogits, const float *logits, const float *rowmax,
                               const float *sumexp, const int32_t *targets, const float *dloss,
                               size_t N, size_t V, int64_t v_start, int64_t real_vocab) {
    KERNEL(cuda_crossentropy_backward(CTX, dlogits, logits, rowmax, sumexp, targets, dloss, N, V,
                                      v_start, real_vocab),
           crossentropy_backward(dlogits, logits, rowmax, sumexp, targets, dloss, N, V, v_start,
                                 real_vocab));
}

/* ---------------------------------------------------------------- optimizer and precision */

void dev_fill(float *x, float value, size_t n) {
    KERNEL(cuda_fill(CTX, x, value, n), fill_value(x, value, n));
}

void dev_scale(float *x, float s, size_t n) {
    KERNEL(cuda_scale(CTX, x, s, n), scale_inplace(x, s, n));
}

double dev_sum(const float *x, size_t n) {
    /* Small vectors (per-position losses): the host adds them, in index order, everywhere. */
    const float *h = x;
    float *copy = NULL;
    if (g.kind == DEVICE_CUDA) {
        copy = mallocCheck(n * sizeof(float) + 1);
        device_download(copy, x, n * sizeof(float));
        h = copy;
    }
    double s = 0.0;
    guard_open();
    for (size_t i = 0; i < n; i++) s += h[i];
    guard_close();
    free(copy);
    return s;
}

double dev_sumsq(const float *x, size_t n) {
    double s = 0.0;
    KERNEL(s = cuda_sumsq(CTX, x, n), s = sum_squares(x, n));
    return s;
}

bool dev_has_inf_or_nan(const float *x, size_t n) {
    bool bad = false;
    KERNEL(bad = cuda_has_inf_or_nan(CTX, x, n), bad = prec_has_inf_or_nan(x, n));
    return bad;
}

void dev_round(prec_dtype t, float *x, size_t n) {
    if (t == PREC_FP32) return;
    KERNEL(t == PREC_BF16 ? cuda_round_to_bf16(CTX, x, n) : cuda_round_to_fp16(CTX, x, n),
           prec_round_array(t, x, n));
}

void dev_adamw_update(float *p, const float *gr, float *m, float *v, size_t n,
                      const adamw_config *cfg, float lr, float wd, int t, float grad_scale) {
    KERNEL(cuda_adamw_update(CTX, p, gr, m, v, n, cfg->beta1, cfg->beta2, cfg->eps, lr, wd, t,
                             grad_scale),
           adamw_update(p, gr, m, v, n, cfg, lr, wd, t, grad_scale));
}
