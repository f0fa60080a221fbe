/* dataset.c — byte files and the synthetic key/value records; see dataset.h for the contract.
 *
 * Not here: any state that advances. Every function below is a pure function of the dataset's
 * (file bytes or seed) and its arguments.
 */
#include "src/data/dataset.h"

#include <errno.h>
#include <unistd.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/core/check.h"
#include "src/core/file_read.h"
#include "src/core/rng.h"

#define SYNTH_LETTERS 16 /* alphabet a..p */
#define SYNTH_MIN_KEY 4  /* key lengths are uniform in [SYNTH_MIN_KEY, SYNTH_MAX_KEY] */
#define SYNTH_MAX_KEY 4
#define SYNTH_KEY_LENGTHS (SYNTH_MAX_KEY - SYNTH_MIN_KEY + 1)

struct dataset {
    int T; /* seq_len: a sample is T + 1 tokens */
    uint64_t seed;
    unsigned char *bytes; /* (n,) the file, or NULL for synthetic data */
    size_t n;
    size_t n_train;   /* training reads bytes [0, n_train); evaluation [held_from, n) */
    size_t held_from; /* n_train with a held-out split, 0 without (evaluation reads it all) */
    char describe[512];
};

int dataset_vocab_size(void) { return 256; }

int dataset_seq_len(const dataset *d) { return d->T; }

/* The largest data file read into memory (bytes). */
#define DATA_MAX_BYTES (4ull << 30)

/* Reads the whole file; dies with one line naming it on any failure. Only a regular file of
 * at most DATA_MAX_BYTES is read (src/core/file_read.h: a FIFO or a device can neither block
 * the open nor make the read endless). */
static unsigned char *read_file(const char *path, size_t *n_out) {
    char err[256];
    unsigned char *buf = file_read_bounded(path, DATA_MAX_BYTES, n_out, NULL, err, sizeof err);
    if (!buf) die("data file '%s' %s: --data-path needs a text file of at most 4 GiB", path, err);
    return buf;
}

dataset *dataset_open(const char *path, int seq_len, uint64_t seed) {
    return dataset_open_split(path, seq_len, seed, 1, 0);
}

/* The file's bytes and where its training part ends, checked against seq_len; dies (freeing
 * what it read first, so that nothing is left behind) when a part is too short. */
static unsigned char *read_split(const char *path, int seq_len, int train_weight,
                                 int held_out_weight, size_t *n, size_t *n_train) {
    unsigned char *bytes = read_file(path, n);
    const size_t need = (size_t)seq_len + 1, have = *n;
    if (have < need) {
        free(bytes);
        die("data file '%s' has %zu bytes, but --seq-length %d needs at least %zu", path, have,
            seq_len, need);
    }
    *n_train = have;
    if (held_out_weight == 0) return bytes;
    uint64_t total = (uint64_t)train_weight + (uint64_t)held_out_weight;
    /* floor(n * TRAIN / total) without overflow: n = q * total + r. */
    uint64_t q = (uint64_t)have / total, r = (uint64_t)have % total;
    const size_t tr = (size_t)(q * (uint64_t)train_weight + r * (uint64_t)train_weight / total);
    if (tr < need || have - tr < need) {
        free(bytes);
        die("data file '%s' (%zu bytes) split %d,%d gives %zu training and %zu held-out "
            "bytes, but --seq-length %d needs at least %zu in each part",
            path, have, train_weight, held_out_weight, tr, have - tr, seq_len, need);
    }
    *n_train = tr;
    return bytes;
}

dataset *dataset_open_split(const char *path, int seq_len, uint64_t seed, int train_weight,
                            int held_out_weight) {
    if (seq_len < 1) die("dataset: sequence length %d must be at least 1", seq_len);
    if (train_weight < 1 || held_out_weight < 0)
        die("dataset: split %d,%d needs a training weight of at least 1 and a held-out weight of "
            "at least 0",
            train_weight, held_out_weight);
    size_t n = 0, n_train = 0;
    unsigned char *bytes = path ? read_split(path, seq_len, train_weight, held_out_weight, &n,
                                             &n_train)
                                : NULL;
    dataset *d = callocCheck(1, sizeof *d);
    d->T = seq_len;
    d->seed = seed;
    d->bytes = bytes;
    d->n = n;
    d->n_train = n_train;
    if (path && held_out_weight > 0) {
        d->held_from = n_train;
        snprintf(d->describe, sizeof d->describe,
                 "file '%s' (%zu bytes: %zu training, %zu held-out; seq_len %d)", path, n, n_train,
                 n - n_train, seq_len);
    } else if (path) {
        snprintf(d->describe, sizeof d->describe, "file '%s' (%zu bytes, seq_len %d)", path, n,
                 seq_len);
    } else {
        snprintf(d->describe, sizeof d->describe,
                 "synthetic key/value records (seed %llu, seq_len %d)", (unsigned long long)seed,
                 seq_len);
    }
    return d;
}

void dataset_close(dataset *d) {
    if (!d) return;
    free(d->bytes);
    free(d);
}

const char *dataset_describe(const dataset *d) { return d->describe; }

/* ---- synthetic records ------------------------------------------------------------------ */

/* Fills tokens[0..len) with records drawn from rng_bits(s, stream, k), k = 0, 1, ...
 * One record is written into a small buffer, then copied until the sample is full. */
static void synth_fill(uint64_t s, uint64_t stream, int32_t *tokens, size_t len) {
    uint64_t k = 0; /* the draw counter */
    size_t t = 0;
    while (t < len) {
        char rec[2 * SYNTH_MAX_KEY + 2];
        int L = SYNTH_MIN_KEY + (int)(rng_bits(s, stream, k++) % SYNTH_KEY_LENGTHS);
        int reversed = (int)(rng_bits(s, stream, k++) % 2);
        for (int j = 0; j < L; j++) rec[j] = (char)('a' + rng_bits(s, stream, k++) % SYNTH_LETTERS);
        rec[L] = reversed ? '|' : '=';
        for (int j = 0; j < L; j++) rec[L + 1 + j] = reversed ? rec[L - 1 - j] : rec[j];
        rec[2 * L + 1] = ';';
        for (int j = 0; j < 2 * L + 2 && t < len; j++) tokens[t++] = (unsigned char)rec[j];
    }
}

void dataset_sample(const dataset *d, uint64_t sample_index, int32_t *tokens) {
    size_t len = (size_t)d->T + 1;
    if (d->bytes) {
        size_t start = (size_t)rng_below(d->seed, DATASET_STREAM_TRAIN, sample_index,
                                         (uint64_t)(d->n_train - (size_t)d->T));
        for (size_t t = 0; t < len; t++) tokens[t] = d->bytes[start + t];
    } else {
        uint64_t s = rng_bits(d->seed, DATASET_STREAM_TRAIN, sample_index);
        synth_fill(s, DATASET_STREAM_TRAIN, tokens, len);
    }
}

size_t dataset_eval_windows(const dataset *d) {
    if (!d->bytes) return DATASET_SYNTH_EVAL_SAMPLES;
    return (d->n - d->held_from - 1) / (size_t)d->T;
}

void dataset_eval_window(const dataset *d, size_t k, int32_t *tokens) {
    CHECK(k < dataset_eval_windows(d), "eval window index past dataset_eval_windows()");
    size_t len = (size_t)d->T + 1;
    if (d->bytes) {
        const unsigned char *w = d->bytes + d->held_from + k * (size_t)d->T;
        for (size_t t = 0; t < len; t++) tokens[t] = w[t];
    } else {
        uint64_t s = rng_bits(d->seed, DATASET_STREAM_EVAL, (uint64_t)k);
        synth_fill(s, DATASET_STREAM_EVAL, tokens, len);
    }
}

/* ---- the loss floor ---------------------------------------------------------------------
 *
 * The state before a token is where the text stands in its record. Only the key states K(k)
 * (k key letters seen, the form not yet) carry uncertainty. Once the form is seen, the rest of
 * the record — L value letters and ';' — is determined, so those states are tracked only by
 * how many determined tokens remain before the next record starts:
 *
 *   prob_key[k]   P(state K(k)),                              k = 0..SYNTH_MAX_KEY
 *   prob_free[r]  P(r determined tokens come next),           r = 1..SYNTH_MAX_KEY + 1
 *
 *   K(k) --letter--> K(k+1)      K(k) --form--> free(k+1)      free(r) --> free(r-1)
 *   free(1) --';'--> K(0)
 */

/* Entropy (nats) of the next token after k key letters. */
static double key_entropy(int k) {
    if (k < SYNTH_MIN_KEY) return log((double)SYNTH_LETTERS);
    if (k == SYNTH_MAX_KEY) return log(2.0);
    double p = 1.0 / (double)(SYNTH_MAX_KEY + 1 - k); /* P(the key ends here) */
    return -p * log(p / 2.0) - (1.0 - p) * log((1.0 - p) / SYNTH_LETTERS);
}

/* Averages, over targets 1..T, the expected entropy of the next token under the state
 * distribution; h_value is the entropy of a value letter (0 for the perfect model, ln 16
 * for the no-copy model), the form and ';' cost nothing in either. */
static double synth_expected_loss(int T, double h_value) {
    double prob_key[SYNTH_MAX_KEY + 1] = {0};
    double prob_free[SYNTH_MAX_KEY + 2] = {0};
    prob_key[1] = 1.0; /* tokens[0] is a key's first letter: the state before target 1 is K(1) */
    double total = 0.0;
    for (int t = 1; t <= T; t++) {
        double h = 0.0;
        for (int k = 0; k <= SYNTH_MAX_KEY; k++) h += prob_key[k] * key_entropy(k);
        for (int r = 2; r <= SYNTH_MAX_KEY + 1; r++) h += prob_free[r] * h_value;
        total += h;
        /* Advance one token. */
        double nk[SYNTH_MAX_KEY + 1] = {0};
        double nf[SYNTH_MAX_KEY + 2] = {0};
        for (int k = 0; k <= SYNTH_MAX_KEY; k++) {
            double p_end = k < SYNTH_MIN_KEY ? 0.0 : 1.0 / (double)(SYNTH_MAX_KEY + 1 - k);
            if (k < SYNTH_MAX_KEY) nk[k + 1] += prob_key[k] * (1.0 - p_end);
            nf[k + 1] += prob_key[k] * p_end; /* after the form: k letters and ';' remain */
        }
        nk[0] += prob_free[1]; /* the ';' was the record's last token */
        for (int r = 2; r <= SYNTH_MAX_KEY + 1; r++) nf[r - 1] += prob_free[r];
        memcpy(prob_key, nk, sizeof nk);
        memcpy(prob_free, nf, sizeof nf);
    }
    return total / T;
}

double dataset_loss_floor(const dataset *d) {
    return d->bytes ? NAN : synth_expected_loss(d->T, 0.0);
}

double dataset_loss_no_copy(const dataset *d) {
    return d->bytes ? NAN : synth_expected_loss(d->T, log((double)SYNTH_LETTERS));
}
