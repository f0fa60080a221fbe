/* hostile_values.c — round 3 of the hostile-input table (issue 31): see hostile.h.
 *
 * Families 4, 7 and 8 of the issue:
 *   non-finite values made during a run   an aux loss that overflows, a loss scale outside the
 *                                         scaler's range, finite weights whose loss or logits
 *                                         overflow: one line naming the value, never a bare
 *                                         `inf` in metrics.jsonl nor an internal check
 *   silently accepted                     MoE settings without experts, rank files whose
 *                                         coordinates are not their rank's, metadata with a
 *                                         key twice or a key written with an escape
 *   messages that blame a flag not given  generate's shape rules name the checkpoint, groups
 *                                         zbv names zbv's rule, a /proc prompt file is read
 *
 * Fixtures (in g_dir, beside the runner's {D}/ck): forged copies of {D}/ck, and two 2-rank
 * checkpoints ({D}/v_ep: ep 2 over dp 2, {D}/v_tp: tp 2) whose rank files are forged here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/ckpt/tensorfile.h"
#include "tests/robustness_input/hostile.h"
#include "tests/support/testing.h"

/* The tiny model of the runner's fixture checkpoint {D}/ck. */
#define TINY                                                                                       \
    "--num-layers 1 --hidden-size 8 --num-attention-heads 1 --seq-length 4 "                       \
    "--global-batch-size 1 --micro-batch-size 1 --no-trace --quiet"

const hostile_case hostile_values_cases[] = {
    /* ---- family 4: non-finite values made during a run ---- */
    {1,
     "train " TINY " --num-experts 4 --moe-aux-loss-coeff 3.4e38 --train-iters 2 --run-dir "
     "{D}/v_aux",
     "aux loss is inf at iteration 1: --moe-aux-loss-coeff 3.4e+38", NULL},
    {1, "eval --load {D}/v_ls_big",
     "rank_00000.tck': loss_scale 1e+300 is outside [1, 16777216], the range of the fp16 loss "
     "scaler",
     NULL},
    {1, "eval --load {D}/v_ls_tiny", "rank_00000.tck': loss_scale 1e-300 is outside [1, 16777216]",
     NULL},
    {1, "eval --load {D}/v_ls_half", "rank_00000.tck': loss_scale 0.5 is outside [1, 16777216]",
     NULL},
    {1, "train " TINY " --fp16 --train-iters 3 --run-dir {D}/v_m --load {D}/v_ls_big",
     "loss_scale 1e+300 is outside [1, 16777216]", NULL},
    {1, "train " TINY " --fp16 --train-iters 3 --run-dir {D}/v_m --load {D}/v_ls_tiny",
     "loss_scale 1e-300 is outside [1, 16777216]", NULL},
    {1, "eval --load {D}/v_ls_str", "rank_00000.tck': loss_scale is not a number", NULL},
    {1, "eval --load {D}/v_huge",
     "trident eval: the loss of window 0 is -nan: the checkpoint's parameters are finite but make "
     "the model's outputs overflow",
     NULL},
    {1, "generate --load {D}/v_hugeln --prompt ab --temperature 0",
     "is not finite at generation step 0: the checkpoint's parameters are finite", NULL},
    {1, "generate --load {D}/v_hugeln --prompt ab --top-k 3", "is not finite at generation step 0",
     NULL},
    /* ---- family 7: silently accepted ---- */
    {1, "train --moe-router-topk 5", "--moe-router-topk 5 needs experts: give --num-experts", NULL},
    {1, "train --moe-aux-loss-coeff -5",
     "--moe-aux-loss-coeff -5 needs experts: give --num-experts", NULL},
    {1, "train --moe-expert-capacity-factor 1.5",
     "--moe-expert-capacity-factor 1.5 needs experts: give --num-experts", NULL},
    {1, "train --moe-router-topk 1 --expert-model-parallel-size 1",
     "--moe-router-topk 1 needs experts", NULL},
    {1, "memory --world-size 1 --moe-router-topk 5",
     "--moe-router-topk 5 needs experts: give --num-experts", NULL},
    {1, "eval --load {D}/v_denseaux", "rank_00000.tck': moe_aux_loss_coeff but no num_experts",
     NULL},
    {1, "eval --load {D}/v_densecap",
     "rank_00000.tck': moe_expert_capacity_factor but no num_experts", NULL},
    {1, "eval --load {D}/v_dup", "rank_00000.tck': its metadata has the key \"tp\" twice", NULL},
    {1, "eval --load {D}/v_dupit", "its metadata has the key \"iteration\" twice", NULL},
    {1, "eval --load {D}/v_esc",
     "rank_00000.tck': its metadata has the key \"t\\u0070\" written with an escape", NULL},
    {1, "eval --load {D}/v_escfmt", "its metadata has the key \"form\\u0061t\" written with an",
     NULL},
    {1, "eval --load {D}/v_epswap",
     "rank_00000.tck': the file says tp_rank 0, cp_rank 0, ep_rank 1, pp_rank 0, dp_rank 0, but "
     "rank 0 of its layout is at tp_rank 0, cp_rank 0, ep_rank 0",
     NULL},
    {1, "eval --load {D}/v_dpedit",
     "rank_00001.tck': the file says tp_rank 0, cp_rank 0, ep_rank 1, "
     "pp_rank 0, dp_rank 3",
     NULL},
    {1, "eval --load {D}/v_tpswap",
     "rank_00000.tck': the file says tp_rank 1, cp_rank 0, ep_rank 0, pp_rank 0, dp_rank 0, but "
     "rank 0 of its layout is at tp_rank 0",
     NULL},
    {1,
     "train " TINY " --num-experts 2 --global-batch-size 2 --train-iters 3 --run-dir {D}/v_m "
     "--load {D}/v_epswap",
     "ep_rank 1, pp_rank 0, dp_rank 0, but rank 0 of its layout is at", NULL},
    /* ---- family 8: messages that blame a flag the user did not give ---- */
    {3, "generate --load {D}/ck --tensor-model-parallel-size 3 --prompt hi",
     "the model saved in '{D}/ck' does not fit this layout: num_attention_heads 1 is not "
     "divisible by --tensor-model-parallel-size 3",
     NULL},
    {3, "generate --load {D}/ck --pipeline-model-parallel-size 3 --prompt hi",
     "the model saved in '{D}/ck' does not fit this layout: num_layers 1 is not divisible by the "
     "3 virtual pipeline stages",
     NULL},
    {1, "groups --world-size 4 --pipeline-schedule zbv",
     "--pipeline-schedule zbv needs --pipeline-model-parallel-size >= 2 (got 1)", NULL},
    {1,
     "groups --world-size 4 --pipeline-model-parallel-size 2 --pipeline-schedule zbv "
     "--virtual-pipeline-model-parallel-size 3",
     "--virtual-pipeline-model-parallel-size 3 disagrees with --pipeline-schedule zbv", NULL},
    {1, "generate --load {D}/ck --prompt-file /proc/self/status",
     "--prompt-file '/proc/self/status' holds more than 4 bytes, the most that is read (its size "
     "reads 0",
     NULL},
    {0, NULL, NULL, NULL},
};

/* {D}/NAME: a copy of the 2-rank checkpoint {D}/SRC whose rank files have `from` replaced by
 * `to` in their metadata (one pair per rank file; NULL leaves that file as it is). */
static void forged_ranks(const char *name, const char *src, const char *const from[2],
                         const char *const to[2]) {
    char cmd[9000], path[4400], err[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s/%s && cp -r %s/%s %s/%s", g_dir, name, g_dir, src, g_dir,
             name);
    if (system(cmd) != 0) fail_msg("cannot copy %s: %s", src, cmd);
    for (int k = 0; k < 2; k++) {
        if (!from[k]) continue;
        snprintf(path, sizeof path, "%s/%s/iter_0000001/rank_%05d.tck", g_dir, src, k);
        tf_reader *r = tf_reader_open(path, err, sizeof err);
        if (!r) fail_msg("%s", err);
        char meta[8192], rest[8192];
        snprintf(meta, sizeof meta, "%s", tf_reader_meta(r));
        char *at = strstr(meta, from[k]);
        if (!at) fail_msg("%s has no '%s': %s", path, from[k], meta);
        snprintf(rest, sizeof rest, "%s", at + strlen(from[k]));
        snprintf(at, sizeof meta - (size_t)(at - meta), "%s%s", to[k], rest);
        snprintf(path, sizeof path, "%s/%s/iter_0000001/rank_%05d.tck", g_dir, name, k);
        tf_writer *w = tf_writer_open(path, meta);
        for (size_t i = 0; i < tf_reader_count(r); i++) {
            const tf_tensor *t = tf_reader_tensor(r, i);
            tf_writer_add(w, t->name, t->dtype, t->ndim, t->shape, t->data);
        }
        tf_writer_commit(w);
        tf_reader_close(r);
    }
}

/* The two 2-rank checkpoints the coordinate rows forge: ep 2 over dp 2, and tp 2. */
static void save_two_rank_checkpoints(void) {
    char cmd[9000], mpirun[2048];
    const char *tr = test_trident_path();
    const char *pre = test_mpirun_prefix(mpirun, sizeof mpirun, 2, TEST_MPI_NO_SINGLE_COPY);
    snprintf(cmd, sizeof cmd,
             "%s %s train " TINY " --num-experts 2 --expert-model-parallel-size 2 "
             "--global-batch-size 2 --train-iters 1 --eval-iters 0 --run-dir %s/v_r1 --save "
             "%s/v_ep > /dev/null 2>&1 && %s %s train " TINY " --hidden-size 16 "
             "--num-attention-heads 2 --tensor-model-parallel-size 2 --train-iters 1 "
             "--eval-iters 0 --run-dir %s/v_r2 --save %s/v_tp > /dev/null 2>&1",
             pre, tr, g_dir, g_dir, pre, tr, g_dir, g_dir);
    if (system(cmd) != 0) fail_msg("cannot save the 2-rank fixture checkpoints: %s", cmd);
}

void hostile_values_setup(void) {
    forged_copy("v_ls_big", "\"loss_scale\":1,", "\"loss_scale\":1e300,", NULL, 0);
    forged_copy("v_ls_tiny", "\"loss_scale\":1,", "\"loss_scale\":1e-300,", NULL, 0);
    forged_copy("v_ls_half", "\"loss_scale\":1,", "\"loss_scale\":0.5,", NULL, 0);
    forged_copy("v_ls_str", "\"loss_scale\":1,", "\"loss_scale\":\"1\",", NULL, 0);
    forged_copy("v_huge", NULL, NULL, "param/lnf_w", 3e38f);
    forged_copy("v_hugeln", NULL, NULL, "param/blocks.0.ln1_b", 3e38f);
    forged_copy("v_denseaux", "\"numel\":", "\"moe_aux_loss_coeff\":0.01,\"numel\":", NULL, 0);
    forged_copy("v_densecap", "\"numel\":", "\"moe_expert_capacity_factor\":1,\"numel\":", NULL, 0);
    forged_copy("v_dup", "\"tp\":1,", "\"tp\":1,\"tp\":2,", NULL, 0);
    forged_copy("v_dupit", "\"numel\":", "\"iteration\":7,\"numel\":", NULL, 0);
    forged_copy("v_esc", "\"tp\":1,", "\"t\\u0070\":1,", NULL, 0);
    forged_copy("v_escfmt", "\"format\":", "\"form\\u0061t\":", NULL, 0);
    save_two_rank_checkpoints();
    /* ep 2 over dp 2: rank 0 is (dp 0, ep 0), rank 1 (dp 1, ep 1) */
    forged_ranks("v_epswap", "v_ep", (const char *const[2]){"\"ep_rank\":0", "\"ep_rank\":1"},
                 (const char *const[2]){"\"ep_rank\":1", "\"ep_rank\":0"});
    forged_ranks("v_dpedit", "v_ep", (const char *const[2]){NULL, "\"dp_rank\":1"},
                 (const char *const[2]){NULL, "\"dp_rank\":3"});
    forged_ranks("v_tpswap", "v_tp", (const char *const[2]){"\"tp_rank\":0", "\"tp_rank\":1"},
                 (const char *const[2]){"\"tp_rank\":1", "\"tp_rank\":0"});
}
