/* fuzz_metrics.c — libFuzzer harness for the run-metrics reader (src/trace/run_metrics.c):
 * `trident render --metrics RUN_DIR` reads RUN_DIR/metrics.jsonl and RUN_DIR/config.json,
 * files a user may hand it from anywhere.
 *
 * Input: the bytes of metrics.jsonl, written into a scratch run directory; the same bytes
 * are also given to the config.json parser (run_metrics_layout_label). The reader must refuse
 * with a message or return steps whose numbers are sorted by nothing in particular but
 * readable; the label must stay a NUL-terminated string within its buffer.
 * Not a unit test: run it with tools/fuzz/run.sh.
 */
#include <string.h>
#include <sys/stat.h>

#include "src/trace/run_metrics.h"
#include "tools/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char dir[4096], path[4200];
    if (!dir[0]) {
        const char *base = getenv("FUZZ_SCRATCH_DIR");
        snprintf(dir, sizeof dir, "%s/trident-fuzz-run-%d", base ? base : "/tmp", (int)getpid());
        mkdir(dir, 0755);
        snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    }
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) abort();
    char err[512];
    err[0] = 0;
    run_metrics *m = run_metrics_read(dir, err, sizeof err);
    if (!m) {
        if (!err[0]) abort(); /* a refusal always says why */
    } else {
        volatile double sum = 0;
        for (int i = 0; i < m->nsteps; i++) sum += m->steps[i].loss + m->steps[i].step;
        for (int i = 0; i < m->nevals; i++) sum += m->evals[i].loss;
        sum += (double)strlen(m->layout);
        (void)sum;
        run_metrics_free(m);
    }
    char *text = malloc(size + 1), label[256];
    memcpy(text, data, size);
    text[size] = 0;
    memset(label, 'x', sizeof label);
    if (run_metrics_layout_label(text, label, sizeof label) && !memchr(label, 0, sizeof label))
        abort();
    free(text);
    return 0;
}
