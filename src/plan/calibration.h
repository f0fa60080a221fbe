/* calibration.h — what the pieces of a training step cost on this machine, measured once and
 * kept in a file: the numbers the time model (time_model.h) multiplies.
 *
 *   GEMM rates     FLOP/s of one process multiplying (N,C) @ (OC,C)^T at the shapes a layout
 *                  gives each rank (tokens N = B·T/cp, widths cut by tp), measured by the GEMM
 *                  rate's own timer (src/device/gemm_rate.h, gemm_rate_measure)
 *   elementwise    floats per second of the passes that are not products (LayerNorm, softmax,
 *                  GELU, residual adds), timed on a GELU-like loop
 *   attention      the attention core itself (kernels/ops.h attention_forward, _backward:
 *                  Q·Kᵀ, causal softmax, A·V in blocks of small products, one head at a time)
 *                  of one micro-batch at the heads a rank keeps for every tp: small per-head
 *                  products run far below the GEMM rate of one whole head's product; and
 *                  ring attention's kernel (src/cp/ring_attention.h, on the local sequence:
 *                  no group), which context parallelism runs instead, block by block
 *   ring           ring attention as one rank of cp computes it, for every cp and tp the world
 *                  allows (ring_attention_forward_alone: the rank's blocks at their size —
 *                  (T/cp/2)² entries each, far below the rate of whole sequences — with no
 *                  messages; those are the links' part)
 *   optimizer      parameters per second of one AdamW update (src/optim/adamw.h)
 *   block          the model's own transformer block (gpt_forward, gpt_backward of a chunk of
 *                  one layer, tp = cp = 1): forward and whole backward of one micro-batch.
 *                  What it takes beyond its products is the layer's elementwise work: the
 *                  time model scales it to other shapes by the floats it touches
 *   head           the same for the final LayerNorm, the tied head's product and the loss
 *   trainer        one short serial `trident train` run of the model: its step over what the
 *                  time model predicts from the numbers above (src/cli/plan_cmd.c runs it);
 *                  the time model scales compute by it
 *   expert load    with experts, from the same serial runs' metrics (moe_tokens of every
 *                  layer, steps 3 on): for each ep, how much more than the balanced share the
 *                  busiest expert-parallel rank's experts receive (plan_moe_load_factor). The
 *                  ep ranks meet at every MoE layer's all-to-alls, so that rank sets the pace
 *   links          α (seconds per message step), β (seconds per byte) and a per-call sync
 *                  (what a call costs more after compute than in a tight loop) of each kind
 *                  of communication: p2p, all-reduce, reduce-scatter, all-gather, all-to-all;
 *                  measured on 2 ranks, and the collectives again on 4 and 8 (up to the
 *                  world the calibration is for): a group of g ranks takes the link measured
 *                  at the largest size up to g (plan_calibration_link)
 *
 * The file is text, one fact a line, and names what it was made for:
 *
 *   trident-plan-calibration 2             the format's version (1: before the expert load
 *                                          and ring attention's times)
 *   machine <cpu model>                    gemm_rate_cpu_model
 *   model <L> <C> <NH> <T> <B> <D> <E> <K> the model whose shapes were timed (D: vocabulary
 *                                          divisible by; E experts, top-K)
 *   threads <t>
 *   gemm <N> <C> <OC> <FLOP/s>             (one line per shape)
 *   elementwise <floats/s>
 *   optimizer <params/s>
 *   attention <heads> <T> <fwd s> <bwd s> <ring fwd s> <ring bwd s>
 *                                          (optional; one line per heads count)
 *   ring <heads> <T> <cp> <fwd s> <bwd s>  (optional; one line per heads count and cp > 1)
 *   block <forward s> <backward s>
 *   head <forward s> <backward s>
 *   trainer <factor>                       (optional: 1 without)
 *   moe-load <ep> <factor>                 (optional, one line per ep: 1 without)
 *   link <kind> <alpha s> <beta s/B> <sync s> <source>     (2 ranks; every kind)
 *   link-at <g> <kind> <alpha s> <beta s/B> <sync s> <source>
 *                                          (optional: a collective kind measured on g ranks)
 *   end
 *
 * The cache lives next to the GEMM rate's ($XDG_CACHE_HOME/trident/, else ~/.cache/trident/),
 * one file per model: plan-calibration-<model key>; --calibration FILE names another (a profile
 * from another machine is read, and the table says whose it is). Written through atomic_file:
 * a failed calibration never leaves half a file over a good one.
 *
 * Not here: the measurement of links under MPI (src/cli/plan_cmd.c runs the worker), the model
 * of a step (time_model.h).
 */
#ifndef TRIDENT_PLAN_CALIBRATION_H
#define TRIDENT_PLAN_CALIBRATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/train/config.h"

#define PLAN_CALIBRATION_VERSION 2
enum { PLAN_MAX_GEMMS = 256, PLAN_MAX_ATTENTION = 16, PLAN_MAX_MOE_LOADS = 64 };
enum { PLAN_MAX_RINGS = 64 };
enum { PLAN_LINK_MAX_GROUP = 8, PLAN_MAX_LINK_GROUPS = 4 }; /* links measured on up to 8 ranks */

typedef enum {
    PLAN_P2P,
    PLAN_ALL_REDUCE,
    PLAN_REDUCE_SCATTER,
    PLAN_ALL_GATHER,
    PLAN_ALL_TO_ALL,
    PLAN_NLINKS
} plan_link_kind;

typedef struct {
    double alpha;    /* seconds per message step */
    double beta;     /* seconds per byte on the wire */
    double sync;     /* seconds per call: the ranks reach a call after compute unevenly */
    char source[16]; /* "measured" or "default" */
} plan_link;

typedef struct {
    int heads, T, cp; /* the heads a rank keeps, the whole sequence, the ring's ranks (> 1) */
    double fwd, bwd;  /* seconds of one micro-batch's ring attention on one rank, no messages */
} plan_ring;

typedef struct {
    int g;                       /* ranks, 3 to PLAN_LINK_MAX_GROUP */
    plan_link link[PLAN_NLINKS]; /* the collective kinds (p2p: the 2-rank one) */
} plan_link_group;

typedef struct {
    size_t N, C, OC;
    double flops_per_s;
} plan_gemm;

typedef struct {
    int heads, T;              /* the heads a rank keeps (NH / tp), the sequence length */
    double fwd, bwd;           /* seconds of one micro-batch's attention core */
    double ring_fwd, ring_bwd; /* the same through ring attention's kernel, one rank */
} plan_attention;

typedef struct {
    int ep;        /* expert-parallel ranks, 2 or more */
    double factor; /* the busiest rank's expert tokens ÷ the balanced share (>= 1) */
} plan_moe_load;

typedef struct {
    int version;
    char machine[160];
    int model[8]; /* L C NH T B D E K */
    int threads;
    int ngemm;
    plan_gemm gemm[PLAN_MAX_GEMMS];
    int nattention;
    plan_attention attention[PLAN_MAX_ATTENTION]; /* (nattention) none in older files */
    int nring;
    plan_ring ring[PLAN_MAX_RINGS];       /* (nring) */
    double elementwise_per_s;             /* floats per second */
    double optimizer_per_s;               /* parameters per second */
    double block_forward, block_backward; /* the model's block, tp = cp = 1, one micro-batch, s */
    double trainer_factor; /* a serial `trident train` step ÷ the model's prediction of it with
                              factor 1 (0: not measured, taken as 1) */
    double head_forward, head_backward; /* the head with its loss, likewise */
    int nmoe_load;
    plan_moe_load moe_load[PLAN_MAX_MOE_LOADS]; /* (nmoe_load) with experts; none in older files */
    plan_link link[PLAN_NLINKS];                /* measured on 2 ranks */
    int nlink_groups;
    plan_link_group link_group[PLAN_MAX_LINK_GROUPS]; /* (nlink_groups) larger groups, by g */
    /* Not in the file: the hosts a plan lays its ranks on (trident plan --ranks-per-node), and
     * the link of a group that spans them (time_model.h, plan_group_link); 0: one host */
    int ranks_per_node;
    plan_link network;
} plan_calibration;

/* "p2p", "all-reduce", "reduce-scatter", "all-gather", "all-to-all". */
const char *plan_link_name(plan_link_kind k);

/* One call of kind k over g ranks moving `bytes` (a rank's whole buffer): its message steps
 * and the bytes on the wire of a ring. All-reduce 2(g−1) steps, 2(g−1)/g·bytes; reduce-
 * scatter, all-gather, all-to-all g−1 steps, (g−1)/g·bytes; p2p 1 step, bytes. */
void plan_link_shape(plan_link_kind k, int g, double bytes, double *steps, double *wire);

/* Is kind k timed on g ranks? A p2p message is between a pair: timed on 2 ranks only (a
 * larger group's p2p link is the pair's); the collectives on every size measured. */
bool plan_link_timed_at(plan_link_kind k, int g);

/* Fills lg's links of the kinds not timed on its size with the pair's (cal->link). */
void plan_link_group_untimed_from_pair(const plan_calibration *cal, plan_link_group *lg);

/* The link of kind k for a group of g ranks: the one measured at the largest size up to g
 * where k is timed (plan_link_timed_at; groups of 2 or of sizes below every larger
 * measurement: cal->link[k]). */
plan_link plan_calibration_link(const plan_calibration *cal, plan_link_kind k, int g);

/* Seconds of one call of kind k over g ranks moving `bytes` on link l: sync + α·steps +
 * β·wire (plan_link_shape); 0 when g <= 1. */
double plan_link_time(const plan_link *l, plan_link_kind k, int g, double bytes);

/* The model fields of a configuration (checked or not), as the file's "model" line holds them. */
void plan_calibration_model_of(const train_config *c, int out[8]);

/* Links before measuring: α = 20 µs, β = 1 / (2 GB/s), sync 0, source "default". */
void plan_calibration_default_links(plan_calibration *cal);

/* The GEMM shapes a layout of c at world size `world` can give a rank: for every tp and cp that
 * divide world, qkv, proj, fc, fcproj, head, and one head's attention product; with experts
 * the router and, for every ep, an expert's fc and fcproj at its balanced share of rows
 * (N·K·ep/E). Writes at most cap, returns how many (distinct). */
int plan_calibration_shapes(const train_config *c, int world, plan_gemm *out, int cap);

/* Times every shape of plan_calibration_shapes, the elementwise and optimizer rates, on one
 * process (BLAS threads c->threads), taking about `seconds` in all. Links: the defaults (the
 * caller measures them under MPI). */
void plan_calibration_measure(const train_config *c, int world, double seconds,
                              plan_calibration *cal);

/* The FLOP/s of (N,C) @ (OC,C)^T: the exact shape's rate, else the rate measured at the
 * nearest number of FLOPs (log scale). */
double plan_calibration_gemm_rate(const plan_calibration *cal, size_t N, size_t C, size_t OC);

/* The expert load of ep ranks: the measured factor, 1 at ep 1 or when not measured. */
double plan_calibration_moe_load(const plan_calibration *cal, int ep);

/* How unevenly E experts' tokens land on ep ranks (rank r holds experts r·E/ep to
 * (r+1)·E/ep − 1), one step's counts tokens (L, E) of L layers: the mean over layers of the
 * busiest rank's tokens ÷ the mean rank's. 1 when every rank gets the same; ep must divide E. */
double plan_moe_load_factor(const uint32_t *tokens, int L, int E, int ep);

/* The measured attention core at `heads` heads and sequence length T, or NULL. */
const plan_attention *plan_calibration_attention(const plan_calibration *cal, int heads, int T);

/* The measured ring attention of one rank of cp at `heads` heads, sequence length T, or NULL. */
const plan_ring *plan_calibration_ring(const plan_calibration *cal, int heads, int T, int cp);

/* The default file for c: <cache dir>/plan-calibration-<L>-<C>-<NH>-<T>-<B>-<D>-<E>-<K>.
 * False when neither XDG_CACHE_HOME nor HOME is set. */
bool plan_calibration_cache_path(const train_config *c, char *buf, size_t cap);

/* Writes cal to path atomically (making the directory); dies with one line on failure. */
void plan_calibration_write(const plan_calibration *cal, const char *path);

/* Reads path into cal. False with a phrase in err when the file cannot be read, is not a
 * calibration (names the line), is another version, or was made for another model than c
 * (names both). Another machine is not an error: the caller says whose it is. */
bool plan_calibration_read(const char *path, const train_config *c, plan_calibration *cal,
                           char *err, size_t cap);

#endif /* TRIDENT_PLAN_CALIBRATION_H */
