/* shard_ranges.c — the ZeRO index arithmetic (see shard_ranges.h for the three index
 * spaces, the padding rule and the bucket rule): ZeRO-1's one cut of the whole buffer, and
 * ZeRO-2/3's UNITS, each cut on its own. Pure data: no MPI, no model. */
#include "src/zero/shard_ranges.h"

#include <string.h>

#include "src/core/check.h"

size_t zero_padded_numel(size_t numel, int dp, size_t align) {
    if (dp < 1) die("zero: data-parallel size %d must be at least 1", dp);
    if (align == 0) align = 1;
    size_t unit = (size_t)dp * align;
    return (numel + unit - 1) / unit * unit;
}

static char *copy_string(const char *s) {
    if (!s) s = "?";
    size_t n = strlen(s) + 1;
    char *c = mallocCheck(n);
    memcpy(c, s, n);
    return c;
}

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }
static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

/* Fills shard d's pieces: every parameter whose [offset, offset+numel) meets [s, e). */
/* exercise 6 begins: one shard's pieces (tutorials/exercises/06-zero-shard-ranges) */
static void build_shard(zero_ranges *r, int d) {
    zero_shard *sh = &r->shards[d];
    size_t s = (size_t)d * r->shard_numel, e = s + r->shard_numel;
    sh->rank = d;
    sh->world_start = s;
    sh->world_end = e;
    sh->real_numel = r->numel > s ? min_sz(e, r->numel) - s : 0;
    sh->n_pieces = 0;
    sh->pieces = NULL;
    for (int pass = 0; pass < 2; pass++) { /* pass 0 counts, pass 1 fills */
        int k = 0;
        for (int p = 0; p < r->n_params; p++) {
            size_t o = r->offsets[p], n = r->params[p].numel;
            size_t lo = max_sz(o, s), hi = min_sz(o + n, e);
            if (lo >= hi) continue;
            if (pass == 1) {
                zero_piece *pc = &sh->pieces[k];
                pc->param = p;
                pc->world_start = lo;
                pc->world_end = hi;
                pc->local_start = lo - s;
                pc->local_end = hi - s;
                pc->param_start = lo - o;
                pc->param_end = hi - o;
            }
            k++;
        }
        if (pass == 0) {
            sh->n_pieces = k;
            if (k == 0) break;
            sh->pieces = mallocCheck((size_t)k * sizeof(zero_piece));
        }
    }
}

/* exercise 6 ends */

/* The bucket rule of shard_ranges.h. Buckets grow in a list of known upper size. */
typedef struct {
    zero_bucket *b;
    int n, cap;
} bucket_list;

static void push_bucket(bucket_list *l, size_t start, size_t end, int first, int last) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        zero_bucket *nb = mallocCheck((size_t)l->cap * sizeof(zero_bucket));
        if (l->n) memcpy(nb, l->b, (size_t)l->n * sizeof(zero_bucket));
        free(l->b);
        l->b = nb;
    }
    l->b[l->n++] = (zero_bucket){start, end, first, last};
}

static void build_buckets(zero_ranges *r) {
    bucket_list l = {NULL, 0, 0};
    size_t B = r->bucket_numel ? r->bucket_numel : max_sz(r->numel, 1);
    size_t open_start = 0; /* the open bucket is [open_start, current position) */
    int open_first = -1, open_last = -1;
    for (int p = 0; p < r->n_params; p++) {
        size_t o = r->offsets[p], n = r->params[p].numel;
        if (n == 0) continue;
        if (open_first >= 0 && (o - open_start) + n > B) { /* p does not fit: close at o */
            push_bucket(&l, open_start, o, open_first, open_last);
            open_first = -1;
        }
        if (open_first < 0) {
            open_start = o;
            open_first = p;
        }
        open_last = p;
        while (o + n - open_start > B) { /* only when p alone is larger than B */
            push_bucket(&l, open_start, open_start + B, p, p);
            open_start += B;
        }
    }
    if (open_first >= 0) push_bucket(&l, open_start, r->numel, open_first, open_last);
    r->n_buckets = l.n;
    r->buckets = l.b;
}

/* A layout with the parameters copied (names too) and their offsets; no shards yet. */
static zero_ranges *ranges_new(const zero_param *params, int n_params, int dp, size_t align) {
    if (dp < 1) die("zero: data-parallel size %d must be at least 1", dp);
    CHECK(n_params >= 0 && (n_params == 0 || params), "pass the parameter list in buffer order");
    zero_ranges *r = callocCheck(1, sizeof *r);
    r->n_params = n_params;
    r->params = mallocCheck((size_t)n_params * sizeof(zero_param));
    r->offsets = mallocCheck((size_t)n_params * sizeof(size_t));
    size_t off = 0;
    for (int p = 0; p < n_params; p++) {
        r->params[p] = params[p];
        r->params[p].name = copy_string(params[p].name);
        r->offsets[p] = off;
        CHECK(off + params[p].numel >= off, "parameter sizes overflow size_t");
        off += params[p].numel;
    }
    r->numel = off;
    r->dp = dp;
    r->align = align ? align : 1;
    r->shards = mallocCheck((size_t)dp * sizeof(zero_shard));
    return r;
}

zero_ranges *zero_ranges_build(const zero_param *params, int n_params, int dp, size_t align,
                               size_t bucket_numel) {
    zero_ranges *r = ranges_new(params, n_params, dp, align);
    r->padded_numel = zero_padded_numel(r->numel, dp, r->align);
    r->shard_numel = r->padded_numel / (size_t)dp;
    for (int d = 0; d < dp; d++) build_shard(r, d);
    r->bucket_numel = bucket_numel;
    build_buckets(r);
    r->n_units = 1; /* the whole buffer, cut once */
    r->units = mallocCheck(sizeof *r->units);
    r->units[0] = (zero_unit){0, n_params - 1, 0, r->numel, r->shard_numel, 0};
    return r;
}

/* ---------------------------------------------------------------- units (ZeRO-2/3) */

/* Shard d of the units layout: in every unit, the pieces of its slice d. */
static void build_unit_shard(zero_ranges *r, int d) {
    zero_shard *sh = &r->shards[d];
    memset(sh, 0, sizeof *sh);
    sh->rank = d;
    for (int pass = 0; pass < 2; pass++) { /* pass 0 counts, pass 1 fills */
        int k = 0;
        for (int u = 0; u < r->n_units; u++) {
            const zero_unit *un = &r->units[u];
            const size_t s = un->world_start + (size_t)d * un->shard_numel;
            const size_t e = min_sz(s + un->shard_numel, un->world_end);
            for (int p = un->first_param; p <= un->last_param; p++) {
                size_t o = r->offsets[p], lo = max_sz(o, s), hi = min_sz(o + r->params[p].numel, e);
                if (lo >= hi) continue;
                if (pass == 1) {
                    const size_t l = un->local_start + (lo - s);
                    sh->pieces[k] = (zero_piece){p, lo, hi, l, l + (hi - lo), lo - o, hi - o};
                    sh->real_numel += hi - lo;
                }
                k++;
            }
        }
        if (pass == 0) {
            sh->n_pieces = k;
            if (k == 0) break;
            sh->pieces = mallocCheck((size_t)k * sizeof(zero_piece));
        }
    }
}

zero_ranges *zero_ranges_build_units(const zero_param *params, int n_params, int dp, size_t align,
                                     const int *unit_first, int n_units) {
    if (n_params > 0 && (n_units < 1 || !unit_first || unit_first[0] != 0))
        die("zero: the first unit must start at parameter 0 (%d units)", n_units);
    zero_ranges *r = ranges_new(params, n_params, dp, align);
    r->n_units = n_params > 0 ? n_units : 0;
    r->units = callocCheck((size_t)(r->n_units ? r->n_units : 1), sizeof *r->units);
    r->buckets = callocCheck((size_t)(r->n_units ? r->n_units : 1), sizeof *r->buckets);
    r->n_buckets = r->n_units;
    size_t local = 0;
    for (int u = 0; u < r->n_units; u++) {
        const int first = unit_first[u], end = u + 1 < n_units ? unit_first[u + 1] : n_params;
        if (first >= end || end > n_params)
            die("zero: unit %d starts at parameter %d and the next at %d: units are increasing "
                "and below %d parameters",
                u, first, end, n_params);
        zero_unit *un = &r->units[u];
        un->first_param = first;
        un->last_param = end - 1;
        un->world_start = r->offsets[first];
        un->world_end = r->offsets[end - 1] + r->params[end - 1].numel;
        const size_t n = un->world_end - un->world_start;
        un->shard_numel = zero_padded_numel(n, dp, r->align) / (size_t)dp;
        un->local_start = local;
        local += un->shard_numel;
        r->buckets[u] = (zero_bucket){un->world_start, un->world_end, first, end - 1};
    }
    r->shard_numel = local;
    r->padded_numel = local * (size_t)dp;
    for (int d = 0; d < dp; d++) build_unit_shard(r, d);
    return r;
}

void zero_ranges_drop(zero_ranges *r, const bool *drop) {
    for (int d = 0; d < r->dp; d++) {
        zero_shard *sh = &r->shards[d];
        int kept = 0;
        for (int k = 0; k < sh->n_pieces; k++)
            if (!drop[sh->pieces[k].param]) sh->pieces[kept++] = sh->pieces[k];
        sh->n_pieces = kept;
    }
}

int zero_ranges_unit_of(const zero_ranges *r, size_t w) {
    int lo = 0, hi = r->n_units - 1; /* units are in buffer order */
    while (lo <= hi) {
        const int mid = (lo + hi) / 2;
        if (w < r->units[mid].world_start) hi = mid - 1;
        else if (w >= r->units[mid].world_end) lo = mid + 1;
        else return mid;
    }
    return -1;
}

void zero_ranges_free(zero_ranges *r) {
    if (!r) return;
    for (int p = 0; p < r->n_params; p++) free((char *)r->params[p].name);
    for (int d = 0; d < r->dp; d++) free(r->shards[d].pieces);
    free(r->params);
    free(r->offsets);
    free(r->shards);
    free(r->buckets);
    free(r->units);
    free(r);
}

int zero_ranges_owner(const zero_ranges *r, size_t w) {
    if (r->n_units > 1) {
        const int u = zero_ranges_unit_of(r, w);
        CHECK(u >= 0, "world index beyond the parameters");
        return (int)((w - r->units[u].world_start) / r->units[u].shard_numel);
    }
    CHECK(w < r->padded_numel, "world index beyond the padded buffer");
    return (int)(w / r->shard_numel);
}

bool zero_ranges_param_is_cut(const zero_ranges *r, int p) {
    CHECK(p >= 0 && p < r->n_params, "parameter index out of range");
    size_t n = r->params[p].numel;
    if (n == 0) return false;
    return zero_ranges_owner(r, r->offsets[p]) != zero_ranges_owner(r, r->offsets[p] + n - 1);
}

static int name_width(const zero_ranges *r) {
    int w = 5;
    for (int p = 0; p < r->n_params; p++) {
        int l = (int)strlen(r->params[p].name);
        if (l > w) w = l;
    }
    return w;
}

/* "[a, b)" into buf, for column alignment. */
static const char *range_str(char *buf, size_t cap, size_t a, size_t b) {
    snprintf(buf, cap, "[%zu, %zu)", a, b);
    return buf;
}

void zero_ranges_print(FILE *f, const zero_ranges *r) {
    char a[64], b[64], c[64];
    int nw = name_width(r);
    const bool units = r->n_units > 1;
    fprintf(f, "ZeRO-%s shard ranges: %d parameters, psi = %zu elements, dp = %d\n",
            units ? "2/3" : "1", r->n_params, r->numel, r->dp);
    if (units)
        fprintf(f,
                "  %d units, each cut on its own into slices of a multiple of %zu elements; %zu "
                "padding in all, shard S = %zu elements per rank\n",
                r->n_units, r->align, r->padded_numel - r->numel, r->shard_numel);
    else
        fprintf(f,
                "  buffer padded to %zu (a multiple of dp * align = %d * %zu; %zu padding), "
                "shard S = %zu elements per rank\n",
                r->padded_numel, r->dp, r->align, r->padded_numel - r->numel, r->shard_numel);
    fprintf(f, "  %4s  %-*s  %-24s  %-20s  %-24s  %3s  %4s\n", "rank", nw, "param", "world",
            "local", "param range / numel", "wd", "norm");
    for (int d = 0; d < r->dp; d++) {
        const zero_shard *sh = &r->shards[d];
        for (int k = 0; k < sh->n_pieces; k++) {
            const zero_piece *pc = &sh->pieces[k];
            const zero_param *pr = &r->params[pc->param];
            char pr_s[96];
            snprintf(pr_s, sizeof pr_s, "%s / %zu",
                     range_str(c, sizeof c, pc->param_start, pc->param_end), pr->numel);
            fprintf(f, "  %4d  %-*s  %-24s  %-20s  %-24s  %3s  %4s%s\n", d, nw, pr->name,
                    range_str(a, sizeof a, pc->world_start, pc->world_end),
                    range_str(b, sizeof b, pc->local_start, pc->local_end), pr_s,
                    pr->weight_decay ? "yes" : "no", pr->in_grad_norm ? "yes" : "no",
                    zero_ranges_param_is_cut(r, pc->param) ? "  (cut)" : "");
        }
        if (!units && sh->real_numel < r->shard_numel) {
            size_t ps = sh->world_start + sh->real_numel;
            fprintf(f, "  %4d  %-*s  %-24s  %s\n", d, nw, "(pad)",
                    range_str(a, sizeof a, ps, sh->world_end),
                    range_str(b, sizeof b, ps - sh->world_start, r->shard_numel));
        }
    }
    if (units)
        fprintf(f, "  buckets: the %d units (slice s_u, local start of every rank's slice)\n",
                r->n_units);
    else if (r->bucket_numel)
        fprintf(f,
                "  buckets: %d of at most %zu elements (ending on parameter ends where possible)\n",
                r->n_buckets, r->bucket_numel);
    else fprintf(f, "  buckets: %d (one for the whole buffer)\n", r->n_buckets);
    for (int i = 0; i < r->n_buckets; i++) {
        const zero_bucket *bk = &r->buckets[i];
        fprintf(f, "  %6d  %-24s  %10zu elements  %s .. %s", i,
                range_str(a, sizeof a, bk->world_start, bk->world_end),
                bk->world_end - bk->world_start, r->params[bk->first_param].name,
                r->params[bk->last_param].name);
        if (units) fprintf(f, "  s_u %zu at %zu", r->units[i].shard_numel, r->units[i].local_start);
        fprintf(f, "\n");
    }
}
