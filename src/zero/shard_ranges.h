/* shard_ranges.h — how ZeRO-1 (Megatron's distributed optimizer) cuts the flat buffer, and how
 * ZeRO-2/3 cut it unit by unit (UNITS, below).
 *
 * Every rank keeps its parameters in ONE contiguous fp32 buffer, parameters laid one after
 * another in a fixed order; the gradients live in a second buffer with the same layout.
 * Data parallelism with ZeRO-1 cuts the (padded) gradient buffer into dp equal contiguous
 * shards and DP rank d owns shard d:
 *
 *   reduce-scatter the gradients  ->  AdamW on shard d only (fp32 master, m, v of shard d)
 *                                 ->  all-gather the updated parameters
 *
 *   world index  0                                                         padded_numel
 *                |  wte            | wpe  |ln|  qkv   ...   |lnf|  padding  |
 *                |<-- shard 0 -->|<-- shard 1 -->|<-- shard 2 -->|<-- shard 3 -->|
 *                d*S            (d+1)*S      with S = shard_numel = padded_numel / dp
 *
 * Three index spaces, as in Megatron's distributed optimizer:
 *   world  position in the whole buffer             [0, padded_numel)
 *   local  position inside the rank's shard         [0, shard_numel)   world = d*S + local
 *   param  position inside one parameter            [0, numel)         world = offset + param
 * A rank's shard is described by a list of pieces, one per parameter it touches, in buffer
 * order; each piece gives the same elements in the three spaces. A parameter cut by a shard
 * boundary appears in two (or more) ranks' lists. Padding belongs to no piece, so a shard
 * that holds only padding has an empty list.
 *
 * Padding rule: the buffer is padded at its end to padded_numel = the smallest multiple
 * of dp * align that is >= numel (align >= 1 elements; align = 1 gives just a multiple of
 * dp). With align = 64 every shard is a multiple of 64 elements (256 bytes in fp32), so a
 * shard starts on an aligned address. Padding elements are zero gradients and never
 * reach a parameter.
 *
 * Buckets (for the plain all-reduce without ZeRO, and for the picture): the real part of
 * the buffer [0, numel) is cut into consecutive buckets of at most bucket_numel elements,
 * walking the parameters in buffer order:
 *   - a parameter joins the open bucket if the bucket stays <= bucket_numel, else the open
 *     bucket is closed at the previous parameter's end (buckets end on parameter ends);
 *   - a parameter larger than bucket_numel on its own is cut into full buckets of exactly
 *     bucket_numel; its remainder opens a bucket the next parameters may join.
 *   bucket_numel = 0 means one bucket for the whole buffer. Padding is in no bucket.
 *
 * UNITS (ZeRO-2 and ZeRO-3: src/zero/fsdp.h). ZeRO-1 cuts the whole buffer once, as above.
 * When gradients and parameters are sharded too, each unit — consecutive parameters that the
 * model reads and writes together: wte, wpe, one block, the final norm (gpt_param_starts_unit)
 * — is cut on its own, as Megatron cuts each gradient bucket and FSDP each unit:
 *
 *   world          | wte                 | wpe       | block 0                  | ...
 *   slices         | r0  | r1  | r2 |pad | r0| r1|pad| r0   | r1   | r2   |pad |
 *   rank d's shard storage (local):  [ wte slice d | wpe slice d | block 0 slice d | ... ]
 *                                      local_start of each unit = the slices before it
 *
 * Unit u of n elements gets slices of s_u elements, the smallest multiple of align with
 * dp·s_u >= n (the padding rule above, per unit); DP rank d holds the unit's elements
 * [d·s_u, (d+1)·s_u) at local indices local_start_u + [0, s_u). shard_numel = Σ s_u, the same
 * on every rank; padded_numel = dp·shard_numel (the units padded, laid end to end). The model's
 * buffer itself is not padded: the padding exists only in shard-sized storage. Two units of
 * the same size are cut alike on every layout, which is what lets the two copies of a tied wte
 * (first and last pipeline stage; zbv's two chunks of rank 0) be summed slice by slice, after
 * their reduce-scatters. Pieces keep the three index spaces (local as just said), in unit
 * order; zero_shard's world_start/world_end describe one contiguous shard and are 0 with
 * several units. The buckets are the units.
 *
 * Not here: any communication (the trainer does that) and the memory bill (memory_plan.h).
 */
#ifndef TRIDENT_ZERO_SHARD_RANGES_H
#define TRIDENT_ZERO_SHARD_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* One parameter of the buffer, in buffer order. */
typedef struct {
    const char *name;  /* "h0.attn.qkvw" */
    size_t numel;      /* elements (0 is allowed: it then occupies nothing) */
    bool weight_decay; /* AdamW applies weight decay (matrices yes; biases, LayerNorm no) */
    bool in_grad_norm; /* counted in the global grad norm (false for a replica that another
                          tensor-parallel rank already counts) */
} zero_param;

/* The same elements of one parameter, seen in the three index spaces; all [start, end). */
typedef struct {
    int param;                     /* index into the parameter list */
    size_t world_start, world_end; /* in the whole buffer */
    size_t local_start, local_end; /* in the owning rank's shard */
    size_t param_start, param_end; /* in the parameter */
} zero_piece;

/* A unit of the ZeRO-2/3 layout (see UNITS), or ZeRO-1's whole buffer. */
typedef struct {
    int first_param, last_param;   /* inclusive */
    size_t world_start, world_end; /* its parameters' elements */
    size_t shard_numel;            /* s_u: each rank's slice, padding included */
    size_t local_start;            /* where every rank's slice sits in its shard storage */
} zero_unit;

/* What DP rank `rank` owns. */
typedef struct {
    int rank;
    size_t world_start, world_end; /* = rank*S, (rank+1)*S */
    size_t real_numel;             /* elements that belong to parameters (the rest is padding) */
    int n_pieces;
    zero_piece *pieces; /* in buffer order; NULL when n_pieces == 0 */
} zero_shard;

/* A run of consecutive gradient elements synchronised together. */
typedef struct {
    size_t world_start, world_end;
    int first_param, last_param; /* parameters it touches (last inclusive) */
} zero_bucket;

typedef struct {
    int n_params;
    zero_param *params;  /* own copies (names too) */
    size_t *offsets;     /* (n_params,) world offset of each parameter */
    size_t numel;        /* Ψ: sum of numel */
    size_t padded_numel; /* buffer length with padding: multiple of dp * align */
    size_t shard_numel;  /* S = padded_numel / dp */
    int dp;
    size_t align;
    zero_shard *shards;  /* (dp,) */
    size_t bucket_numel; /* the B asked for (0: one bucket) */
    int n_buckets;
    zero_bucket *buckets;
    int n_units;      /* 1 (ZeRO-1: the whole buffer, padded to padded_numel) or the units */
    zero_unit *units; /* (n_units) */
} zero_ranges;

/* The padding rule: smallest multiple of dp * align that is >= numel (align 0 counts as 1). */
size_t zero_padded_numel(size_t numel, int dp, size_t align);

/* Builds the shards, pieces and buckets. Dies (one clear line) for dp < 1 or
 * n_params < 0. Free with zero_ranges_free. */
zero_ranges *zero_ranges_build(const zero_param *params, int n_params, int dp, size_t align,
                               size_t bucket_numel);
void zero_ranges_free(zero_ranges *r);

/* The UNITS layout: unit u starts at parameter unit_first[u] (unit_first[0] = 0, increasing,
 * below n_params) and runs to the next unit's first parameter. Dies (one clear line) for
 * dp < 1 or a bad unit list. Free with zero_ranges_free. */
zero_ranges *zero_ranges_build_units(const zero_param *params, int n_params, int dp, size_t align,
                                     const int *unit_first, int n_units);
/* The unit holding world index w (w < numel), or -1. */
int zero_ranges_unit_of(const zero_ranges *r, size_t w);

/* Takes the pieces of every parameter p with drop[p] out of every shard: their elements stay
 * in the buffer (world offsets do not change) but, like padding, belong to no piece, so a loop
 * over a shard's pieces never touches them. For a buffer whose parameters are sharded in two
 * ways (expert parallelism: the dense tensors over dp, the experts over expert-dp, in a
 * layout of their own). */
void zero_ranges_drop(zero_ranges *r, const bool *drop);

/* The DP rank whose shard holds world index w (w < padded_numel; with units, w < numel). */
int zero_ranges_owner(const zero_ranges *r, size_t w);
/* True when parameter p is split between two or more ranks' shards. */
bool zero_ranges_param_is_cut(const zero_ranges *r, int p);

/* A text table: the layout summary, each rank's pieces in the three index spaces (with the
 * weight-decay and grad-norm flags), then the buckets. */
void zero_ranges_print(FILE *f, const zero_ranges *r);

#endif /* TRIDENT_ZERO_SHARD_RANGES_H */
