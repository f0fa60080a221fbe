/* fuzz_dataset.c — libFuzzer harness for the dataset's file loader (src/data/dataset.c).
 *
 * Input: byte 0 picks seq_len (1..64), byte 1 the seed; the rest is the data file. Opening
 * may refuse (too short: die(), caught here); otherwise every sample and evaluation window
 * must stay inside the file and hold tokens 0..255. Not a unit test: run it with run.sh.
 */
#include <string.h>

#include "src/data/dataset.h"
#include "tools/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    const int T = 1 + data[0] % 64;
    const uint64_t seed = data[1];
    const char *path = fuzz_write_input(data + 2, size - 2);
    static dataset *d;
    d = NULL;
    if (setjmp(fuzz_die_jump) == 0) {
        fuzz_catch_die();
        d = dataset_open(path, T, seed);
    } else {
        /* refused by die(): the data was too short. A real refusal, only for short files. */
        if (size - 2 >= (size_t)T + 1) abort();
        return 0;
    }
    int32_t tokens[65];
    for (uint64_t i = 0; i < 16; i++) {
        dataset_sample(d, i * 7919u, tokens);
        for (int k = 0; k <= T; k++)
            if (tokens[k] < 0 || tokens[k] > 255) abort();
    }
    size_t nw = dataset_eval_windows(d);
    for (size_t k = 0; k < nw && k < 64; k++) dataset_eval_window(d, k, tokens);
    (void)strlen(dataset_describe(d));
    dataset_close(d);
    return 0;
}
