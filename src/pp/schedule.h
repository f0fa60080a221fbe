/* schedule.h — pipeline schedules as plain data: which forward and backward each pipeline
 * rank runs, in which order, and which messages each one receives before and sends after.
 *
 * This is the generator only. It knows nothing of MPI, of the model or of time: the
 * executor (another module) walks a rank's action list and does what each action says;
 * schedule_sim.h checks a schedule and predicts its timeline; viz/schedule_draw.h draws it.
 *
 * Vocabulary. p pipeline ranks, m micro-batches, v model chunks per rank (v = 1 except for
 * the interleaved schedule and zbv, v = 2). The model is cut into S = p·v virtual stages; which
 * stage chunk c of rank r holds is the schedule's placement, pp_stage (and back, pp_stage_owner).
 * Every layer of the tree that needs it (model partition, trainer, pictures) asks these two:
 *
 *   round robin (all but zbv)  s = c·p + r: the stages go round the ranks v times
 *     p = 4, v = 2:   rank 0: s0 s4    rank 1: s1 s5    rank 2: s2 s6    rank 3: s3 s7
 *                     activations  s0 -> s1 -> s2 -> s3 -> s4 -> ... -> s7 (loss)
 *   V (zbv)                    chunk 0 is stage r, chunk 1 is stage 2p−1−r: down and back up
 *     p = 4:          rank 0: s0 s7    rank 1: s1 s6    rank 2: s2 s5    rank 3: s3 s4
 *                     activations  s0 -> s1 -> s2 -> s3 => s4 -> s5 -> s6 -> s7 (loss, rank 0)
 *                     (=>: rank 3 to itself; the executor hands that buffer over locally)
 *   gradients flow the other way: S−1 -> ... -> 0.
 *
 * One action = forward or backward of one (micro-batch, chunk). Its messages:
 *   F of stage s: receives the activation      from s-1 before (unless s = 0),
 *                 sends its output activation  to   s+1 after  (unless s = S-1);
 *   B of stage s: receives the output-gradient from s+1 before (unless s = S-1),
 *                 sends the input-gradient     to   s-1 after  (unless s = 0).
 * The peer of s±1 is the rank that owns it (pp_stage_owner): (r±1) mod p round robin; in
 * the V it can be the rank itself (stage p−1 -> p on rank p−1). A message is named by its
 * tag, unique in one step over (direction, micro-batch, destination virtual stage):
 *     tag = (mb·S + dst_stage)·2 + dir        dir 0 = activation, 1 = gradient
 * so the largest tag is 2·m·S − 1, at most COMM_MAX_TAG (src/runtime/comm_tag.h;
 * pp_config_valid checks it).
 *
 * The schedules, every rank running actions strictly in order:
 *   gpipe        all m forwards (micro-batch order), then all m backwards (same order).
 *   1f1b         PipeDream-flush: warmup of min(p−r−1, m) forwards, then one forward /
 *                one backward alternating, then the remaining backwards (cooldown).
 *   interleaved  1F1B over v chunks (Megatron). Forwards visit micro-batches in groups
 *                of p, chunk by chunk: F0c0..F(p-1)c0, F0c1..F(p-1)c1, …, then the next
 *                group. The k-th backward is for the k-th forward's micro-batch on chunk
 *                v−1−(its chunk). Warmup min(m·v, 2(p−r−1) + (v−1)·p). Needs m % p == 0.
 *   zb-h1        zero bubble, handcrafted schedule 1 (Qi et al., ICLR 2024): 1F1B's
 *                warmup, then the backward split into B (input gradient) and W (weight
 *                gradient). Rank r runs its first r backwards as B alone, keeping their
 *                W's for the end, then F B W triples, then B W pairs, then the r W's kept:
 *                the W's fill the cooldown idle time 1F1B has, and since every rank holds at
 *                most p sets to their B and only their W parts after it (gpt.h), its activation
 *                memory is bounded by 1F1B's first stage's (the B -> W hand-over apart).
 *                With F = B = W its bubble is a third of 1F1B's: (p−1)(F + B − W).
 *                No optimizer post-validation (Qi et al.'s rollback): Trident steps the
 *                optimizer only after every rank's last W, behind the same global gradient
 *                norm and NaN check as every schedule, so there is nothing to undo; the
 *                price is the optimizer's time outside the pipeline, as in 1F1B.
 *   zbv          zero bubble on the V placement (Qi et al. 2024, "ZB-V"), v = 2, split
 *                backward, in the published order: schedule_zbv.c builds it as the paper's
 *                reference generator does (fill the V with chunk-0 forwards, then rounds of
 *                one B and one F per rank with W's filling every wait), and
 *                tests/pp/zbv_reference.txt keeps that generator's orders, which it equals.
 *                Memory: at most 2p chunk sets (1F1B's p stage sets). Any m >= 1; with
 *                m >= p the makespan is the least possible, 6m + p − 1 units.
 *                Rank 0 holds the embedding (stage 0) and the head + loss (stage 2p−1).
 *                With F = B = W every rank idles p−1 units (the fill of the V: rank p−1 waits
 *                p−1 forwards for its first input) against 6m units of work, which is the
 *                least any schedule can do when all ranks end together.
 *   dualpipev    DeepSeek's DualPipe cut in half onto zbv's V (DeepSeek-V3 report; DualPipe's
 *                dualpipev.py; torch's ScheduleDualPipeV), split backward, m >= 2p. Eight
 *                fixed steps per rank (schedule_dualpipev.c): chunk-0 forwards, then both
 *                chunks' forwards, then forward/backward pairs of the two chunks (DeepSeek
 *                overlaps each pair on two streams; Trident runs its F then its B), then the
 *                backwards, with the W's of the first and last backwards deferred to fill the
 *                waits. Holds 2p + 1 chunk sets (one more than zbv). Its published bubble is
 *                (p−1)(F&B + B − 3W) per rank (B a whole backward); run pair by pair at
 *                F = B = W it is only the fill of the V, like zbv's.
 * gpipe, 1f1b and interleaved are the same shape — warmup forwards, steady F/B pairs,
 * cooldown backwards — with GPipe's warmup being all m forwards:
 *
 *     1f1b p=4 m=8 rank 0:  F0 F1 F2 | F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 | B5 B6 B7
 *                           warmup      steady (1F1B)                  cooldown
 *     zb-h1 p=4 m=8 rank 1: F0 F1 | F2 B0 F3 B1 W0 F4 B2 W1 .. F7 B5 W4 | B6 W5 B7 W6 W7
 *                           warmup   steady (one W kept back)           cooldown
 *
 * Typical use (the executor):
 *     pp_config cfg = {PP_1F1B, p, m, 1};
 *     pp_config_check(&cfg, "trident train");        // dies with a clear message if bad
 *     pp_rank_plan plan;
 *     pp_rank_plan_build(&cfg, my_pipeline_rank, &plan);
 *     for (int i = 0; i < plan.n; i++) { const pp_action *a = &plan.actions[i]; ... }
 *     pp_rank_plan_free(&plan);
 */
#ifndef TRIDENT_PP_SCHEDULE_H
#define TRIDENT_PP_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    PP_GPIPE = 0,
    PP_1F1B = 1,
    PP_INTERLEAVED = 2,
    PP_ZB_H1 = 3,
    PP_ZBV = 4,
    PP_DUALPIPEV = 5
} pp_kind;
/* PP_BACKWARD is the whole backward of gpipe / 1f1b / interleaved. The zero-bubble schedules
 * split it (src/model/gpt.h, "the split backward"): PP_BACKWARD_INPUT ("B" in Qi et al.: the
 * input gradient, with the backward's messages) and PP_WEIGHT ("W": the weight gradient, no
 * messages, any time after its B and before the optimizer). */
typedef enum { PP_FORWARD = 0, PP_BACKWARD = 1, PP_BACKWARD_INPUT = 2, PP_WEIGHT = 3 } pp_op;
/* Direction of a message, the low bit of its tag. */
typedef enum { PP_ACTIVATION = 0, PP_GRADIENT = 1 } pp_dir;
/* The phase an action belongs to on its rank. */
typedef enum { PP_WARMUP = 0, PP_STEADY = 1, PP_COOLDOWN = 2 } pp_phase;

typedef struct {
    pp_kind kind;
    int p; /* pipeline ranks (pipeline-model-parallel size) */
    int m; /* micro-batches per step */
    int v; /* model chunks per rank: 1, >= 2 for interleaved, 2 for zbv */
} pp_config;

/* One step of one rank. recv_* happen before the compute, send_* after; -1 = no message. */
typedef struct {
    pp_op op;
    int mb;         /* micro-batch, 0..m-1 */
    int chunk;      /* model chunk on this rank, 0..v-1 */
    int stage;      /* virtual stage pp_stage(rank, chunk), 0..p·v-1 */
    pp_phase phase; /* warmup / steady / cooldown */
    int recv_peer;  /* pipeline rank to receive from, or -1 */
    int recv_stage; /* virtual stage that sends it, or -1 */
    int recv_tag;   /* tag of the message (pp_tag), or -1 */
    int send_peer;  /* pipeline rank to send to, or -1 */
    int send_stage; /* virtual stage that receives it, or -1 */
    int send_tag;   /* tag of the message, or -1 */
} pp_action;

/* The ordered actions of one rank. */
typedef struct {
    int rank;
    int n;              /* number of actions: 2·m·v, or 3·m·v when the backward is split */
    int warmup;         /* actions [0, warmup) are the warmup forwards */
    int cooldown;       /* the last `cooldown` actions are the cooldown backwards */
    pp_action *actions; /* (n) */
} pp_rank_plan;

/* Every rank's plan: what the simulator, validator and pictures take. */
typedef struct {
    pp_config cfg;
    pp_rank_plan *ranks; /* (p) */
} pp_schedule;

/* "gpipe" | "1f1b" | "interleaved" | "zb-h1" | "zbv" | "dualpipev" -> kind; false for anything
 * else. */
bool pp_kind_parse(const char *name, pp_kind *out);
/* The name pp_kind_parse accepts. */
const char *pp_kind_name(pp_kind kind);

/* True when the configuration is usable; otherwise false and one line in msg naming the
 * value and the rule, e.g. "m = 6 micro-batches is not a multiple of the pipeline
 * size p = 4: the interleaved schedule walks micro-batches in groups of p". Rules: p >= 1,
 * m >= 1, v >= 2 for interleaved, v == 2 for zbv and dualpipev, v == 1 otherwise, m % p == 0
 * and p >= 2 for interleaved, m >= 2p for dualpipev. zbv takes any m >= 1 (see above). */
bool pp_config_valid(const pp_config *cfg, char *msg, size_t cap);
/* pp_config_valid, dying with "<who>: <message>" when it is not. */
void pp_config_check(const pp_config *cfg, const char *who);

/* Virtual stage of (rank, chunk): chunk·p + rank, or the V for zbv (r, 2p−1−r). */
int pp_stage(const pp_config *cfg, int rank, int chunk);
/* The inverse: which (rank, chunk) holds virtual stage `stage` (0 <= stage < p·v). */
void pp_stage_owner(const pp_config *cfg, int stage, int *rank, int *chunk);
/* Whether the schedule splits the backward into B and W (zb-h1, zbv, dualpipev). */
bool pp_splits_backward(pp_kind kind);
/* Whether the schedule places its 2 chunks per rank in a V (zbv, dualpipev); by name: false
 * for a name pp_kind_parse does not know. */
bool pp_v_placement(pp_kind kind);
bool pp_name_v_placement(const char *name);
/* Model chunks per rank when none is given: 2 for interleaved and the V schedules, else 1. */
int pp_default_chunks(pp_kind kind);
/* Number of warmup forwards on `rank`: m (gpipe), min(p−r−1, m) (1f1b, zb-h1),
 * min(m·v, 2(p−r−1) + (v−1)·p) (interleaved); zbv: the forwards before its first B in its
 * plan (schedule_zbv.c). */
int pp_warmup(const pp_config *cfg, int rank);
/* Tag of the message of direction dir for micro-batch mb arriving at virtual stage
 * dst_stage, with S = nstages virtual stages: (mb·S + dst_stage)·2 + dir. */
int pp_tag(pp_dir dir, int mb, int dst_stage, int nstages);
/* The micro-batch of a message's tag, read back (pp_tag's inverse): tag / 2 / nstages. */
int pp_tag_microbatch(int tag, int nstages);
/* Number of distinct tags of a configuration, 2·m·p·v (all tags are below it). */
int pp_tag_count(const pp_config *cfg);

/* The action (op, mb, chunk) of `rank` with its messages filled in; phase = PP_STEADY. */
pp_action pp_action_make(const pp_config *cfg, int rank, pp_op op, int mb, int chunk);

/* The ordered actions of `rank` (0 <= rank < p). cfg must be valid (CHECKed). */
void pp_rank_plan_build(const pp_config *cfg, int rank, pp_rank_plan *out);
void pp_rank_plan_free(pp_rank_plan *plan);

/* What one rank's plan keeps alive, walking its actions in order — the executor's pools grow
 * to exactly this (it never frees a set, it reuses it), so it is what a memory prediction
 * multiplies by the bytes of one set (src/train/memory_predict.h):
 *   acts[c]      the most activation sets of chunk c held at once, each from its F to its
 *                whole backward (B) or, split, to its W: GPipe m, 1F1B min(p − r, m) ...
 *   acts_b[c]    the most sets of chunk c whose B part is held (gpt.h: what only B reads),
 *                each from its F to its B — the whole backward, or B of a split one: after B
 *                only W's inputs stay (Qi et al.: W reads less than B)
 *   handover[c]  the most B → W hand-overs of chunk c held at once (split backward; else 0)
 *   sets         the most activation sets held at once over all chunks
 *   sets_after   (n) the activation sets held just after each action of the plan: the curve
 *                whose maximum is `sets` (viz/schedule_draw.h draws it over time)
 *   self_msgs    the most messages this rank sent to itself and has not received yet (the
 *                bottom of zbv's V, handed over in memory by the executor; else 0) */
typedef struct {
    int v;
    int *acts;     /* (v) */
    int *acts_b;   /* (v) */
    int *handover; /* (v) */
    int sets, self_msgs;
    int *sets_after; /* (plan->n) */
} pp_plan_holds;
pp_plan_holds pp_plan_holds_of(const pp_rank_plan *plan, int v);
void pp_plan_holds_free(pp_plan_holds *h);

/* One part of every activation set of a chunk (src/model/gpt.h, gpt_acts_part): its bytes and
 * the last pass that reads it — W, or B (given back at B when the backward is split; a whole
 * backward gives back every part). */
typedef struct {
    size_t bytes;
    bool until_w;
} pp_part;
/* The memory a pool of blocks by size reaches over one rank's plan: the executor gives a part
 * back to a pool of its byte size, where the next part of that size, of whichever chunk, takes
 * it (src/pp/executor.c), and frees nothing. So for each size, the most parts of that size
 * held at once, times the size, summed over the sizes. parts: (v·nparts), chunk-major. Equal
 * parts of different chunks share one count: v chunks of L/v layers need what one stage of L
 * layers needs (zbv, dualpipev) — per-chunk pools would add v peaks that never coincide. */
size_t pp_pool_bytes(const pp_rank_plan *plan, int v, int nparts, const pp_part *parts);

/* Every rank's plan. */
void pp_schedule_build(const pp_config *cfg, pp_schedule *out);
void pp_schedule_free(pp_schedule *s);

/* "F3", "B0", "W2", or with v > 1 "F3c1"; returns buf. B is the whole backward, or in a
 * zero-bubble schedule its input-gradient part. */
const char *pp_action_name(const pp_action *a, int v, char *buf, size_t cap);
/* 'F', 'B' (a whole backward or its input-gradient part) or 'W'. */
char pp_op_letter(pp_op op);

/* Textbook bubble fractions with uniform costs and free communication (v = 1 for gpipe
 * and 1f1b): the idle time is (p−1)/v micro-batch slots per rank, so
 *   of the ideal (bubble-free) time:  (p−1) / (v·m)          — (p−1)/m for v = 1
 *   of the total time:                (p−1) / (v·m + p − 1)   — (p−1)/(m+p−1) for v = 1 */
double pp_bubble_of_ideal(int p, int m, int v);
double pp_bubble_of_total(int p, int m, int v);
/* The same for any schedule. zb-h1, with F = B = W (each a third of forward + backward):
 * every rank idles (p−1)(F + B − W) = (p−1) units against 3m units of work, so
 *   of the ideal time:  (p−1) / (3m)        of the total time:  (p−1) / (3m + p − 1)
 * — a third of 1F1B's bubble (Qi et al. 2024, "ZB-H1"). zbv, with F = B = W per chunk: every
 * rank idles p−1 chunk actions (the fill of the V, a lower bound) against 6m (F, B, W on 2
 * chunks):
 *   of the ideal time:  (p−1) / (6m)        of the total time:  (p−1) / (6m + p − 1)
 * (dualpipev, run pair by pair, too: schedule_dualpipev_test.c)
 * — Qi et al. call ZB-V zero bubble; what remains at F = B = W is the fill of the V, which
 * no schedule avoids when every rank ends the step together (Trident steps the optimizer
 * after the whole pipeline).
 * `formula` gets the total-time formula as text, e.g. "(p-1)/(3m+p-1), F = B = W" (ASCII),
 * when not NULL. */
double pp_textbook_of_ideal(const pp_config *cfg);
double pp_textbook_of_total(const pp_config *cfg, char *formula, size_t cap);

/* The textbook formulas as text (ASCII), the one source every printer takes them from:
 *              gpipe, 1f1b      interleaved        zb-h1             zbv
 *   total      (p-1)/(m+p-1)    (p-1)/(v*m+p-1)    (p-1)/(3m+p-1)    (p-1)/(6m+p-1)
 *   ideal      (p-1)/m          (p-1)/(v*m)        (p-1)/(3m)        (p-1)/(6m)
 *   assumes    ""               ""                 "F = B = W"       "F = B = W"
 * (pp_textbook_of_total's `formula` is total, then ", " and assumes when there is one.) */
typedef struct {
    char total[32], ideal[32];
    char assumes[16]; /* the cost assumption the figure needs, or "" */
    bool shows_v;     /* the formulas name v (print its value beside them) */
} pp_textbook_text;
void pp_textbook_formulas(const pp_config *cfg, pp_textbook_text *out);

#endif /* TRIDENT_PP_SCHEDULE_H */
