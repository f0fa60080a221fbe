/* hostile_input_test.c — bad input to every subcommand gets ONE clear line and a non-zero exit.
 *
 * The table below lists each kind of bad input (train, eval, checkpoints, groups, schedule,
 * render, bench) with the words its error must contain. For single-process commands the
 * whole output must be that one line (two at most, for a trailing hint); under mpirun, where
 * Open MPI adds its own banner, the words and the exit status are checked.
 *
 * Rows marked `pending` are known gaps reported to the owners of those modules: the test
 * prints what the program does today and does not fail on them; when the owner fixes one,
 * the test says so and the mark comes off.
 *
 * Fixtures built once in the temp dir D ({D} in the table): a 5-byte data file, an empty run
 * directory, a run directory whose trace is garbage, and checkpoints damaged in every way the
 * loader must notice (truncated, wrong magic, flipped byte, `latest` garbage or pointing
 * nowhere, a tensor file that is not a checkpoint, an old version, impossible coordinates).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/ckpt/tensorfile.h"
#include "tests/support/testing.h"

/* The tiny model the checkpoint fixtures are saved with. */
#define TINY                                                                                       \
    "--num-layers 1 --hidden-size 8 --num-attention-heads 1 --seq-length 4 "                       \
    "--global-batch-size 1 --micro-batch-size 1 --no-trace --quiet"

typedef struct {
    int np;              /* 1: run directly; > 1: under mpirun */
    const char *args;    /* after `trident`; {D} is the fixture directory */
    const char *words;   /* the error must contain these */
    const char *pending; /* non-NULL: a known gap, reported; what is wrong today */
} hostile_case;

static const hostile_case k_cases[] = {
    /* ---- train: sizes and rules ---- */
    {1, "train --num-layers -2", "--num-layers -2 must be at least 1", NULL},
    {1, "train --hidden-size 0",
     "--hidden-size 0, --num-attention-heads 4 and --seq-length 64 must all be at least 1", NULL},
    {1, "train --seq-length -1", "--seq-length -1 must be at least 1", NULL},
    {1, "train --micro-batch-size 0", "--micro-batch-size 0 must be at least 1", NULL},
    {1, "train --global-batch-size 10 --micro-batch-size 4",
     "--global-batch-size 10 is not divisible by --micro-batch-size 4", NULL},
    {1, "train --num-attention-heads 3",
     "--hidden-size 64 is not divisible by --num-attention-heads 3", NULL},
    {1, "train --train-iters -5", "--train-iters -5 must not be negative", NULL},
    {1, "train --lr -1", "--lr -1 and --min-lr", NULL},
    {1, "train --threads 0", "--threads 0 must be at least 1", NULL},
    {1, "train --make-vocab-size-divisible-by 0",
     "--make-vocab-size-divisible-by 0 must be at least 1", NULL},
    {1, "train --num-layers 1e3", "--num-layers expects an integer, got '1e3'", NULL},
    {1, "train --no-such-flag 3", "unknown flag '--no-such-flag'", NULL},
    {1, "train --bf16 --fp16", "--bf16 and --fp16 exclude each other", NULL},
    {1, "train --overlap-param-gather",
     "--overlap-param-gather needs --use-distributed-optimizer", NULL},
    {1, "train --overlap-grad-reduce --fp16", "--overlap-grad-reduce does not support --fp16",
     NULL},
    {1, "train --ddp-bucket-size 0", "--ddp-bucket-size 0 must be at least 1 element", NULL},
    {1, "train --pipeline-schedule zigzag",
     "--pipeline-schedule must be one of gpipe|1f1b|interleaved|zb-h1|zbv, got 'zigzag'", NULL},
    {1, "train --device gpu", "--device must be one of cpu|cuda|cpu-guarded, got 'gpu'", NULL},
    {1, "train --rank-order dp-tp-pp",
     "--rank-order must be one of tp-dp-pp|tp-pp-dp, got 'dp-tp-pp'", NULL},
    {1, "train --tensor-model-parallel-size 2",
     "world size 1 is not divisible by --tensor-model-parallel-size 2", NULL},
    {1, "train --num-layers-per-virtual-pipeline-stage 1",
     "--num-layers-per-virtual-pipeline-stage needs --pipeline-model-parallel-size > 1", NULL},
    {1, "train --save-interval -1 --train-iters 1 --run-dir {D}/si --no-trace --quiet",
     "--save-interval -1 must not be negative", NULL},
    {2, "train --pipeline-model-parallel-size 2 --num-layers 3 --no-trace --run-dir {D}/l3",
     "--num-layers 3 is not divisible by the 2 virtual pipeline stages", NULL},
    {2,
     "train --tensor-model-parallel-size 2 --num-attention-heads 3 --hidden-size 48 --no-trace "
     "--run-dir {D}/h3",
     "--num-attention-heads 3 is not divisible by --tensor-model-parallel-size 2", NULL},
    {2,
     "train --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1 "
     "--global-batch-size 12 "
     "--micro-batch-size 4 --no-trace --run-dir {D}/il",
     "3 micro-batches per data-parallel rank is not a multiple of --pipeline-model-parallel-size 2",
     NULL},
    /* ---- train: data ---- */
    {1, "train --data-path {D}/missing.txt --run-dir {D}/r",
     "cannot open data file '{D}/missing.txt'", NULL},
    {1, "train --data-path {D} --run-dir {D}/r", "is not a regular file (a directory)", NULL},
    {1, "train --data-path {D}/short.txt --run-dir {D}/r", "data file '{D}/short.txt' has 5 bytes",
     NULL},
    {1, "train --data-path {D}/short.txt --run-dir {D}/r", "--seq-length 64 needs at least 65",
     NULL},
    /* ---- eval ---- */
    {1, "eval", "--load CHECKPOINT_DIR is required", NULL},
    {1, "eval --load {D}/nothing", "--load {D}/nothing: no checkpoint there", NULL},
    {1, "eval --eval-iters -1 --load {D}/ck", "--eval-iters -1 must not be negative", NULL},
    {1, "eval --load {D}/ck --bogus", "unknown flag '--bogus'", NULL},
    /* ---- checkpoints ---- */
    {1, "eval --load {D}/ck_trunc", "rank_00000.tck': truncated at byte", NULL},
    {1, "eval --load {D}/ck_magic", "rank_00000.tck': not a Trident tensor file", NULL},
    {1, "eval --load {D}/ck_flip", "rank_00000.tck': tensor", NULL},
    {1, "eval --load {D}/ck_latest", "does not hold an iteration number", NULL},
    {1, "eval --load {D}/ck_99", "`latest` says iteration 99, but neither", NULL},
    {1, "eval --load {D}/ck_notckpt", "its metadata does not say \"format\":\"trident-checkpoint\"",
     NULL},
    {1, "eval --load {D}/ck_v1", "checkpoint version 1, this program reads version 2", NULL},
    {1, "eval --load {D}/ck_coord", "tp_rank 3 of tp 2 is not a tensor-parallel coordinate", NULL},
    {1, "train " TINY " --num-layers 2 --train-iters 2 --run-dir {D}/m --load {D}/ck",
     "the checkpoint has num_layers = 1 but this run has 2", NULL},
    {1, "train " TINY " --seq-length 8 --train-iters 2 --run-dir {D}/m --load {D}/ck",
     "the checkpoint has seq_length = 4 but this run has 8", NULL},
    /* ---- train: optimizer hyper-parameters ---- */
    {1, "train --adam-beta1 1", "--adam-beta1 1 and --adam-beta2 0.95 must be in [0, 1)", NULL},
    {1, "train --adam-beta2 -0.5", "--adam-beta1 0.9 and --adam-beta2 -0.5 must be in [0, 1)",
     NULL},
    {1, "train --adam-beta1 nan", "--adam-beta1 expects a finite number, got 'nan'", NULL},
    {1, "train --adam-eps 0", "--adam-eps 0 must be finite and above 0", NULL},
    {1, "train --adam-eps -1e-8", "--adam-eps -1e-08 must be finite and above 0", NULL},
    {1, "train --adam-eps inf", "--adam-eps expects a finite number, got 'inf'", NULL},
    {1, "train --clip-grad -1", "--clip-grad -1 must be finite and not negative", NULL},
    {1, "train --clip-grad nan", "--clip-grad expects a finite number, got 'nan'", NULL},
    {1, "train --weight-decay -0.1", "--weight-decay -0.1 must be finite and not negative", NULL},
    {1, "train --lr-warmup-iters -3", "--lr-warmup-iters -3 must not be negative", NULL},
    {1, "train --lr 1e-5", "--min-lr 0.0001 is above --lr 1e-05", NULL},
    {1, "train --lr nan", "--lr expects a finite number, got 'nan'", NULL},
    {1, "train --lr inf", "--lr expects a finite number, got 'inf'", NULL},
    {1, "train --min-lr -1", "--lr 0.001 and --min-lr -1 must be finite and not negative", NULL},
    /* ---- train: output that cannot be written is refused before any work ---- */
    {1, "train " TINY " --train-iters 2 --run-dir {D}/s --save /proc/no/such/ck",
     "--save /proc/no/such/ck: cannot create directory '/proc/no'", NULL},
    {2,
     "train " TINY
     " --global-batch-size 2 --train-iters 2 --run-dir {D}/s2 --save {D}/short.txt/ck",
     "is not a directory", NULL},
    /* ---- train: sizes that cannot be allocated, refused before any allocation ---- */
    {1, "train --hidden-size 2000000000 --num-attention-heads 1",
     "the model needs at least 1.536e+21 bytes per rank", NULL},
    {1, "train --seq-length 2000000000", "2.048e+12 logits of one micro-batch", NULL},
    {1, "train --micro-batch-size 2000000000 --global-batch-size 2000000000",
     "3.277e+13 logits of one micro-batch", NULL},
    {1, "train --num-layers 2000000000 --num-attention-heads 1", "bytes per rank", NULL},
    {1, "train --num-layers 200 --hidden-size 64",
     "puts 200 blocks in one model chunk; a chunk holds at most 84", NULL},
    /* ---- train: special files as data ---- */
    {1, "train --data-path {D}/fifo", "is not a regular file (a FIFO)", NULL},
    {1, "train --data-path /dev/zero", "is not a regular file (a character device)", NULL},
    /* ---- groups ---- */
    {1, "groups", "--world-size is required", NULL},
    {1, "groups --world-size -4", "sizes must be at least 1, got world size -4", NULL},
    {1, "groups --world-size 8 --tensor-model-parallel-size 3",
     "world size 8 is not divisible by tensor-model-parallel-size 3", NULL},
    {1, "groups --world-size 8 --pipeline-model-parallel-size 0", "pipeline-model-parallel-size 0",
     NULL},
    {1, "groups --world-size 8 --virtual-pipeline-model-parallel-size 2",
     "needs pipeline-model-parallel-size > 1", NULL},
    {1, "groups --world-size 8 --rank-order pp-tp-dp",
     "--rank-order must be one of tp-dp-pp|tp-pp-dp", NULL},
    {1, "groups --world-size 8 --format yaml", "--format must be one of text|json, got 'yaml'",
     NULL},
    {1, "groups --world-size 8 -o {D}/g.bmp", "must end in .png, .svg, .pdf, .json or .txt", NULL},
    {1, "groups --world-size 8 --ranks-per-node 0", "--ranks-per-node 0 must be at least 1", NULL},
    {1, "groups --world-size 8 -o {D}/no/such/dir/g.png", "does not exist or is not writable",
     NULL},
    {1, "groups --world-size 100000000", "--world-size 100000000 is above 1048576 ranks", NULL},
    {1, "groups --world-size 100000 -o {D}/g.png",
     "a picture of --world-size 100000 ranks would be unreadable", NULL},
    /* ---- schedule ---- */
    {1, "schedule --pipeline-model-parallel-size 4 --num-microbatches 0",
     "--num-microbatches 0 must be at least 1", NULL},
    {1, "schedule --pipeline-model-parallel-size 0 --num-microbatches 4",
     "--pipeline-model-parallel-size 0 must be at least 1", NULL},
    {1,
     "schedule --pipeline-model-parallel-size 4 --num-microbatches 6 --pipeline-schedule "
     "interleaved",
     "m = 6 micro-batches is not a multiple of the pipeline size p = 4", NULL},
    {1, "schedule --pipeline-model-parallel-size 4 --num-microbatches 4 --pipeline-schedule zigzag",
     "--pipeline-schedule must be one of gpipe|1f1b|interleaved|zb-h1|zbv, got 'zigzag'", NULL},
    {1, "schedule --pipeline-model-parallel-size 4 --num-microbatches 4 --virtual-stages 2",
     "v = 2 model chunks per rank needs the interleaved schedule", NULL},
    {1, "schedule --pipeline-model-parallel-size 4 --num-microbatches 4 --forward-cost -1",
     "--forward-cost -1 must be positive", NULL},
    {1, "schedule --pipeline-model-parallel-size 4 --num-microbatches 4 -o {D}/s.gif",
     "the output must end in .png, .svg, .pdf, .json or .txt", NULL},
    {1,
     "schedule --pipeline-model-parallel-size 1 --num-microbatches 4 --pipeline-schedule "
     "interleaved",
     "(--pipeline-model-parallel-size > 1)", NULL},
    /* ---- render ---- */
    {1, "render {D}/missing_run -o {D}/x.png", "run directory '{D}/missing_run' does not exist",
     NULL},
    {1, "render {D}/emptyrun -o {D}/x.png", "has no trace/rank0.trace", NULL},
    {1, "render {D}/badtrace -o {D}/x.png", "trace '{D}/badtrace/trace/rank0.trace'", NULL},
    {1, "render {D}/emptyrun -o {D}/x.bmp", "the extension must be .png, .svg, .pdf, .json or .txt",
     NULL},
    {1, "render -o {D}/x.png", "no RUN_DIR given", NULL},
    {1, "render {D}/emptyrun", "-o FILE is required", NULL},
    {1, "render {D}/emptyrun -o {D}/x.png --step -5", "--step -5 is not a step", NULL},
    /* ---- bench and the program ---- */
    {1, "bench --suite nonsense",
     "--suite must be one of serial|pipeline|memory|comm|scaling|trace|device|zero|generate|overlap|all, got 'nonsense'",
     NULL},
    {1, "bench --suite device --device tpu",
     "--device must be one of cpu|cuda|cpu-guarded, got 'tpu'", NULL},
    {1, "bench --bogus", "unknown flag '--bogus'", NULL},
    {1, "frobnicate", "unknown subcommand 'frobnicate'", NULL},
};

static char g_out[1 << 16];
static char g_dir[4096];

/* s with every "{D}" replaced by the fixture directory, into out. */
static void expand(const char *s, char *out, size_t cap) {
    size_t n = 0;
    while (*s && n + 1 < cap) {
        if (strncmp(s, "{D}", 3) == 0) {
            n += (size_t)snprintf(out + n, cap - n, "%s", g_dir);
            s += 3;
        } else {
            out[n++] = *s++;
        }
    }
    out[n < cap ? n : cap - 1] = 0;
}

static void sh(const char *fmt, const char *a) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, fmt, a, a, a, a, a, a);
    if (system(cmd) != 0) fail_msg("fixture command failed: %s", cmd);
}

/* A checkpoint directory DIR holding iteration 1 as one tensor file with metadata `meta`. */
static void forged_checkpoint(const char *name, const char *meta) {
    char path[4400];
    snprintf(path, sizeof path, "mkdir -p %s/%s/iter_0000001 && echo 1 > %s/%s/latest", g_dir, name,
             g_dir, name);
    if (system(path) != 0) fail_msg("cannot make %s", path);
    snprintf(path, sizeof path, "%s/%s/iter_0000001/rank_00000.tck", g_dir, name);
    tf_writer *w = tf_writer_open(path, meta);
    int64_t two = 2;
    float x[2] = {1.0f, 2.0f};
    tf_writer_add(w, "param/wte", TF_F32, 1, &two, x);
    tf_writer_commit(w);
}

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "%s", test_tmpdir("hostile"));
    char cmd[8192];
    sh("printf 'short' > %s/short.txt && mkfifo %s/fifo && mkdir -p %s/emptyrun %s/badtrace/trace "
       "&& "
       "printf 'TRDTRACE-not-a-trace' > %s/badtrace/trace/rank0.trace",
       g_dir);
    snprintf(cmd, sizeof cmd,
             "%s train " TINY " --train-iters 1 --run-dir %s/r0 --save %s/ck > /dev/null 2>&1",
             test_trident_path(), g_dir, g_dir);
    if (system(cmd) != 0) fail_msg("cannot make the fixture checkpoint: %s", cmd);
    const char *rank0 = "iter_0000001/rank_00000.tck";
    snprintf(cmd, sizeof cmd,
             "cd %s && for v in trunc magic flip latest 99; do cp -r ck ck_$v; done && "
             "truncate -s 1000 ck_trunc/%s && printf 'X' | dd of=ck_magic/%s bs=1 seek=0 "
             "conv=notrunc status=none && "
             "printf '\\x55' | dd of=ck_flip/%s bs=1 seek=700 conv=notrunc status=none && "
             "echo 'twelve' > ck_latest/latest && echo 99 > ck_99/latest",
             g_dir, rank0, rank0, rank0);
    if (system(cmd) != 0) fail_msg("fixture command failed: %s", cmd);
    forged_checkpoint("ck_notckpt", "{\"step\":3}");
    forged_checkpoint("ck_v1", "{\"format\":\"trident-checkpoint\",\"version\":1}");
    forged_checkpoint(
        "ck_coord",
        "{\"format\":\"trident-checkpoint\",\"version\":2,\"precision\":\"fp32\",\"iteration\":1,"
        "\"world_size\":1,\"tp\":2,\"tp_rank\":3,\"padded_vocab\":256,\"adam_step\":1,\"rank\":0,"
        "\"num_layers\":1,\"hidden_size\":8,\"num_attention_heads\":1,\"seq_length\":4,"
        "\"make_vocab_size_divisible_by\":128,\"seed\":1}");
    return 0;
}

static void every_kind_of_bad_input_gets_one_clear_line(void **state) {
    (void)state;
    const size_t n = sizeof k_cases / sizeof k_cases[0];
    int failures = 0, pending = 0;
    for (size_t i = 0; i < n; i++) {
        const hostile_case *c = &k_cases[i];
        char args[4096], words[4096], cmd[8192], mpirun[2048];
        expand(c->args, args, sizeof args);
        expand(c->words, words, sizeof words);
        if (c->np == 1) snprintf(cmd, sizeof cmd, "%s %s", test_trident_path(), args);
        else /* no single copy: the progress-thread path, as the other fault tests */
            snprintf(cmd, sizeof cmd, "%s %s %s",
                     test_mpirun_prefix(mpirun, sizeof mpirun, c->np, TEST_MPI_NO_SINGLE_COPY),
                     test_trident_path(), args);
        int rc = run_capture(cmd, g_out, sizeof g_out);
        int lines = 0;
        for (const char *p = g_out; *p; p++) lines += *p == '\n';
        const char *why = NULL;
        if (rc == 0) why = "exit status 0";
        else if (!strstr(g_out, words)) why = "the message lacks the expected words";
        else if (c->np == 1 && lines > 2) why = "more than one line";
        char first[512];
        snprintf(first, sizeof first, "%.*s", (int)strcspn(g_out, "\n"), g_out);
        if (c->pending) {
            pending++;
            printf("  %-7s %s\n          today: %s (%s)\n", why ? "PENDING" : "FIXED?", args,
                   c->pending, why ? why : "now passes: remove the pending mark");
            continue;
        }
        if (why) {
            failures++;
            fprintf(stderr,
                    "  FAIL    trident %s\n          %s; expected '%s'; got (exit %d):\n%s\n", args,
                    why, words, rc, g_out);
        } else {
            printf("  ok      %-60.60s -> %s\n", args, first);
        }
    }
    printf("  %zu kinds of bad input, %d pending (reported), %d failing\n", n, pending, failures);
    assert_true(n - (size_t)pending >= 30);
    if (failures)
        fail_msg("%d kinds of bad input were not refused with their one clear line", failures);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(every_kind_of_bad_input_gets_one_clear_line, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
