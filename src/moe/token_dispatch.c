/* token_dispatch.c — permute, the two all-to-alls, un-permute (token_dispatch.h).
 *
 * Every exchange goes through exchange(): comm_all_to_all_v on the ep group, or, without a
 * group (P = 1), the copy of this rank's own block that the collective would make. */
#include "src/moe/token_dispatch.h"

#include <stdint.h>
#include <string.h>

#include "src/core/check.h"

/* comm_all_to_all_v over ep, or the one self block when ep is NULL. */
static void exchange(comm_group *ep, const moe_dispatch *d, const void *send, void *recv,
                     comm_dtype dt) {
    if (ep) {
        comm_all_to_all_v(ep, send, d->sc, d->sd, recv, d->rc, d->rd, dt);
    } else if (d->sc[0]) {
        size_t es = comm_dtype_size(dt);
        memcpy((char *)recv + d->rd[0] * es, (const char *)send + d->sd[0] * es, d->sc[0] * es);
    }
}

/* counts (P) of rows, times `width` elements each -> displacements as prefix sums. */
static void set_blocks(size_t *count, size_t *displ, const size_t *rows, int P, size_t width) {
    size_t at = 0;
    for (int j = 0; j < P; j++) {
        count[j] = rows[j] * width;
        displ[j] = at;
        at += count[j];
    }
}

/* A counting sort by expert, in three passes, O(pairs + E) steps (kept is the count, then
 * the start of each expert's rows, then the count again):
 *
 *   1. keep or drop, in pair order: slot[i] = the pair's rank among its expert's kept pairs
 *   2. kept (E) -> exclusive prefix sums: the first row of each expert
 *   3. slot[i] += its expert's first row; perm[slot[i]] = i; then kept back to counts
 *
 * Pairs keep their order inside an expert (stable), as Megatron's permute does. */
size_t token_permute_plan(int32_t *slot, int32_t *perm, int64_t *kept, int64_t *dropped,
                          const int32_t *expert, size_t N, size_t E, int K, size_t capacity,
                          size_t *steps) {
    size_t pairs = N * (size_t)K, n = 0; /* n counts the loop steps */
    CHECK(pairs <= (size_t)INT32_MAX, "MoE: too many (token, choice) pairs for int32 slots");
    /* Pass 1: earlier positions win the capacity. */
    memset(kept, 0, E * sizeof(int64_t));
    *dropped = 0;
    for (size_t i = 0; i < pairs; i++, n++) {
        int32_t e = expert[i];
        if ((size_t)kept[e] < capacity) slot[i] = (int32_t)kept[e]++;
        else slot[i] = -1, (*dropped)++;
    }
    /* Pass 2: counts -> first rows. */
    int64_t M = 0;
    for (size_t e = 0; e < E; e++, n++) {
        int64_t count = kept[e];
        kept[e] = M;
        M += count;
    }
    /* Pass 3: place, then first rows -> counts (each expert ends where the next begins). */
    for (size_t i = 0; i < pairs; i++, n++) {
        if (slot[i] < 0) continue;
        slot[i] += (int32_t)kept[expert[i]];
        perm[slot[i]] = (int32_t)i;
    }
    for (size_t e = 0; e < E; e++, n++) kept[e] = (e + 1 < E ? kept[e + 1] : M) - kept[e];
    if (steps) *steps = n;
    return (size_t)M;
}

void token_permute(float *rows, const float *in, const int32_t *perm, size_t M, int K, size_t C) {
    for (size_t i = 0; i < M; i++)
        memcpy(rows + i * C, in + (size_t)perm[i] / (size_t)K * C, C * sizeof(float));
}

void token_permute_backward(float *dinp, const float *drows, const int32_t *perm, size_t M, int K,
                            size_t C) {
    for (size_t i = 0; i < M; i++) {
        float *d = dinp + (size_t)perm[i] / (size_t)K * C;
        for (size_t c = 0; c < C; c++) d[c] += drows[i * C + c];
    }
}

void token_exchange_counts(moe_dispatch *d, comm_group *ep) {
    int P = d->P, El = d->El;
    CHECK(ep ? comm_size(ep) == P && comm_rank(ep) == d->me : P == 1 && d->me == 0,
          "MoE: the ep group does not match --expert-model-parallel-size / the ep rank");
    /* kept (E) is already laid out by destination: rank j's experts at j·El. */
    for (int j = 0; j < P; j++) {
        d->sc[j] = d->rc[j] = (size_t)El;
        d->sd[j] = d->rd[j] = (size_t)j * (size_t)El;
    }
    exchange(ep, d, d->kept, d->recv_cnt, COMM_INT64);
    d->rows_out = d->rows_in = 0;
    for (int j = 0; j < P; j++) {
        d->send_rows[j] = d->recv_rows[j] = 0;
        for (int l = 0; l < El; l++) {
            d->send_rows[j] += (size_t)d->kept[j * El + l];
            d->recv_rows[j] += (size_t)d->recv_cnt[j * El + l];
        }
        d->rows_out += d->send_rows[j];
        d->rows_in += d->recv_rows[j];
    }
    CHECK(d->rows_in <= d->max_rows_in,
          "MoE: more rows arrived than P·N·K (do all ep ranks call with the same N?)");
    token_expert_order(d->order, d->recv_cnt, P, El, d->rd); /* rd is free until dispatch */
}

size_t token_expert_order(int32_t *order, const int64_t *recv_cnt, int P, int El, size_t *cursor) {
    /* cursor[s]: where rank s's next block starts in source order */
    size_t at = 0, dst = 0, steps = 0;
    for (int s = 0; s < P; s++) {
        cursor[s] = at;
        for (int l = 0; l < El; l++) at += (size_t)recv_cnt[s * El + l];
        steps += (size_t)El;
    }
    /* walk expert order (l, s, i); dst counts up, the source position follows cursor[s] */
    for (int l = 0; l < El; l++)
        for (int s = 0; s < P; s++) {
            for (int64_t i = 0; i < recv_cnt[s * El + l]; i++) order[cursor[s]++] = (int32_t)dst++;
            steps += 1 + (size_t)recv_cnt[s * El + l];
        }
    return steps;
}

void token_dispatch(moe_dispatch *d, comm_group *ep, float *sorted, const float *rows,
                    float *work) {
    set_blocks(d->sc, d->sd, d->send_rows, d->P, d->C);
    set_blocks(d->rc, d->rd, d->recv_rows, d->P, d->C);
    exchange(ep, d, rows, work, COMM_FLOAT32);
    for (size_t i = 0; i < d->rows_in; i++)
        memcpy(sorted + (size_t)d->order[i] * d->C, work + i * d->C, d->C * sizeof(float));
}

void token_return(moe_dispatch *d, comm_group *ep, float *rows, const float *sorted, float *work) {
    for (size_t i = 0; i < d->rows_in; i++)
        memcpy(work + i * d->C, sorted + (size_t)d->order[i] * d->C, d->C * sizeof(float));
    set_blocks(d->sc, d->sd, d->recv_rows, d->P, d->C); /* send back what came in */
    set_blocks(d->rc, d->rd, d->send_rows, d->P, d->C);
    exchange(ep, d, work, rows, COMM_FLOAT32);
}

void token_combine(float *out, const float *rows, const int32_t *slot, const int32_t *expert,
                   const float *scores, size_t N, size_t E, int K, size_t C) {
    memset(out, 0, N * C * sizeof(float));
    for (size_t t = 0; t < N; t++)
        for (int k = 0; k < K; k++) {
            size_t i = t * (size_t)K + (size_t)k;
            if (slot[i] < 0) continue; /* dropped: contributes nothing */
            float w = scores[t * E + (size_t)expert[i]];
            const float *y = rows + (size_t)slot[i] * C;
            for (size_t c = 0; c < C; c++) out[t * C + c] += w * y[c];
        }
}

void token_combine_backward(float *drows, float *dscores, const float *dout, const float *rows,
                            const int32_t *slot, const int32_t *expert, const float *scores,
                            size_t N, size_t E, int K, size_t C) {
    for (size_t t = 0; t < N; t++)
        for (int k = 0; k < K; k++) {
            size_t i = t * (size_t)K + (size_t)k;
            if (slot[i] < 0) continue;
            size_t e = (size_t)expert[i];
            const float *y = rows + (size_t)slot[i] * C, *g = dout + t * C;
            float *dy = drows + (size_t)slot[i] * C, w = scores[t * E + e], dot = 0.0f;
            for (size_t c = 0; c < C; c++) {
                dy[c] = w * g[c];
                dot += g[c] * y[c];
            }
            dscores[t * E + e] += dot;
        }
}

size_t token_counts_bytes(const moe_dispatch *d) {
    return (size_t)(d->P - 1) * (size_t)d->El * sizeof(int64_t);
}

size_t token_dispatch_bytes(const moe_dispatch *d) {
    return (d->rows_out - d->send_rows[d->me]) * d->C * sizeof(float);
}

size_t token_return_bytes(const moe_dispatch *d) {
    return (d->rows_in - d->recv_rows[d->me]) * d->C * sizeof(float);
}
