/* gpt.h — the GPT model: parameters, activations, forward and backward of one model chunk.
 *
 * The model is GPT-2 shaped: token + learned position embedding, pre-LayerNorm blocks of
 * causal multi-head attention and a GELU MLP (4C wide), a final LayerNorm, and an LM head
 * tied to the token embedding.
 *
 * A *chunk* is the part of the model one process runs: a contiguous range of blocks, plus
 * the embedding when it is the first pipeline stage and the final norm + head when it is the
 * last, each weight cut for tensor parallelism as its gpt_shard says. The serial reference
 * model is simply the chunk with everything and tp_size = 1; pipeline and tensor parallel
 * runs use the same code on smaller chunks. The model knows nothing of ranks beyond the
 * shard it is given and the tensor-parallel group it calls (src/tp/).
 *
 * Every tensor the functions below take or return (params, grads, x_in/x_out, dx_*, the
 * activations) is in the memory of the current device (src/device/device.h) and every kernel
 * runs there; only tokens and targets are host arrays (uploaded by gpt_forward).
 *
 * Memory: all parameters of a process live in ONE flat buffer, gradients in a second buffer
 * with the same layout; gpt_param records where each tensor sits (offset) so the optimizer
 * is one flat loop and ZeRO shards are offset ranges (ZeRO-2/3 keep a unit's gradients, or
 * parameters, elsewhere: the passes reach every unit through src/model/gpt_hooks.h's spans).
 * Layout of one chunk's parameters:
 *
 *   [wte (V/tp, C)] [wpe (T, C)]                      first stage only (wte also on the last)
 *   per block l:  ln1_w (C) ln1_b (C) qkv_w (3C/tp, C) qkv_b (3C/tp) proj_w (C, C/tp) proj_b (C)
 *                 ln2_w (C) ln2_b (C) fc_w (4C/tp, C)  fc_b (4C/tp)  fcproj_w (C, 4C/tp) fcproj_b (C)
 *   [lnf_w (C) lnf_b (C)]                             last stage only
 *
 * Files: gpt.c the chunk's forward; gpt_block.c one block (forward, B, W) as the serial block;
 * gpt_backward.c the chunk's backward; gpt_layout.c where the activations live; gpt_params.c
 * the parameter table; gpt_recompute.c recomputation.
 *
 * Not here: the optimizer, data, scheduling across micro-batches, the FLOP count (flops.h),
 * and communication other than each feature's own (src/tp, src/cp, src/moe) inside a block.
 */
#ifndef TRIDENT_MODEL_GPT_H
#define TRIDENT_MODEL_GPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct comm_group comm_group;
typedef struct gpt_acts gpt_acts;
typedef struct gpt_hooks gpt_hooks;

typedef struct {
    int vocab_size; /* V: padded vocabulary, a multiple of make_vocab_size_divisible_by * tp */
    int real_vocab; /* tokens that exist (256 for bytes); padded rows never get probability */
    int seq_len;    /* T: maximum sequence length (rows of wpe) */
    int num_layers; /* L */
    int hidden;     /* C */
    int num_heads;  /* NH */
    /* Mixture of experts (see MIXTURE OF EXPERTS below): 0 = every block has the dense MLP. */
    int num_experts;           /* E (Megatron's --num-experts) */
    int moe_topk;              /* K experts per token (--moe-router-topk) */
    float moe_aux_loss_coeff;  /* switch load-balancing loss weight (--moe-aux-loss-coeff) */
    float moe_capacity_factor; /* 0: dropless (--moe-expert-capacity-factor) */
} gpt_config;

/* The part of the model a chunk holds. */
typedef struct {
    int tp_size, tp_rank;
    int layer_begin, layer_end; /* blocks [layer_begin, layer_end) */
    bool has_embedding;         /* first stage: wte + wpe, token lookup */
    bool has_head;              /* last stage: lnf + tied head (a copy of wte) + loss */
    int ep_size, ep_rank;       /* expert parallelism: experts [ep_rank·E/ep, ..) held (0 = 1) */
} gpt_shard;

/* How a tensor is cut across tensor-parallel ranks (the serial tensor is (full_rows, full_cols)). */
typedef enum {
    SPLIT_NONE,    /* replicated: LayerNorms, wpe, biases of row-parallel layers */
    SPLIT_ROWS,    /* column-parallel: output rows split (fc_w, fc_b, wte by vocabulary) */
    SPLIT_QKV,     /* column-parallel over heads: rows of Q, K and V each split */
    SPLIT_COLS,    /* row-parallel: input columns split (proj_w, fcproj_w) */
    SPLIT_EXPERTS, /* the experts of an MoE block stacked on rows, cut by expert-parallel rank
                    * (E/ep whole experts each); replicated over TP, like a LayerNorm */
} gpt_split;

enum {
    GPT_WTE,
    GPT_WPE,
    GPT_LN1_W,
    GPT_LN1_B,
    GPT_QKV_W,
    GPT_QKV_B,
    GPT_PROJ_W,
    GPT_PROJ_B,
    GPT_LN2_W,
    GPT_LN2_B,
    GPT_FC_W,
    GPT_FC_B,
    GPT_FCPROJ_W,
    GPT_FCPROJ_B,
    GPT_LNF_W,
    GPT_LNF_B,
    GPT_ROUTER_W, /* MoE blocks only: the router (E, C), the block's 13th tensor (after fcproj_b) */
    GPT_NUM_KINDS
};

typedef struct {
    char name[40];               /* "blocks.3.qkv_w" */
    int kind;                    /* GPT_* */
    int layer;                   /* block index, -1 for embeddings and the final norm */
    size_t rows, cols;           /* local shape; vectors have cols = 1 */
    size_t full_rows, full_cols; /* shape in the serial model */
    gpt_split split;
    size_t offset;          /* element offset in the process's parameter buffer */
    size_t numel;           /* rows * cols */
    bool decay;             /* weight decay applies (matrices and embeddings) */
    bool sequence_parallel; /* replicated over TP, its gradient summed from this rank's sequence
                               shard only: all-reduced over TP before the update (Megatron's
                               attribute of the same name; see SEQUENCE PARALLELISM) */
} gpt_param;

/* ACTIVATION RECOMPUTATION (Megatron's --recompute-granularity, --recompute-method and
 * --recompute-num-layers; Korthikanti et al. 2022). What the forward of a chunk keeps, per
 * micro-batch, for its backward:
 *
 *   none       everything (the list in gpt_internal.h, block_acts)
 *   selective  everything but the attention probabilities att (B,NHl,T,T) of every block,
 *              the only activation that grows with T²·heads: the backward recomputes them
 *              from the kept qkv (QK^T, softmax; no dropout here) just before it needs them
 *   full       only the residual stream entering each group of recomputed blocks (N,C); the
 *              group's forward runs again just before its backward
 *     uniform  the chunk's blocks in consecutive groups of num_layers (which must divide
 *              the chunk's blocks), each group stored by its input and recomputed as a whole
 *     block    the first num_layers blocks of the chunk, each its own group; the other
 *              blocks keep everything, as without recomputation
 *
 * What a micro-batch does not keep is written to the chunk's gpt_scratch, one work space
 * shared by all micro-batches: the forward writes there, the next forward overwrites it,
 * and the backward recomputes it there (gpt_forward and gpt_backward take the scratch).
 * The recomputation runs the same kernels on the same inputs, so the backward sees the
 * same bits: losses and gradients are bit-identical to no recomputation. The split backward
 * (B, W) recomputes in B, and the gpt_wgrad that hands B's dY's to W also keeps what W needs
 * of a recomputed block (the inputs of its linears and norms), since the scratch is
 * overwritten before W runs. */
typedef enum {
    GPT_RECOMPUTE_NONE,
    GPT_RECOMPUTE_SELECTIVE,
    GPT_RECOMPUTE_FULL,
} gpt_recompute_granularity;
typedef enum { GPT_RECOMPUTE_UNIFORM, GPT_RECOMPUTE_BLOCK } gpt_recompute_method;
typedef struct {
    gpt_recompute_granularity granularity;
    gpt_recompute_method method; /* full only */
    int num_layers;              /* full only: blocks per group (uniform) or recomputed (block) */
} gpt_recompute;

/* SEQUENCE PARALLELISM (Megatron's --sequence-parallel; Korthikanti et al. 2022; the operators
 * g and ḡ are in src/tp/mappings.h). With tp = p > 1, what tensor parallelism leaves
 * replicated works on a sequence shard: rank i holds positions [i·T/p, (i+1)·T/p) of each
 * sequence, (B, T/p, C) — the residual stream x, the LayerNorms and their kept outputs and
 * statistics, the residual adds. Per block:
 *
 *   x (B,T/p,C) -> LN1 -> g: all-gather -> QKV, attention, proj (TP region, whole T)
 *     -> ḡ: reduce-scatter -> + proj_b + x = x_mid (B,T/p,C) -> LN2 -> g -> fc, GELU, fcproj
 *     -> ḡ -> + fcproj_b + x_mid
 *
 * The embedding's all-reduce becomes ḡ (its lookup output reduce-scattered, then the
 * positions of the shard added); the head does what Megatron does: LNf on the shard, then
 * g gathers the whole sequence for the vocab-parallel logits and cross-entropy (which work
 * on all B·T positions, vocabulary split, as without SP). Pipeline messages between stages
 * are the residual stream: (B, T/p, C) per rank (gpt_residual_rows).
 * Backward: the all-gathered dY of each row-parallel layer (ḡ's backward) is what its weight
 * and bias gradients read, so proj_b, fcproj_b get the whole sum and so does wpe (from the
 * all-gathered embedding gradient); the input of each column-parallel layer is all-gathered
 * again in B (the forward keeps the shard only) and handed to W, which never communicates.
 * Only the LayerNorm gains and biases (ln1, ln2, lnf) see their shard alone: they carry
 * gpt_param.sequence_parallel, and the optimizer all-reduces their gradients over TP. */

/* Blocks one chunk can hold in its table: 12 tensors each (13 with MoE), plus the embeddings,
 * final norm and head (train's configuration check refuses more, naming the flags). */
#define GPT_MAX_BLOCKS_PER_CHUNK 84
#define GPT_MAX_PARAMS (GPT_MAX_BLOCKS_PER_CHUNK * 13 + 8)

/* The chunk's features beyond the tensor- and pipeline-parallel cut, each off until its
 * gpt_chunk_set_* below, all set before any activations are created. The block reads none of
 * them: each becomes one handle of the feature's own package per pass (gpt_block.c). */
typedef struct {
    gpt_recompute recompute; /* what the activations keep (gpt_chunk_set_recompute) */
    bool sequence_parallel;  /* gpt_chunk_set_sequence_parallel (and tp > 1) */
    comm_group *cp;          /* context parallelism: gpt_chunk_set_context_parallel (NULL: none) */
    int cp_size, cp_rank;    /* 1 (or 0: never set), 0 without; what the layout code reads */
    comm_group *ep;          /* MoE: the expert-parallel group (gpt_chunk_set_expert_parallel) */
    comm_group *moe_stats;   /* MoE with sequence and context parallelism: the tp × cp group */
} gpt_features;

/* One chunk: its shard, its parameter table and views, its activation sizes. */
typedef struct {
    gpt_config cfg;
    gpt_shard shard;
    int nparams;
    gpt_param params[GPT_MAX_PARAMS];
    size_t param_offset; /* where this chunk's parameters start in the process buffer */
    size_t num_elements; /* parameters in this chunk */
    int block_tensors;   /* tensors per block: 12, or 13 with MoE (the router) */
    /* local sizes */
    size_t Cl;             /* C / tp: attention width held (heads * head size) */
    size_t NHl;            /* heads held */
    size_t Vl;             /* vocabulary rows held */
    int64_t v_start;       /* first vocabulary row held */
    gpt_features features; /* recomputation, sequence, context and expert parallelism */
    gpt_hooks *hooks;      /* the optimizer's (gpt_hooks.h), NULL: none */
} gpt_chunk;

/* Checks the configuration for a given tp; writes a message naming the values and the rule. */
bool gpt_config_check(const gpt_config *cfg, int tp_size, char *err, size_t errlen);

/* Checks a recomputation setting for a chunk of `chunk_layers` blocks; writes a message
 * naming the flags, the values and the rule. */
bool gpt_recompute_check(const gpt_recompute *rc, int chunk_layers, char *err, size_t errlen);
/* Sets what the chunk's activations keep (dies on a setting gpt_recompute_check refuses).
 * Before any gpt_acts, gpt_scratch or gpt_wgrad of the chunk is created: they are laid out
 * for it. */
void gpt_chunk_set_recompute(gpt_chunk *c, const gpt_recompute *rc);

/* Sequence parallelism for the chunk (see SEQUENCE PARALLELISM), before any gpt_acts,
 * gpt_scratch or gpt_wgrad of it is created. With tp_size 1 it stays off (Megatron too: there
 * is nothing to shard). Dies unless tp_size divides the sequence length. */
void gpt_chunk_set_sequence_parallel(gpt_chunk *c, bool on);
/* MIXTURE OF EXPERTS (Megatron's --num-experts; the layer is src/moe/moe_layer.h). With
 * cfg.num_experts = E > 0 every block's MLP is E expert MLPs behind a router: each token goes
 * to its top-K experts by softmax score, and the block adds Σ score · expert(LN2(x)) to the
 * residual stream. A block's tensors: the 12 of a dense block, where fc_w (E·4C, C), fc_b,
 * fcproj_w (E·C, 4C) and fcproj_b hold the experts stacked (SPLIT_EXPERTS: this rank's E/ep
 * of them, whole — expert tensor parallelism is 1: every TP rank runs all its tokens through
 * them, like a LayerNorm), then router_w (E, C). With E = 1, K = 1 the score is 1 and the
 * model is the dense one, with the same initial values. The experts' weight gradients are
 * computed in B (the dispatch's all-to-all runs there) into the block's gpt_wgrad and added
 * to the gradients in W, so W still never communicates.
 * The switch load-balancing loss of each block is added to the objective with the weight of
 * one micro-batch's mean loss; gpt_acts_aux_loss reports it (the LM loss stays what
 * gpt_forward returns). With sequence parallelism each TP rank routes only its own positions
 * (B, T/tp): the experts' and router's gradients are then sequence_parallel (summed over TP by
 * the optimizer) and the switch loss's counts are shared over TP. Not with recomputation,
 * ZeRO-2/3 or CUDA (train's configuration check names the flags).
 *
 * CONTEXT PARALLELISM (--context-parallel-size; src/cp/). With a cp group of size P the
 * chunk's micro-batches hold T/P positions of each sequence, Megatron's zig-zag chunks r and
 * 2P−1−r (src/cp/zigzag.h): gpt_acts_create and gpt_forward take the LOCAL length, tokens and
 * targets are this rank's positions, every activation is (B, T/P, ·). The embedding adds
 * each row's global position; attention is ring attention over the group (K/V travel, the
 * partial results merge by log-sum-exp), keeping the log-sum-exp (B,NHl,T/P) where att was;
 * the loss is the mean over this rank's positions. With sequence parallelism each TP rank
 * holds 1/tp of those rows, their global positions still the zig-zag ones. Not with
 * recomputation, ZeRO-2/3 or CUDA. */
void gpt_chunk_set_context_parallel(gpt_chunk *c, comm_group *cp);
/* The same sizes without a group, for layout only: the chunk's activations are laid out as
 * rank `rank` of a cp group of `size` holds them (gpt_*_bytes_of), but it cannot run (its
 * forward has no group to send K/V around). The memory prediction (src/train/memory_predict.h)
 * uses it, having no MPI; gpt_chunk_set_context_parallel calls it. */
void gpt_chunk_set_context_parallel_layout(gpt_chunk *c, int size, int rank);
/* The expert-parallel group of an MoE chunk (size shard.ep_size, rank shard.ep_rank). */
void gpt_chunk_set_expert_parallel(gpt_chunk *c, comm_group *ep);
/* The switch loss summed over the blocks of the last forward of `a` (0 without MoE). */
float gpt_acts_aux_loss(const gpt_acts *a);
/* Per MoE block i of the chunk (local index): the (token, choice) pairs of the last forward
 * routed to each of the E experts from this rank's tokens, before dropping. */
const int64_t *gpt_acts_expert_counts(const gpt_acts *a, int i);
int64_t gpt_acts_dropped(const gpt_acts *a, int i);

/* Rows of the residual stream a chunk holds for a micro-batch of B sequences of T tokens:
 * B·T, or B·T/tp with sequence parallelism (the rows of x_in, x_out and their gradients). */
size_t gpt_residual_rows(const gpt_chunk *c, int B, int T);

/* Vocabulary padded up to a multiple of divisible_by * tp_size; -1 when that product or the
 * padded size does not fit an int (src/core/checked.h: never wrapped into another size). */
int gpt_padded_vocab(int real_vocab, int divisible_by, int tp_size);

/* Fills the chunk's parameter table; its parameters start at `param_offset`. */
void gpt_chunk_init(gpt_chunk *c, const gpt_config *cfg, const gpt_shard *shard,
                    size_t param_offset);

/* Index in the serial (unsharded) tensor of local element `i` of parameter p. */
size_t gpt_param_serial_index(const gpt_param *p, const gpt_shard *shard, size_t i);

/* Initial value of element `serial_index` of parameter kind/layer: a pure function of the
 * seed, so every shard starts with exactly its slice of the serial model. */
float gpt_init_value(const gpt_config *cfg, uint64_t seed, int kind, int layer,
                     size_t serial_index);
/* Writes this chunk's initial parameters into params (the process buffer). */
void gpt_chunk_init_params(const gpt_chunk *c, float *params, uint64_t seed);

/* UNITS: the runs of consecutive tensors a pass reads or writes together — wte, wpe, one block
 * (ln1_w .. fcproj_b), the final norm (lnf_w, lnf_b). ZeRO-2/3 shard each unit on its own
 * (src/zero/shard_ranges.h, UNITS) and the model finds a unit's storage through
 * src/model/gpt_hooks.h (SHARDED STORAGE). True when p is the first tensor of its unit. */
bool gpt_param_starts_unit(const gpt_param *p);

/* Finds a parameter by kind and layer in the chunk, or NULL. */
const gpt_param *gpt_chunk_find(const gpt_chunk *c, int kind, int layer);

/* Activations of one micro-batch through one chunk (B, T fixed at allocation): what the
 * chunk's recomputation setting keeps, and nothing else. gpt_acts_bytes is their size, the
 * number the executor's memory accounting adds up. */
typedef struct gpt_acts gpt_acts;
gpt_acts *gpt_acts_create(const gpt_chunk *c, int B, int T);
void gpt_acts_destroy(gpt_acts *a);
size_t gpt_acts_bytes(const gpt_acts *a);
/* Four parts, four allocations (gpt_layout.c), so that each is held exactly as long as a pass
 * reads it and equal parts of different chunks can share memory:
 *   GPT_ACTS_W       the layers' part the weight-gradient pass W reads: the residual stream
 *                    entering each kept block, the inputs of every linear and norm;
 *   GPT_ACTS_B       the layers' part only B reads: qkv, the MLP's pre-activation, the
 *                    attention's kept part — given back right after B when the backward is
 *                    split (Qi et al.: W reads less than B);
 *   GPT_ACTS_ENDS_W  the chunk's ends W reads: the tokens (the embedding's W), the chunk's
 *                    output, the final norm and the losses (the head's) — empty in between;
 *   GPT_ACTS_ENDS_B  the head's part only B reads: the logits, the loss statistics, the
 *                    targets — empty without the head.
 * The layers' parts of two chunks with the same blocks are equally large whether or not a
 * chunk holds the embedding or the head: the pipeline executor pools the parts by size across
 * a rank's chunks (src/pp/executor.c), so v chunks of L/v layers hold what one stage of L
 * layers holds. gpt_acts_create_empty lays out nothing (the MoE layers' own state aside);
 * gpt_acts_attach lays a part of gpt_acts_part_bytes into an allocation, gpt_acts_detach hands
 * it out again (its views become NULL). gpt_acts_create attaches all four itself. */
typedef enum {
    GPT_ACTS_W,
    GPT_ACTS_B,
    GPT_ACTS_ENDS_W,
    GPT_ACTS_ENDS_B,
    GPT_ACTS_PARTS
} gpt_acts_part;
/* Whether W (rather than B) is the last pass that reads the part. */
bool gpt_acts_part_read_by_w(gpt_acts_part k);
size_t gpt_acts_part_bytes(const gpt_acts *a, gpt_acts_part k);
gpt_acts *gpt_acts_create_empty(const gpt_chunk *c, int B, int T);
void gpt_acts_attach(gpt_acts *a, const gpt_chunk *c, gpt_acts_part k, float *mem);
float *gpt_acts_detach(gpt_acts *a, const gpt_chunk *c, gpt_acts_part k);
/* Per-position losses (B*T) of the last forward, when the chunk has the head (device memory:
 * read it with device_download unless the device is the cpu). */
const float *gpt_acts_losses(const gpt_acts *a);
/* This rank's vocabulary shard of the logits (B*T, Vl) of the last forward, when the chunk
 * has the head (device memory, like the losses). The KV-cache tests compare against it. */
const float *gpt_acts_logits(const gpt_acts *a);

/* Work space of one chunk, shared by all its micro-batches: the backward's gradients in
 * flight and, with recomputation, where the activations that are not kept are computed
 * (one block's att with selective; the blocks of one group, qkv, att and all, with full).
 * gpt_scratch_bytes: its size (once per chunk, not per micro-batch). */
typedef struct gpt_scratch gpt_scratch;
gpt_scratch *gpt_scratch_create(const gpt_chunk *c, int B, int T);
void gpt_scratch_destroy(gpt_scratch *s);
size_t gpt_scratch_bytes(const gpt_scratch *s);

/* The bytes gpt_acts_create, gpt_scratch_create and gpt_wgrad_create (below) would allocate,
 * from the same layout code, without allocating: what the memory prediction adds up
 * (src/train/memory_predict.h), exact by construction. */
size_t gpt_acts_bytes_of(const gpt_chunk *c, int B, int T);
/* Each part's bytes into parts (gpt_acts_part); returns the whole set's, gpt_acts_bytes_of. */
size_t gpt_acts_parts_bytes_of(const gpt_chunk *c, int B, int T, size_t parts[GPT_ACTS_PARTS]);
size_t gpt_scratch_bytes_of(const gpt_chunk *c, int B, int T);
size_t gpt_wgrad_bytes_of(const gpt_chunk *c, int B, int T);
/* The operand elements of the largest linear product (dev_matmul_operand_elems) that any of
 * the n chunks runs for micro-batches of (B,T): qkv, proj, fc, fcproj or the experts, the LM
 * head with this rank's vocabulary shard. With bf16 products the device's operand scratch is
 * sized by it once (src/device/device.h device_set_matmul_dtype; the trainer, and the memory
 * prediction, which counts it). */
size_t gpt_matmul_operand_elems(const gpt_chunk *chunks, int n, int B, int T);

/* Forward of one micro-batch.
 *   s: the chunk's scratch (may be NULL when the chunk recomputes nothing).
 *   tokens, targets (B,T): tokens are read by the first stage, targets by the last.
 *   x_in (B,T,C): the previous stage's output (ignored by the first stage).
 *   x_out (B,T,C): this chunk's output, for the next stage (NULL on the last stage).
 *   With sequence parallelism x_in and x_out (and dx_out, dx_in below) are this rank's
 *   sequence shard, (B,T/tp,C).
 *   tp: the tensor-parallel group (NULL or size 1 = serial).
 * Returns the mean loss over the B*T positions on the last stage, 0 elsewhere. */
float gpt_forward(const gpt_chunk *c, const float *params, gpt_acts *a, gpt_scratch *s,
                  const int32_t *tokens, const int32_t *targets, const float *x_in, float *x_out,
                  comm_group *tp);

/* Backward of the micro-batch whose forward filled `a`. Accumulates into grads (the process
 * gradient buffer, same layout as params).
 *   dx_out (B,T,C): gradient of this chunk's output (ignored on the last stage).
 *   dx_in (B,T,C): written with the gradient of this chunk's input (NULL on the first stage).
 *   dloss: d(objective)/d(loss at each position), e.g. 1/(B*T*num_microbatches).
 * It computes exactly what gpt_backward_input then gpt_backward_weight (below) compute, through
 * the scratch's own gpt_wgrad and the same per-layer code, bit for bit; it only runs each
 * layer's W right after that layer's B, so each layer's gradients are final while the layers
 * below are still in their backward (what --overlap-grad-reduce launches on). */
void gpt_backward(const gpt_chunk *c, const float *params, float *grads, gpt_acts *a,
                  gpt_scratch *s, const float *dx_out, float *dx_in, float dloss, comm_group *tp);
/* The share of the last gpt_backward through s that its W parts took (thread CPU time; the
 * rest of it is B), when s times them (gpt_scratch_time_weight): what the trace records of a whole backward, so a schedule that splits B
 * from W can be planned from a run that did not (src/pp/stage_costs.h). Meaningful where the
 * device's work runs on the calling thread (the CPU devices). */
double gpt_scratch_weight_share(const gpt_scratch *s);
/* Whether gpt_backward through s times its W parts (off when created: a run that records no
 * trace reads no clock for it; gpt_scratch_weight_share is then 0). */
void gpt_scratch_time_weight(gpt_scratch *s, bool on);

/* THE SPLIT BACKWARD (zero-bubble schedules, Qi et al. 2024). Every layer's backward is two
 * parts: B, the gradient of its input (what the previous stage waits for), and W, the
 * gradient of its weights (what only the optimizer waits for). For a linear Y = X A^T + b:
 *
 *     B:  dX += dY A              W:  dA += dY^T X,  db += sum over rows of dY
 *
 * and for a LayerNorm, B is dx and W is d(gain), d(bias). W needs the layer's input X (kept in
 * the activations) and its output gradient dY, which B saves in a gpt_wgrad. So:
 *
 *     gpt_backward_input (B)  : dx_in, all tensor-parallel collectives; fills wg
 *     gpt_backward_weight (W) : grads += ...; reads a and wg, no communication
 *
 * Between B and W of one micro-batch its activations `a` and its `wg` must stay untouched;
 * other micro-batches' B and W may run in between (each gradient still accumulates the
 * micro-batches in the order their W runs). What wg holds, per block (N = B*T):
 *     dY of fcproj (N,C), of fc (N,4C/tp), of LN2 (N,C), of proj (N,C), of qkv (N,3C/tp),
 *     of LN1 (N,C); on the last stage the logits' (N,V/tp) and LNf's (N,C); on the first the
 *     embedding output's (N,C); with sequence parallelism the dY's of LN1, LN2, LNf are (N/tp,C)
 *     and the all-gathered inputs of qkv, fc and the head (N,C) are there too; for each block that full recomputation recomputes, the
 *     inputs of its W that B recomputed (see ACTIVATION RECOMPUTATION above). */
typedef struct gpt_wgrad gpt_wgrad;
gpt_wgrad *gpt_wgrad_create(const gpt_chunk *c, int B, int T);
void gpt_wgrad_destroy(gpt_wgrad *wg);
size_t gpt_wgrad_bytes(const gpt_wgrad *wg);

void gpt_backward_input(const gpt_chunk *c, const float *params, gpt_acts *a, gpt_scratch *s,
                        gpt_wgrad *wg, const float *dx_out, float *dx_in, float dloss,
                        comm_group *tp);
void gpt_backward_weight(const gpt_chunk *c, float *grads, const gpt_acts *a, const gpt_wgrad *wg);

#endif /* TRIDENT_MODEL_GPT_H */
