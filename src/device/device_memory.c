/* device_memory.c — see device_memory.h.
 *
 * Reading guide: the process has one current device (g.kind). Memory calls branch on it:
 * cuda goes to the CUDA runtime and kernels/ops_cuda.h's copies (CUDA builds only), the two
 * CPU devices to plain memory. The cpu-guarded device adds one thing around every copy (and,
 * through device_guard_open/close, around every kernel of device.c): the pages of device
 * memory are readable only inside it.
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
#include "src/device/device_memory.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/core/check.h"

/* One live allocation (every device: the accounting of device_bytes_in_use/peak). */
typedef struct {
    char *base;
    size_t bytes;    /* what was asked for */
    size_t capacity; /* cpu-guarded: the block's size (pages); reused when free */
    bool live;
    bool host;        /* calloc'ed host memory (the cpu device), freed with free() */
    const char *what; /* device_alloc's label (a string literal) */
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
size_t device_bytes_in_use(void) { return g.in_use; }
size_t device_bytes_peak(void) { return g.peak; }
void device_bytes_peak_reset(void) { g.peak = g.in_use; }

size_t device_bytes_in_use_of(const char *what) {
    size_t n = 0;
    for (int i = 0; i < g.nblocks; i++)
        if (g.blocks[i].live && g.blocks[i].what && strcmp(g.blocks[i].what, what) == 0)
            n += g.blocks[i].bytes;
    return n;
}

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
        int n = snprintf(
            line, sizeof line,
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
        die("cpu-guarded device: out of reserved address space (%zu of %zu bytes used, %zu more "
            "asked)",
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

static void record(char *base, size_t bytes, size_t capacity, bool host, const char *what) {
    if (g.nblocks == g.cap_blocks) {
        g.cap_blocks = g.cap_blocks ? 2 * g.cap_blocks : 64;
        block *grown = mallocCheck(sizeof *grown * (size_t)g.cap_blocks);
        if (g.nblocks) memcpy(grown, g.blocks, sizeof *grown * (size_t)g.nblocks);
        free(g.blocks);
        g.blocks = grown;
    }
    g.blocks[g.nblocks++] = (block){base, bytes, capacity, true, host, what};
    g.in_use += bytes;
    if (g.in_use > g.peak) g.peak = g.in_use;
}

/* From the newest block down: a short-lived work space is found at once. */
static int find_block(const void *p) {
    const char *c = p;
    for (int i = g.nblocks - 1; i >= 0; i--)
        if (g.blocks[i].live && c >= g.blocks[i].base &&
            c < g.blocks[i].base + (g.blocks[i].bytes ? g.blocks[i].bytes : 1))
            return i;
    return -1;
}

bool device_owns(const void *p) {
    if (g.kind == DEVICE_CPU || !p) return false;
    int i = find_block(p);
    return i >= 0 && !g.blocks[i].host;
}

/* ---------------------------------------------------------------- init */

bool device_init(device_kind kind, int gpu, char *err, size_t errlen) {
    if (kind == g.kind) return true;
    CHECK(g.nblocks == 0 || g.kind == DEVICE_CPU, "device_init: device memory still allocated");
    if (!device_kind_built(kind)) {
        snprintf(
            err, errlen,
            "--device %s: this trident was built without CUDA (nvcc was not found at build time); "
            "use --device cpu",
            device_kind_name(kind));
        return false;
    }
    if (g.kind != DEVICE_CPU) device_shutdown();
    if (kind == DEVICE_CUDA) {
#ifdef TRIDENT_CUDA
        if (gpu < 0 || gpu >= cuda_device_count()) {
            snprintf(err, errlen,
                     "--device cuda: no GPU is visible to this process (no driver, or "
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
    CHECK(g.in_use == 0,
          "device_shutdown: device memory is still allocated (a missing device_free)");
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
    if (g.kind == DEVICE_CPU) {
        char *h = callocCheck(bytes ? bytes : 1, 1);
        record(h, bytes, bytes, true, what);
        return h;
    }
    char *p = NULL;
    size_t capacity = bytes;
#ifdef TRIDENT_CUDA
    if (ON_CUDA) {
        void *d = NULL;
        cudaError_t e = cudaMalloc(&d, bytes ? bytes : 1);
        if (e != cudaSuccess)
            die("--device cuda: cudaMalloc of %zu bytes for %s failed (%s); %zu bytes already in "
                "use",
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
    record(p, bytes, capacity, false, what);
    return p;
}

void device_free(void *p) {
    if (!p) return;
    int i = find_block(p);
    if (i < 0 && g.kind == DEVICE_CPU) { /* a host pointer from elsewhere: plain memory here */
        free(p);
        return;
    }
    CHECK(i >= 0 && g.blocks[i].base == p, "device_free of a pointer device_alloc did not return");
    g.in_use -= g.blocks[i].bytes;
    if (g.blocks[i].host) {
        free(p);
        g.blocks[i] = g.blocks[--g.nblocks];
        return;
    }
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

void device_guard_open(void) { guard_open(); }
void device_guard_close(void) { guard_close(); }

#ifdef TRIDENT_CUDA
cuda_context *device_cuda_context(void) { return &g.ctx; }
#endif
