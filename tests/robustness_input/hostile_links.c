/* hostile_links.c — round 3 of the hostile-input table (issue 31), family 1: checkpoint and run
 * directories holding symbolic links Trident did not make (see hostile.h).
 *
 * Each fixture is a copy of the fixture checkpoint {D}/ck (iteration 1) or a run directory with
 * one link in a place Trident removes, renames or overwrites: iter_N, iter_N.tmp, iter_N.old,
 * `.lock`, `latest`, a rank file, metrics.jsonl, config.json, trace/, a picture. The links point
 * at the victims {D}/lk_victim/ (a directory of files) and {D}/lk_victim.txt, at a FIFO (what
 * /dev/null would be, kept inside {D}), at another link, or nowhere. Every row must be refused
 * with the link named (src/core/nofollow.h), and the runner's listing (files, links and what
 * they point to) proves the victims untouched. The last rows read through links: nothing to
 * refuse there, and where a link leads nowhere the reader says what is missing.
 */
#include "tests/robustness_input/hostile.h"

/* The fixture checkpoint's model: re-saving iteration 1 of it is one step. */
#define LK_TINY                                                                                    \
    "--num-layers 1 --hidden-size 8 --num-attention-heads 1 --seq-length 4 "                       \
    "--micro-batch-size 1 --eval-iters 0 --quiet"
#define LK_TRAIN "train " LK_TINY " --global-batch-size 1 --no-trace --train-iters 1 "
#define LK_TRAIN2 "train " LK_TINY " --global-batch-size 2 --no-trace --train-iters 1 "
#define LK_REFUSED "' is a symbolic link"
/* Each row its own checkpoint and run directory, so no row's outputs (its `.lock` "pid N"
 * included) replace another's. */
#define LK_SAVE(name) "--run-dir {D}/" name ".run --save {D}/" name

const hostile_case hostile_links_cases[] = {
    /* ---- a re-save of iteration 1 through a link: it would empty the link's target ---- */
    {1, LK_TRAIN LK_SAVE("lk_iter"), "'{D}/lk_iter/iter_0000001" LK_REFUSED, NULL},
    {1, LK_TRAIN LK_SAVE("lk_tmp"),
     "'{D}/lk_tmp/iter_0000001.tmp" LK_REFUSED " (to '{D}/lk_victim')", NULL},
    {1, LK_TRAIN LK_SAVE("lk_old"), "'{D}/lk_old/iter_0000001.old" LK_REFUSED, NULL},
    {1, LK_TRAIN LK_SAVE("lk_chain"), "'{D}/lk_chain/iter_0000001" LK_REFUSED " (to '{D}/lk_hop')",
     NULL},
    {1, LK_TRAIN LK_SAVE("lk_dtmp"),
     "'{D}/lk_dtmp/iter_0000001.tmp" LK_REFUSED " (to '{D}/lk_nowhere')", NULL},
    {1, LK_TRAIN LK_SAVE("lk_rank"), "'{D}/lk_rank/iter_0000001/rank_00000.tck" LK_REFUSED, NULL},
    {1, LK_TRAIN LK_SAVE("lk_oldrank"),
     "'{D}/lk_oldrank/iter_0000001.old/rank_00000.tck" LK_REFUSED, NULL},
    /* ---- the lock and `latest`: truncated and rewritten through the link ---- */
    {1, LK_TRAIN LK_SAVE("lk_lockf"), "'{D}/lk_lockf/.lock" LK_REFUSED " (to '{D}/lk_victim.txt')",
     NULL},
    {1, LK_TRAIN LK_SAVE("lk_lockd"), "'{D}/lk_lockd/.lock" LK_REFUSED, NULL},
    {1, LK_TRAIN LK_SAVE("lk_dlock"), "'{D}/lk_dlock/.lock" LK_REFUSED " (to '{D}/lk_nowhere')",
     NULL},
    {1, LK_TRAIN LK_SAVE("lk_fifo"), "'{D}/lk_fifo/.lock" LK_REFUSED " (to '{D}/lk_victim.fifo')",
     NULL},
    {1, LK_TRAIN LK_SAVE("lk_latest"),
     "'{D}/lk_latest/latest" LK_REFUSED " (to '{D}/lk_victim.txt')", NULL},
    {1, LK_TRAIN LK_SAVE("lk_null"), "'{D}/lk_null/latest" LK_REFUSED " (to '{D}/lk_victim.fifo')",
     NULL},
    /* ---- later saves: --save-interval, a resumed run ---- */
    {1,
     "train " LK_TINY
     " --global-batch-size 1 --no-trace --train-iters 2 --save-interval 1 " LK_SAVE("lk_si"),
     "'{D}/lk_si/iter_0000002" LK_REFUSED, NULL},
    {1,
     "train " LK_TINY
     " --global-batch-size 1 --no-trace --train-iters 2 --load {D}/lk_res " LK_SAVE("lk_res"),
     "'{D}/lk_res/iter_0000002.tmp" LK_REFUSED, NULL},
    /* ---- two ranks: rank 0 refuses, the job ends ---- */
    {2, LK_TRAIN2 LK_SAVE("lk_iter2"), "'{D}/lk_iter2/iter_0000001" LK_REFUSED, NULL},
    {2, LK_TRAIN2 LK_SAVE("lk_tmp2"), "'{D}/lk_tmp2/iter_0000001.tmp" LK_REFUSED, NULL},
    {2, LK_TRAIN2 LK_SAVE("lk_lockf2"), "'{D}/lk_lockf2/.lock" LK_REFUSED, NULL},
    /* ---- a run directory's files: replaced through the link ---- */
    {1, LK_TRAIN "--run-dir {D}/lk_metrics", "'{D}/lk_metrics/metrics.jsonl" LK_REFUSED, NULL},
    {1, LK_TRAIN "--run-dir {D}/lk_config", "'{D}/lk_config/config.json" LK_REFUSED, NULL},
    {1, "train " LK_TINY " --global-batch-size 1 --train-iters 1 --run-dir {D}/lk_trace",
     "'{D}/lk_trace/trace" LK_REFUSED " (to '{D}/lk_victim')", NULL},
    {2, LK_TRAIN2 "--run-dir {D}/lk_png", "'{D}/lk_png/loss.png" LK_REFUSED, NULL},
    /* ---- reading through links loses nothing; where they lead nowhere, the reader says so ---- */
    {1, "eval --load {D}/lk_dlatest", "--load {D}/lk_dlatest: no checkpoint there", NULL},
    {1, "eval --load {D}/lk_flatest", "'{D}/lk_flatest/latest' is not a regular file (a FIFO)",
     NULL},
    {1, "eval --load {D}/lk_diter", "`latest` says iteration 1, but neither", NULL},
    {0, NULL, NULL, NULL},
};

/* The victims, and a copy of {D}/ck per checkpoint row with its one link (relative links where
 * a checkpoint directory is copied as a whole would break; these are absolute, into {D}). */
void hostile_links_setup(void) {
    sh("cd %s && mkdir -p lk_victim && echo precious > lk_victim/thesis.txt && cp "
       "ck/iter_0000001/rank_00000.tck lk_victim/ && echo precious > lk_victim.txt && mkfifo "
       "lk_victim.fifo && ln -s %s/lk_victim lk_hop",
       g_dir);
    sh("cd %s && for v in iter tmp old chain dtmp rank oldrank lockf lockd dlock fifo latest null "
       "res dlatest flatest diter; do cp -r ck lk_$v && rm -f lk_$v/.lock; done && mkdir -p lk_si "
       "lk_metrics lk_config lk_trace lk_png lk_oldrank/iter_0000001.old",
       g_dir);
    sh("cd %s && mv lk_iter/iter_0000001 lk_iter/real && ln -s %s/lk_victim lk_iter/iter_0000001 "
       "&& ln -s %s/lk_victim lk_tmp/iter_0000001.tmp && ln -s %s/lk_victim "
       "lk_old/iter_0000001.old && rm -r lk_chain/iter_0000001 && ln -s %s/lk_hop "
       "lk_chain/iter_0000001 && ln -s %s/lk_nowhere lk_dtmp/iter_0000001.tmp",
       g_dir);
    sh("cd %s && rm lk_rank/iter_0000001/rank_00000.tck && ln -s %s/lk_victim/rank_00000.tck "
       "lk_rank/iter_0000001/rank_00000.tck && ln -s %s/lk_victim.txt "
       "lk_oldrank/iter_0000001.old/rank_00000.tck",
       g_dir);
    sh("cd %s && ln -s "
       "%s/lk_victim.txt lk_lockf/.lock && ln -s %s/lk_victim lk_lockd/.lock && ln -s "
       "%s/lk_nowhere lk_dlock/.lock && ln -s %s/lk_victim.fifo lk_fifo/.lock",
       g_dir);
    sh("cd %s && rm lk_latest/latest lk_null/latest lk_dlatest/latest lk_flatest/latest && ln -s "
       "%s/lk_victim.txt lk_latest/latest && ln -s %s/lk_victim.fifo lk_null/latest && ln -s "
       "%s/lk_nowhere lk_dlatest/latest && ln -s %s/lk_victim.fifo lk_flatest/latest",
       g_dir);
    sh("cd %s && ln -s %s/lk_victim lk_res/iter_0000002.tmp && ln -s %s/lk_victim "
       "lk_si/iter_0000002 && rm -r lk_diter/iter_0000001 && ln -s %s/lk_nowhere "
       "lk_diter/iter_0000001",
       g_dir);
    sh("cd %s && ln -s %s/lk_victim.txt lk_metrics/metrics.jsonl && ln -s %s/lk_victim.txt "
       "lk_config/config.json && ln -s %s/lk_victim lk_trace/trace && ln -s %s/lk_victim.txt "
       "lk_png/loss.png",
       g_dir);
    /* the two-rank rows' own copies, links included (cp -r copies a link as a link) */
    sh("cd %s && for v in iter tmp lockf; do cp -r lk_$v lk_${v}2; done", g_dir);
}
