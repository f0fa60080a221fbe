/* dataset_test.c — samples as pure functions of (seed, index), file windows, the synthetic
 * grammar and its loss floor, evaluation windows, and the one-line errors for bad files. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/core/rng.h"
#include "src/data/dataset.h"
#include "tests/support/testing.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static void write_file(const char *path, const unsigned char *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

/* A file of n pseudo-random bytes (all 256 values occur) at <tmp>/<name>. */
static const char *make_random_file(const char *name, size_t n, unsigned char **bytes_out) {
    static char path[4200];
    snprintf(path, sizeof path, "%s/%s", test_tmpdir(name), name);
    unsigned char *b = malloc(n);
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char)rng_bits(7, 7, i);
    write_file(path, b, n);
    *bytes_out = b;
    return path;
}


typedef struct {
    const char *path;
    int seq_len;
} open_args;

static void open_dataset(const void *arg) {
    const open_args *a = arg;
    dataset_close(dataset_open(a->path, a->seq_len, 1));
}

/* ---- synthetic data --------------------------------------------------------------------- */

static void synthetic_samples_are_a_pure_function_of_seed_and_index(void **state) {
    (void)state;
    enum { T = 64 };
    dataset *a = dataset_open(NULL, T, 42), *b = dataset_open(NULL, T, 42),
            *c = dataset_open(NULL, T, 43);
    int32_t x[T + 1], y[T + 1];
    for (uint64_t i = 0; i < 200; i++) {
        dataset_sample(a, i, x);
        dataset_sample(b, i, y);
        assert_memory_equal(x, y, sizeof x);
        dataset_sample(a, i, y); /* again, after other calls: no hidden state */
        assert_memory_equal(x, y, sizeof x);
        dataset_sample(a, i + 1, y);
        assert_memory_not_equal(x, y, sizeof x);
        dataset_sample(c, i, y);
        assert_memory_not_equal(x, y, sizeof x);
        for (int t = 0; t <= T; t++) assert_true(x[t] >= 0 && x[t] < dataset_vocab_size());
    }
    assert_int_equal(dataset_vocab_size(), 256);
    assert_int_equal(dataset_seq_len(a), T);
    assert_string_equal(dataset_describe(a), "synthetic key/value records (seed 42, seq_len 64)");
    dataset_close(a);
    dataset_close(b);
    dataset_close(c);
}

/* Checks tokens[0..n) against the grammar of dataset.h: whole records, the last one possibly
 * cut. Counts complete records by key length and form. */
static void check_grammar(const int32_t *tok, int n, long *by_len, long *by_form) {
    int t = 0;
    while (t < n) {
        int L = 0;
        while (t + L < n && tok[t + L] >= 'a' && tok[t + L] <= 'p') L++;
        if (t + L == n) { /* cut inside the key */
            assert_true(L <= 8);
            return;
        }
        assert_in_range(L, 4, 8);
        int form = tok[t + L];
        assert_true(form == '=' || form == '|');
        for (int j = 0; j < L && t + L + 1 + j < n; j++) {
            int want = form == '=' ? tok[t + j] : tok[t + L - 1 - j];
            assert_int_equal(tok[t + L + 1 + j], want);
        }
        if (t + 2 * L + 1 >= n) return; /* cut inside the value or before ';' */
        assert_int_equal(tok[t + 2 * L + 1], ';');
        by_len[L]++;
        by_form[form == '|']++;
        t += 2 * L + 2;
    }
}

static void synthetic_records_follow_the_documented_grammar(void **state) {
    (void)state;
    enum { T = 200 };
    dataset *d = dataset_open(NULL, T, 5);
    int32_t x[T + 1];
    long by_len[9] = {0}, by_form[2] = {0}, letters[16] = {0};
    for (uint64_t i = 0; i < 2000; i++) {
        dataset_sample(d, i, x);
        assert_true(x[0] >= 'a' && x[0] <= 'p'); /* every sample starts a record */
        check_grammar(x, T + 1, by_len, by_form);
        for (int t = 0; t <= T; t++)
            if (x[t] >= 'a' && x[t] <= 'p') letters[x[t] - 'a']++;
    }
    long records = by_form[0] + by_form[1];
    assert_int_equal(by_len[4], records); /* every key has 4 letters */
    assert_in_range(by_form[0] * 1000 / records, 480, 520);
    long all = 0;
    for (int c = 0; c < 16; c++) all += letters[c];
    for (int c = 0; c < 16; c++) assert_in_range(letters[c] * 10000 / all, 575, 675);
    dataset_close(d);
}

/* The probability a perfect model gives tok[t] after tok[0..t), written from the grammar
 * independently of dataset.c: find where the prefix stands in its record. With see_key false,
 * the no-copy model: it knows where it stands but guesses each value letter uniformly. */
static double predictor_prob(const int32_t *tok, int t, bool see_key) {
    int start = 0; /* start of the record holding position t */
    for (int s = 0; s < t; s++)
        if (tok[s] == ';') start = s + 1;
    int k = 0; /* key letters before t in this record */
    while (start + k < t && tok[start + k] >= 'a' && tok[start + k] <= 'p') k++;
    if (start + k < t) { /* the form was seen: the value and ';' are determined by the key */
        int in_value = t - (start + k + 1) < k;
        return in_value && !see_key ? 1.0 / 16 : 1.0;
    }
    return k < 4 ? 1.0 / 16 : 0.5; /* a key letter, or after 4 letters the form */
}

static double oracle_prob(const int32_t *tok, int t) { return predictor_prob(tok, t, true); }

static void loss_floor_matches_a_perfect_predictor(void **state) {
    (void)state;
    enum { T = 64, N = 20000 };
    dataset *d = dataset_open(NULL, T, 11);
    int32_t x[T + 1];
    double nll = 0;
    for (uint64_t i = 0; i < N; i++) {
        dataset_sample(d, i, x);
        for (int t = 1; t <= T; t++) nll -= log(oracle_prob(x, t));
    }
    nll /= (double)N * T;
    double floor = dataset_loss_floor(d);
    print_message("loss floor at T=64: %.5f, perfect predictor on %d samples: %.5f\n", floor, N,
                  nll);
    assert_true(fabs(nll - floor) < 0.01);
    assert_true(fabs(floor - 1.245) < 0.001); /* the value quoted in dataset.h */
    dataset_close(d);

    /* Small T by hand: targets 1..3 are the 2nd..4th key letters (ln 16 each); target 4 is the
     * form (ln 2). */
    d = dataset_open(NULL, 1, 0);
    assert_true(fabs(dataset_loss_floor(d) - log(16.0)) < 1e-12);
    dataset_close(d);
    d = dataset_open(NULL, 4, 0);
    assert_true(fabs(dataset_loss_floor(d) - (3 * log(16.0) + log(2.0)) / 4) < 1e-12);
    dataset_close(d);

    /* Long sequences tend to the per-record rate (4 ln 16 + ln 2) / 10. */
    d = dataset_open(NULL, 100000, 0);
    assert_true(fabs(dataset_loss_floor(d) - (4 * log(16.0) + log(2.0)) / 10) < 1e-3);
    dataset_close(d);
}

static void no_copy_baseline_matches_a_predictor_blind_to_the_key(void **state) {
    (void)state;
    enum { T = 64, N = 20000 };
    dataset *d = dataset_open(NULL, T, 12);
    int32_t x[T + 1];
    double nll = 0;
    for (uint64_t i = 0; i < N; i++) {
        dataset_sample(d, i, x);
        for (int t = 1; t <= T; t++) nll -= log(predictor_prob(x, t, false));
    }
    nll /= (double)N * T;
    double no_copy = dataset_loss_no_copy(d);
    print_message("no-copy baseline at T=64: %.5f, blind predictor on %d samples: %.5f\n", no_copy,
                  N, nll);
    assert_true(fabs(nll - no_copy) < 0.01);
    assert_true(fabs(no_copy - 2.285) < 0.001);         /* the value quoted in dataset.h */
    assert_true(no_copy > dataset_loss_floor(d) + 1.0); /* the lookup is worth more than a nat */
    dataset_close(d);

    /* By hand: T = 6 scores 3 key letters, the form, then 2 value letters at ln 16 each. */
    d = dataset_open(NULL, 6, 0);
    assert_true(fabs(dataset_loss_no_copy(d) - (5 * log(16.0) + log(2.0)) / 6) < 1e-12);
    dataset_close(d);
    /* Long sequences: (8 ln 16 + ln 2) / 10. */
    d = dataset_open(NULL, 100000, 0);
    assert_true(fabs(dataset_loss_no_copy(d) - (8 * log(16.0) + log(2.0)) / 10) < 1e-3);
    dataset_close(d);
}

static void synthetic_eval_uses_a_held_out_stream(void **state) {
    (void)state;
    enum { T = 32 };
    dataset *d = dataset_open(NULL, T, 3);
    assert_int_equal(dataset_eval_windows(d), DATASET_SYNTH_EVAL_SAMPLES);
    int32_t e[T + 1], e2[T + 1], s[T + 1];
    long by_len[9] = {0}, by_form[2] = {0};
    for (size_t k = 0; k < dataset_eval_windows(d); k++) {
        dataset_eval_window(d, k, e);
        dataset_eval_window(d, k, e2);
        assert_memory_equal(e, e2, sizeof e);
        check_grammar(e, T + 1, by_len, by_form);
        for (uint64_t i = 0; i < 64; i++) {
            dataset_sample(d, i, s);
            assert_memory_not_equal(e, s, sizeof e);
        }
    }
    dataset_close(d);
}

/* ---- file data -------------------------------------------------------------------------- */

static void file_samples_are_windows_at_the_documented_start(void **state) {
    (void)state;
    enum { T = 16, N = 1000 };
    unsigned char *bytes;
    const char *path = make_random_file("windows", N, &bytes);
    dataset *d = dataset_open(path, T, 9);
    assert_true(isnan(dataset_loss_floor(d)));
    assert_true(isnan(dataset_loss_no_copy(d)));
    int32_t x[T + 1], y[T + 1];
    for (uint64_t i = 0; i < 2000; i++) {
        dataset_sample(d, i, x);
        uint64_t start = rng_below(9, DATASET_STREAM_TRAIN, i, N - T);
        assert_true(start + T + 1 <= N);
        for (int t = 0; t <= T; t++) assert_int_equal(x[t], bytes[start + t]);
        dataset_sample(d, i, y);
        assert_memory_equal(x, y, sizeof x);
    }
    char want[4400];
    snprintf(want, sizeof want, "file '%s' (1000 bytes, seq_len 16)", path);
    assert_string_equal(dataset_describe(d), want);
    dataset_close(d);
    free(bytes);

    /* A file just 2 bytes longer than a sample: all three starts occur, none past the end. */
    path = make_random_file("tight", T + 3, &bytes);
    d = dataset_open(path, T, 1);
    int seen[3] = {0};
    for (uint64_t i = 0; i < 300; i++) {
        dataset_sample(d, i, x);
        int start = -1;
        for (int s = 0; s < 3; s++) {
            int same = 1;
            for (int t = 0; t <= T; t++) same &= x[t] == bytes[s + t];
            if (same) start = s;
        }
        assert_true(start >= 0);
        seen[start]++;
    }
    assert_true(seen[0] && seen[1] && seen[2]);
    dataset_close(d);
    free(bytes);
}

static void eval_windows_cover_the_file_in_order(void **state) {
    (void)state;
    enum { T = 16 };
    const size_t sizes[] = {T + 1, 1000, 5 * T + 1, 5 * T + T};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t n = sizes[s];
        unsigned char *bytes;
        const char *path = make_random_file("eval", n, &bytes);
        dataset *d = dataset_open(path, T, 0);
        size_t w = dataset_eval_windows(d);
        assert_int_equal(w, (n - 1) / T);
        int32_t x[T + 1];
        for (size_t k = 0; k < w; k++) {
            dataset_eval_window(d, k, x);
            for (int t = 0; t <= T; t++) assert_int_equal(x[t], bytes[k * T + t]);
        }
        /* Targets cover bytes [1, 1 + w*T); what is left cannot fill another window. */
        assert_true(1 + w * T <= n);
        assert_true(n - (1 + w * T) < (size_t)T);
        dataset_close(d);
        free(bytes);
    }
}

/* With a split, training windows lie in [0, s) and evaluation windows in [s, n), s = the cut
 * of dataset.h: no training sample ever reads a held-out byte. */
static void a_split_keeps_training_windows_off_the_held_out_bytes(void **state) {
    (void)state;
    enum { T = 16, N = 1003 };
    unsigned char *bytes;
    const char *path = make_random_file("split", N, &bytes);
    const int weights[][2] = {{95, 5}, {9, 1}, {1, 1}, {969, 31}};
    for (size_t c = 0; c < sizeof weights / sizeof *weights; c++) {
        dataset *d = dataset_open_split(path, T, 4, weights[c][0], weights[c][1]);
        size_t s = (size_t)N * (size_t)weights[c][0] / (size_t)(weights[c][0] + weights[c][1]);
        int32_t x[T + 1];
        size_t lowest = N, highest_end = 0;
        for (uint64_t i = 0; i < 5000; i++) {
            dataset_sample(d, i, x);
            uint64_t start = rng_below(4, DATASET_STREAM_TRAIN, i, s - T);
            for (int t = 0; t <= T; t++) assert_int_equal(x[t], bytes[start + t]);
            if (start < lowest) lowest = start;
            if (start + T + 1 > highest_end) highest_end = start + T + 1;
        }
        assert_int_equal(lowest, 0);
        assert_int_equal(highest_end,
                         s); /* the training part is used up to its last byte, not past */
        size_t w = dataset_eval_windows(d);
        assert_int_equal(w, (N - s - 1) / T);
        assert_true(w >= 1);
        for (size_t k = 0; k < w; k++) {
            dataset_eval_window(d, k, x);
            assert_true(s + k * T >= s && s + k * T + T + 1 <= N); /* inside the held-out part */
            for (int t = 0; t <= T; t++) assert_int_equal(x[t], bytes[s + k * T + t]);
        }
        dataset_close(d);
    }
    /* HELD = 0 is no split: evaluation reads the whole file, as dataset_open does. */
    dataset *d = dataset_open_split(path, T, 4, 1, 0);
    assert_int_equal(dataset_eval_windows(d), (N - 1) / T);
    dataset_close(d);
    free(bytes);
}

typedef struct {
    const char *path;
    int seq_len, train, held;
} split_args;

static void open_split(const void *arg) {
    const split_args *a = arg;
    dataset_close(dataset_open_split(a->path, a->seq_len, 1, a->train, a->held));
}

static void a_split_too_small_for_a_window_dies_naming_both_parts(void **state) {
    (void)state;
    unsigned char *bytes;
    const char *path = make_random_file("smallsplit", 400, &bytes);
    free(bytes);
    char out[2048], want[4400];
    split_args tiny_held = {path, 64, 95, 5}; /* 380 training bytes, 20 held-out */
    assert_int_equal(run_in_child(open_split, &tiny_held, out, sizeof out), 1);
    snprintf(
        want, sizeof want,
        "trident: data file '%s' (400 bytes) split 95,5 gives 380 training and 20 held-out bytes, "
        "but --seq-length 64 needs at least 65 in each part\n",
        path);
    assert_string_equal(out, want);
    split_args bad = {path, 8, 0, 5};
    assert_int_equal(run_in_child(open_split, &bad, out, sizeof out), 1);
    assert_non_null(strstr(out, "split 0,5 needs a training weight of at least 1"));
}

static void missing_or_short_files_die_with_one_line(void **state) {
    (void)state;
    char out[2048];
    open_args missing = {"/nonexistent/trident/data.txt", 8};
    assert_int_equal(run_in_child(open_dataset, &missing, out, sizeof out), 1);
    assert_string_equal(out, "trident: data file '/nonexistent/trident/data.txt' cannot be opened: "
                             "No such file or directory: --data-path needs a text file of at most "
                             "4 GiB\n");

    unsigned char *bytes;
    const char *path = make_random_file("short", 10, &bytes);
    free(bytes);
    open_args too_short = {path, 16};
    assert_int_equal(run_in_child(open_dataset, &too_short, out, sizeof out), 1);
    char want[4400];
    snprintf(want, sizeof want,
             "trident: data file '%s' has 10 bytes, but --seq-length 16 needs at least 17\n", path);
    assert_string_equal(out, want);

    open_args just_enough = {path, 9}; /* 10 bytes = seq_len + 1 is enough */
    assert_int_equal(run_in_child(open_dataset, &just_enough, out, sizeof out), 0);
    assert_string_equal(out, "");

    open_args zero = {NULL, 0};
    assert_int_equal(run_in_child(open_dataset, &zero, out, sizeof out), 1);
    assert_string_equal(out, "trident: dataset: sequence length 0 must be at least 1\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(synthetic_samples_are_a_pure_function_of_seed_and_index),
        cmocka_unit_test(synthetic_records_follow_the_documented_grammar),
        cmocka_unit_test(loss_floor_matches_a_perfect_predictor),
        cmocka_unit_test(no_copy_baseline_matches_a_predictor_blind_to_the_key),
        cmocka_unit_test(synthetic_eval_uses_a_held_out_stream),
        cmocka_unit_test(file_samples_are_windows_at_the_documented_start),
        cmocka_unit_test(eval_windows_cover_the_file_in_order),
        cmocka_unit_test(a_split_keeps_training_windows_off_the_held_out_bytes),
        cmocka_unit_test(a_split_too_small_for_a_window_dies_naming_both_parts),
        cmocka_unit_test(missing_or_short_files_die_with_one_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
