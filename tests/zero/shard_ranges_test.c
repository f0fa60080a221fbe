/* shard_ranges_test.c — ZeRO-1 shards in the three index spaces: hand-worked layouts
 * (uneven splits, a parameter over several shards, padding-only shards, dp = 1, dp > Ψ),
 * the tiling invariants on a GPT-like parameter list at dp = 1..8, and the bucket rule;
 * ZeRO-2/3's UNITS layout: a hand-worked cut, its invariants at dp = 1..8, equal units cut
 * alike (the tied wte), and a bad unit list refused. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/zero/shard_ranges.h"
#include "tests/support/testing.h"

/* ------------------------------------------------------------------ invariants */

/* Everything shard_ranges.h promises, checked on any layout. */
static void check_invariants(const zero_ranges *r) {
    size_t unit = (size_t)r->dp * r->align;
    assert_int_equal(r->padded_numel % unit, 0);
    assert_true(r->padded_numel >= r->numel);
    assert_true(r->padded_numel - r->numel < unit);
    assert_int_equal(r->shard_numel * (size_t)r->dp, r->padded_numel);

    /* Offsets are the running sum of numel. */
    size_t off = 0;
    for (int p = 0; p < r->n_params; p++) {
        assert_int_equal(r->offsets[p], off);
        off += r->params[p].numel;
    }
    assert_int_equal(off, r->numel);

    /* Pieces in rank order then buffer order tile [0, numel) exactly once. */
    size_t next_world = 0;
    size_t *param_seen = calloc((size_t)r->n_params + 1, sizeof(size_t));
    for (int d = 0; d < r->dp; d++) {
        const zero_shard *sh = &r->shards[d];
        assert_int_equal(sh->rank, d);
        assert_int_equal(sh->world_start, (size_t)d * r->shard_numel);
        assert_int_equal(sh->world_end, sh->world_start + r->shard_numel);
        size_t real = 0, next_local = 0;
        for (int k = 0; k < sh->n_pieces; k++) {
            const zero_piece *pc = &sh->pieces[k];
            size_t len = pc->world_end - pc->world_start;
            assert_true(len > 0);
            assert_int_equal(pc->world_start, next_world);
            next_world = pc->world_end;
            /* world = shard start + local */
            assert_int_equal(pc->world_start, sh->world_start + pc->local_start);
            assert_int_equal(pc->world_end, sh->world_start + pc->local_end);
            assert_true(pc->local_end <= r->shard_numel);
            assert_int_equal(pc->local_start, next_local);
            next_local = pc->local_end;
            /* world = parameter offset + param */
            assert_true(pc->param >= 0 && pc->param < r->n_params);
            assert_int_equal(pc->world_start, r->offsets[pc->param] + pc->param_start);
            assert_int_equal(pc->world_end, r->offsets[pc->param] + pc->param_end);
            assert_true(pc->param_end <= r->params[pc->param].numel);
            /* A parameter's pieces continue where the previous one stopped. */
            assert_int_equal(pc->param_start, param_seen[pc->param]);
            param_seen[pc->param] = pc->param_end;
            real += len;
        }
        assert_int_equal(sh->real_numel, real);
        if (sh->world_start >= r->numel) assert_int_equal(sh->n_pieces, 0);
    }
    assert_int_equal(next_world, r->numel);
    for (int p = 0; p < r->n_params; p++) assert_int_equal(param_seen[p], r->params[p].numel);
    free(param_seen);

    /* Buckets tile [0, numel), respect the size bound, and end on a parameter's end unless
     * they cut a parameter that is larger than a bucket on its own. */
    size_t B = r->bucket_numel;
    size_t next_b = 0;
    for (int i = 0; i < r->n_buckets; i++) {
        const zero_bucket *b = &r->buckets[i];
        assert_int_equal(b->world_start, next_b);
        assert_true(b->world_end > b->world_start);
        next_b = b->world_end;
        if (B) assert_true(b->world_end - b->world_start <= B);
        int last = b->last_param;
        size_t last_end = r->offsets[last] + r->params[last].numel;
        if (b->world_end != last_end) {
            assert_true(B && r->params[last].numel > B);
            assert_int_equal(b->first_param, last);
        }
        assert_true(r->offsets[b->first_param] < b->world_end);
        assert_true(r->offsets[b->first_param] + r->params[b->first_param].numel > b->world_start);
    }
    assert_int_equal(next_b, r->numel);
}

static void expect_piece(const zero_piece *pc, int param, size_t w0, size_t w1, size_t l0,
                         size_t l1, size_t p0, size_t p1) {
    assert_int_equal(pc->param, param);
    assert_int_equal(pc->world_start, w0);
    assert_int_equal(pc->world_end, w1);
    assert_int_equal(pc->local_start, l0);
    assert_int_equal(pc->local_end, l1);
    assert_int_equal(pc->param_start, p0);
    assert_int_equal(pc->param_end, p1);
}

/* ------------------------------------------------------------------ hand-worked layouts */

static void uneven_split_cuts_parameters_at_shard_boundaries(void **state) {
    (void)state;
    /*   a(10) b(7) c(5) = 22, dp 4 -> padded 24, S = 6
     *   world  0     6   10 12    17 18    22 24
     *          |a....|a...|b.|b....|c|c...|pad|
     *          rank0 |rank1    |rank2   |rank3       */
    zero_param ps[] = {{"a", 10, true, true}, {"b", 7, false, true}, {"c", 5, true, false}};
    zero_ranges *r = zero_ranges_build(ps, 3, 4, 1, 0);
    check_invariants(r);
    assert_int_equal(r->numel, 22);
    assert_int_equal(r->padded_numel, 24);
    assert_int_equal(r->shard_numel, 6);
    assert_int_equal(r->shards[0].n_pieces, 1);
    expect_piece(&r->shards[0].pieces[0], 0, 0, 6, 0, 6, 0, 6);
    assert_int_equal(r->shards[1].n_pieces, 2);
    expect_piece(&r->shards[1].pieces[0], 0, 6, 10, 0, 4, 6, 10);
    expect_piece(&r->shards[1].pieces[1], 1, 10, 12, 4, 6, 0, 2);
    assert_int_equal(r->shards[2].n_pieces, 2);
    expect_piece(&r->shards[2].pieces[0], 1, 12, 17, 0, 5, 2, 7);
    expect_piece(&r->shards[2].pieces[1], 2, 17, 18, 5, 6, 0, 1);
    assert_int_equal(r->shards[3].n_pieces, 1);
    expect_piece(&r->shards[3].pieces[0], 2, 18, 22, 0, 4, 1, 5);
    assert_int_equal(r->shards[3].real_numel, 4);
    for (int p = 0; p < 3; p++) assert_true(zero_ranges_param_is_cut(r, p));
    assert_int_equal(zero_ranges_owner(r, 0), 0);
    assert_int_equal(zero_ranges_owner(r, 11), 1);
    assert_int_equal(zero_ranges_owner(r, 23), 3);
    /* The flags travel with the parameter. */
    assert_false(r->params[1].weight_decay);
    assert_false(r->params[2].in_grad_norm);
    zero_ranges_free(r);
}

static void one_parameter_spans_every_shard(void **state) {
    (void)state;
    zero_param ps[] = {{"big", 100, true, true}, {"small", 4, false, true}};
    zero_ranges *r = zero_ranges_build(ps, 2, 4, 1, 0);
    check_invariants(r);
    assert_int_equal(r->shard_numel, 26);
    expect_piece(&r->shards[0].pieces[0], 0, 0, 26, 0, 26, 0, 26);
    expect_piece(&r->shards[1].pieces[0], 0, 26, 52, 0, 26, 26, 52);
    expect_piece(&r->shards[2].pieces[0], 0, 52, 78, 0, 26, 52, 78);
    assert_int_equal(r->shards[3].n_pieces, 2);
    expect_piece(&r->shards[3].pieces[0], 0, 78, 100, 0, 22, 78, 100);
    expect_piece(&r->shards[3].pieces[1], 1, 100, 104, 22, 26, 0, 4);
    assert_true(zero_ranges_param_is_cut(r, 0));
    assert_false(zero_ranges_param_is_cut(r, 1));
    zero_ranges_free(r);
}

static void shards_of_only_padding_have_no_pieces(void **state) {
    (void)state;
    /* Ψ = 100, dp 4, align 64: padded to 256, S = 64; ranks 2 and 3 hold only padding. */
    zero_param ps[] = {{"x", 100, true, true}};
    zero_ranges *r = zero_ranges_build(ps, 1, 4, 64, 0);
    check_invariants(r);
    assert_int_equal(r->padded_numel, 256);
    assert_int_equal(r->shard_numel, 64);
    expect_piece(&r->shards[0].pieces[0], 0, 0, 64, 0, 64, 0, 64);
    expect_piece(&r->shards[1].pieces[0], 0, 64, 100, 0, 36, 64, 100);
    assert_int_equal(r->shards[1].real_numel, 36);
    for (int d = 2; d < 4; d++) {
        assert_int_equal(r->shards[d].n_pieces, 0);
        assert_null(r->shards[d].pieces);
        assert_int_equal(r->shards[d].real_numel, 0);
    }
    zero_ranges_free(r);
}

static void dp_one_keeps_every_parameter_whole(void **state) {
    (void)state;
    zero_param ps[] = {{"w", 12, true, true}, {"b", 3, false, true}, {"g", 5, false, true}};
    zero_ranges *r = zero_ranges_build(ps, 3, 1, 1, 0);
    check_invariants(r);
    assert_int_equal(r->padded_numel, 20);
    assert_int_equal(r->shards[0].n_pieces, 3);
    expect_piece(&r->shards[0].pieces[1], 1, 12, 15, 12, 15, 0, 3);
    for (int p = 0; p < 3; p++) assert_false(zero_ranges_param_is_cut(r, p));
    zero_ranges_free(r);
    /* With alignment, dp = 1 still pads. */
    r = zero_ranges_build(ps, 3, 1, 64, 0);
    check_invariants(r);
    assert_int_equal(r->padded_numel, 64);
    zero_ranges_free(r);
}

static void dp_larger_than_the_buffer(void **state) {
    (void)state;
    zero_param ps[] = {{"a", 1, true, true}, {"b", 2, true, true}};
    zero_ranges *r = zero_ranges_build(ps, 2, 8, 1, 0);
    check_invariants(r);
    assert_int_equal(r->padded_numel, 8);
    assert_int_equal(r->shard_numel, 1);
    expect_piece(&r->shards[0].pieces[0], 0, 0, 1, 0, 1, 0, 1);
    expect_piece(&r->shards[1].pieces[0], 1, 1, 2, 0, 1, 0, 1);
    expect_piece(&r->shards[2].pieces[0], 1, 2, 3, 0, 1, 1, 2);
    for (int d = 3; d < 8; d++) assert_int_equal(r->shards[d].n_pieces, 0);
    zero_ranges_free(r);
}

static void empty_parameters_and_empty_lists_are_harmless(void **state) {
    (void)state;
    zero_param ps[] = {{"a", 4, true, true}, {"nothing", 0, true, true}, {"c", 4, true, true}};
    zero_ranges *r = zero_ranges_build(ps, 3, 2, 1, 3);
    check_invariants(r);
    assert_int_equal(r->shards[0].n_pieces, 1);
    assert_int_equal(r->shards[1].n_pieces, 1);
    assert_int_equal(r->shards[1].pieces[0].param, 2);
    assert_false(zero_ranges_param_is_cut(r, 1));
    zero_ranges_free(r);
    r = zero_ranges_build(NULL, 0, 3, 1, 10);
    check_invariants(r);
    assert_int_equal(r->padded_numel, 0);
    assert_int_equal(r->n_buckets, 0);
    for (int d = 0; d < 3; d++) assert_int_equal(r->shards[d].n_pieces, 0);
    zero_ranges_free(r);
}

/* ------------------------------------------------------------------ GPT-like */

/* wte, wpe, then per layer ln1 w/b, qkv w/b, attn proj w/b, ln2 w/b, fc w/b, mlp proj w/b,
 * then lnf w/b: the parameters of GPT-2 with V, maxT, C, L. */
static int gpt_params(zero_param *ps, char names[][32], size_t V, size_t maxT, size_t C, int L) {
    int n = 0;
#define ADD(nm, ne, wd)                                                                            \
    do {                                                                                           \
        snprintf(names[n], 32, "%s", nm);                                                          \
        ps[n] = (zero_param){names[n], (ne), (wd), true};                                          \
        n++;                                                                                       \
    } while (0)
    ADD("wte", V * C, true);
    ADD("wpe", maxT * C, true);
    for (int l = 0; l < L; l++) {
        char b[32];
        static const char *kind[] = {"ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
                                     "ln2w", "ln2b", "fcw",  "fcb",  "fcprojw",  "fcprojb"};
        size_t sizes[] = {C, C, 3 * C * C, 3 * C, C * C, C, C, C, 4 * C * C, 4 * C, 4 * C * C, C};
        for (int k = 0; k < 12; k++) {
            snprintf(b, sizeof b, "h%d.%s", l, kind[k]);
            ADD(b, sizes[k], k == 2 || k == 4 || k == 8 || k == 10);
        }
    }
    ADD("lnfw", C, false);
    ADD("lnfb", C, false);
#undef ADD
    return n;
}

static void gpt_like_list_tiles_at_every_dp(void **state) {
    (void)state;
    zero_param ps[64];
    char names[64][32];
    int n = gpt_params(ps, names, 65, 64, 48, 3); /* a tiny Shakespeare-sized GPT */
    size_t aligns[] = {1, 64};
    size_t buckets[] = {0, 1000, 5000, 100000};
    for (int dp = 1; dp <= 8; dp++)
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 4; b++) {
                zero_ranges *r = zero_ranges_build(ps, n, dp, aligns[a], buckets[b]);
                check_invariants(r);
                /* Each shard carries all but at most align*dp - 1 padding elements. */
                size_t real = 0;
                for (int d = 0; d < dp; d++) real += r->shards[d].real_numel;
                assert_int_equal(real, r->numel);
                zero_ranges_free(r);
            }
    /* GPT-2 small itself (124M parameters) at dp 8. */
    n = gpt_params(ps, names, 50257, 1024, 768, 2);
    zero_ranges *r = zero_ranges_build(ps, n, 8, 64, 25 * 1000 * 1000);
    check_invariants(r);
    zero_ranges_free(r);
}

/* ------------------------------------------------------------------ buckets */

static void buckets_end_on_parameter_ends_and_cut_only_oversized_ones(void **state) {
    (void)state;
    /* a3 b4 | c2 | d10 cut into 8 + 2, the 2 shared with e1; B = 8. */
    zero_param ps[] = {
        {"a", 3, 1, 1}, {"b", 4, 1, 1}, {"c", 2, 1, 1}, {"d", 10, 1, 1}, {"e", 1, 1, 1}};
    zero_ranges *r = zero_ranges_build(ps, 5, 2, 1, 8);
    check_invariants(r);
    assert_int_equal(r->n_buckets, 4);
    size_t want[4][2] = {{0, 7}, {7, 9}, {9, 17}, {17, 20}};
    int first[4] = {0, 2, 3, 3}, last[4] = {1, 2, 3, 4};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(r->buckets[i].world_start, want[i][0]);
        assert_int_equal(r->buckets[i].world_end, want[i][1]);
        assert_int_equal(r->buckets[i].first_param, first[i]);
        assert_int_equal(r->buckets[i].last_param, last[i]);
    }
    zero_ranges_free(r);
    /* B = 0: one bucket over the real buffer (padding excluded). */
    r = zero_ranges_build(ps, 5, 3, 1, 0);
    assert_int_equal(r->n_buckets, 1);
    assert_int_equal(r->buckets[0].world_end, 20);
    zero_ranges_free(r);
    /* A parameter exactly B long fills a bucket by itself. */
    zero_param q[] = {{"x", 8, 1, 1}, {"y", 8, 1, 1}, {"z", 3, 1, 1}};
    r = zero_ranges_build(q, 3, 1, 1, 8);
    check_invariants(r);
    assert_int_equal(r->n_buckets, 3);
    zero_ranges_free(r);
}

/* ------------------------------------------------------------------ printing and errors */

static void print_shows_the_three_index_spaces(void **state) {
    (void)state;
    zero_param ps[] = {{"a", 10, true, true}, {"b", 7, false, true}, {"c", 5, true, false}};
    zero_ranges *r = zero_ranges_build(ps, 3, 4, 1, 8);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    zero_ranges_print(f, r);
    fclose(f);
    assert_non_null(strstr(buf, "psi = 22 elements, dp = 4"));
    assert_non_null(strstr(buf, "padded to 24"));
    assert_non_null(strstr(buf, "shard S = 6"));
    /* rank 2's first piece: b, world [12, 17), local [0, 5), param [2, 7) of 7 */
    const char *row = strstr(buf, "     2  b      [12, 17)");
    assert_non_null(row);
    assert_non_null(strstr(row, "[0, 5)"));
    assert_non_null(strstr(row, "[2, 7) / 7"));
    assert_non_null(strstr(row, "(cut)"));
    assert_non_null(strstr(buf, "(pad)"));
    assert_non_null(strstr(buf, "buckets: 4 of at most 8"));
    free(buf);
    zero_ranges_free(r);
}

static void build_at_dp0(const void *arg) {
    (void)arg;
    zero_param ps[] = {{"a", 4, true, true}};
    zero_ranges_build(ps, 1, 0, 1, 0);
}

static void bad_dp_dies_with_one_clear_line(void **state) {
    (void)state;
    /* run_in_child reads all the child says (a long sanitizer report cannot block it) */
    char msg[512];
    int rc = run_in_child(build_at_dp0, NULL, msg, sizeof msg);
    assert_true(rc != 0 && rc < 128);
    assert_non_null(strstr(msg, "data-parallel size 0 must be at least 1"));
}

/* ------------------------------------------------------------------ units (ZeRO-2/3) */

/* Everything UNITS promises: each unit padded to dp·s_u with s_u a multiple of align, slices
 * laid one after another in every rank's shard, the pieces of rank d exactly unit ∩ slice d. */
static void check_unit_invariants(const zero_ranges *r) {
    size_t local = 0;
    for (int u = 0; u < r->n_units; u++) {
        const zero_unit *un = &r->units[u];
        const size_t n = un->world_end - un->world_start, s = un->shard_numel;
        assert_int_equal(s % r->align, 0);
        assert_true(s * (size_t)r->dp >= n && (s - r->align) * (size_t)r->dp < n);
        assert_int_equal(un->local_start, local);
        local += s;
        assert_int_equal(un->world_start, r->offsets[un->first_param]);
        assert_int_equal(r->buckets[u].world_start, un->world_start);
        assert_int_equal(r->buckets[u].world_end, un->world_end);
    }
    assert_int_equal(r->shard_numel, local);
    assert_int_equal(r->padded_numel, local * (size_t)r->dp);
    size_t covered = 0;
    for (int d = 0; d < r->dp; d++) {
        const zero_shard *sh = &r->shards[d];
        size_t real = 0;
        for (int k = 0; k < sh->n_pieces; k++) {
            const zero_piece *pc = &sh->pieces[k];
            const int u = zero_ranges_unit_of(r, pc->world_start);
            const zero_unit *un = &r->units[u];
            const size_t s = un->shard_numel, slice = un->world_start + (size_t)d * s;
            assert_true(pc->world_start >= slice && pc->world_end <= slice + s);
            assert_int_equal(pc->local_start, un->local_start + (pc->world_start - slice));
            assert_int_equal(pc->local_end - pc->local_start, pc->world_end - pc->world_start);
            assert_int_equal(pc->world_start, r->offsets[pc->param] + pc->param_start);
            assert_int_equal(zero_ranges_owner(r, pc->world_start), d);
            assert_int_equal(zero_ranges_owner(r, pc->world_end - 1), d);
            real += pc->world_end - pc->world_start;
        }
        assert_int_equal(sh->real_numel, real);
        covered += real;
    }
    assert_int_equal(covered, r->numel);
}

static void units_are_cut_one_by_one(void **state) {
    (void)state;
    /* units {a, b} (16 elements) and {c} (7): at dp 2, align 1, slices of 8 and 4 */
    zero_param ps[] = {{"a", 10, true, true}, {"b", 6, false, true}, {"c", 7, true, true}};
    const int first[] = {0, 2};
    zero_ranges *r = zero_ranges_build_units(ps, 3, 2, 1, first, 2);
    assert_int_equal(r->n_units, 2);
    assert_int_equal(r->units[0].shard_numel, 8);
    assert_int_equal(r->units[1].shard_numel, 4);
    assert_int_equal(r->units[1].local_start, 8);
    assert_int_equal(r->shard_numel, 12);
    assert_int_equal(r->padded_numel, 24); /* one element of padding, in c's last slice */
    const zero_shard *s0 = &r->shards[0], *s1 = &r->shards[1];
    assert_int_equal(s0->n_pieces, 2);
    expect_piece(&s0->pieces[0], 0, 0, 8, 0, 8, 0, 8);    /* a[0, 8) */
    expect_piece(&s0->pieces[1], 2, 16, 20, 8, 12, 0, 4); /* c[0, 4) after a's slice */
    assert_int_equal(s1->n_pieces, 3);
    expect_piece(&s1->pieces[0], 0, 8, 10, 0, 2, 8, 10);  /* a[8, 10) */
    expect_piece(&s1->pieces[1], 1, 10, 16, 2, 8, 0, 6);  /* b whole */
    expect_piece(&s1->pieces[2], 2, 20, 23, 8, 11, 4, 7); /* c[4, 7), then 1 padding */
    assert_int_equal(zero_ranges_unit_of(r, 15), 0);
    assert_int_equal(zero_ranges_unit_of(r, 16), 1);
    assert_int_equal(zero_ranges_unit_of(r, 23), -1);
    assert_int_equal(zero_ranges_owner(r, 19), 0);
    assert_int_equal(zero_ranges_owner(r, 20), 1);
    assert_true(zero_ranges_param_is_cut(r, 0));
    assert_false(zero_ranges_param_is_cut(r, 1));
    check_unit_invariants(r);
    zero_ranges_free(r);
}

static void units_tile_a_gpt_like_list_at_every_dp(void **state) {
    (void)state;
    /* wte, wpe, 3 blocks of 12 tensors, lnf: 6 units, as zero_fsdp_ranges cuts a chunk */
    zero_param ps[2 + 36 + 2];
    int first[6], n = 0, nu = 0;
    ps[n++] = (zero_param){"wte", 8192, true, true};
    first[nu++] = 0;
    ps[n++] = (zero_param){"wpe", 512, true, true};
    first[nu++] = 1;
    for (int l = 0; l < 3; l++) {
        first[nu++] = n;
        for (int k = 0; k < 12; k++)
            ps[n++] = (zero_param){"t", (size_t)(k % 2 ? 32 : 1024 + 7 * k), true, true};
    }
    first[nu++] = n;
    ps[n++] = (zero_param){"lnf_w", 32, false, true};
    ps[n++] = (zero_param){"lnf_b", 32, false, true};
    for (int dp = 1; dp <= 8; dp++)
        for (size_t align = 1; align <= 64; align *= 64) {
            zero_ranges *r = zero_ranges_build_units(ps, n, dp, align, first, nu);
            assert_int_equal(r->n_units, 6);
            check_unit_invariants(r);
            zero_ranges_free(r);
        }
}

/* The tied wte's two copies (first and last stage, or zbv's two chunks): units of the same
 * size are cut into the same parameter ranges, wherever they sit. */
static void equal_units_are_cut_alike(void **state) {
    (void)state;
    zero_param ps[] = {{"wte", 300, true, true}, {"x", 77, true, true}, {"wte", 300, true, false}};
    const int first[] = {0, 1, 2};
    for (int dp = 1; dp <= 8; dp++) {
        zero_ranges *r = zero_ranges_build_units(ps, 3, dp, 64, first, 3);
        assert_int_equal(r->units[0].shard_numel, r->units[2].shard_numel);
        for (int d = 0; d < dp; d++) {
            const zero_piece *a = NULL, *b = NULL;
            for (int k = 0; k < r->shards[d].n_pieces; k++) {
                const zero_piece *pc = &r->shards[d].pieces[k];
                if (pc->param == 0) a = pc;
                if (pc->param == 2) b = pc;
            }
            assert_true((a == NULL) == (b == NULL));
            if (!a) continue;
            assert_int_equal(a->param_start, b->param_start);
            assert_int_equal(a->param_end, b->param_end);
        }
        zero_ranges_free(r);
    }
}

/* Units out of order: the second starts before the first. */
static void build_bad_units(const void *arg) {
    (void)arg;
    zero_param ps[] = {{"a", 4, true, true}, {"b", 4, true, true}, {"c", 4, true, true}};
    const int first[] = {0, 2, 1};
    zero_ranges_build_units(ps, 3, 2, 1, first, 3);
}

static void bad_unit_lists_die_with_one_clear_line(void **state) {
    (void)state;
    char out[1024];
    int rc = run_in_child(build_bad_units, NULL, out, sizeof out);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(out, "units are increasing"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(uneven_split_cuts_parameters_at_shard_boundaries),
        cmocka_unit_test(one_parameter_spans_every_shard),
        cmocka_unit_test(shards_of_only_padding_have_no_pieces),
        cmocka_unit_test(dp_one_keeps_every_parameter_whole),
        cmocka_unit_test(dp_larger_than_the_buffer),
        cmocka_unit_test(empty_parameters_and_empty_lists_are_harmless),
        cmocka_unit_test(gpt_like_list_tiles_at_every_dp),
        cmocka_unit_test(buckets_end_on_parameter_ends_and_cut_only_oversized_ones),
        cmocka_unit_test(print_shows_the_three_index_spaces),
        cmocka_unit_test(bad_dp_dies_with_one_clear_line),
        cmocka_unit_test(units_are_cut_one_by_one),
        cmocka_unit_test(units_tile_a_gpt_like_list_at_every_dp),
        cmocka_unit_test(equal_units_are_cut_alike),
        cmocka_unit_test(bad_unit_lists_die_with_one_clear_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
