/* dataset.h — where the training tokens come from: a byte file or a built-in synthetic task.
 *
 * A sample is seq_len + 1 tokens: the model reads tokens[0..T) and is scored on predicting
 * tokens[1..T] (T = seq_len). Sample i is a pure function of (seed, i): there is no loader
 * state, no shuffling buffer and no file cursor, so every rank of every parallel layout that
 * asks for sample i gets the same tokens, and a resumed run continues the same batches. The
 * trainer uses global sample index `step * global_batch + j` for the j-th sequence of a step.
 *
 * Not here: batching, sharding samples over data-parallel ranks, and anything that knows about
 * the model. Those belong to the trainer; this module only answers "what is sample i".
 *
 * Tokenizer. Byte level: token id = byte value, vocabulary 256 (dataset_vocab_size()).
 *
 * File data (path != NULL). The whole file is read into memory at open. With n the file size,
 * a held-out split (dataset_open_split, `trident train --split TRAIN,HELD`, Megatron's flag in
 * two parts) cuts it once, in file order, at
 *
 *     s = floor(n * TRAIN / (TRAIN + HELD))       training bytes [0, s), held-out bytes [s, n)
 *
 * and each part must hold at least T + 1 bytes. Training sample i is the window of T + 1
 * bytes starting at
 *
 *     start(i) = rng_below(seed, DATASET_STREAM_TRAIN, i, s - T)      (src/core/rng.h)
 *
 * so start(i) + T + 1 <= s: no training window touches a held-out byte. Evaluation
 * (dataset_eval_window) reads the held-out part in order instead: window k starts at byte
 * s + k * T and holds T + 1 bytes, windows overlap by one byte (the last target of window k is
 * the first input of window k + 1), and there are (n - s - 1) / T of them. Together their
 * targets are exactly bytes [s + 1, s + 1 + windows * T); the at most T - 1 trailing bytes
 * that do not fill a window are not evaluated. Without a split (dataset_open, HELD = 0, as
 * `trident eval --data-path` scores a whole file) s = n for training and evaluation reads the
 * whole file from byte 0, so it measures the training text.
 *
 * Synthetic data (path == NULL), the default, so `trident train` needs no download.
 * The text is a run of records over the 16-letter alphabet a..p:
 *
 *     record := key form value ';'
 *     key    := 4 letters, each letter uniform and independent
 *     form   := '=' (value is the key copied)  |  '|' (value is the key reversed), each 1/2
 *
 *     sample 0 of seed 42:  "fdie=fdie;fndn=fndn;iiji|ijii;kbpo|opbk;jjik=jjik;..."
 *
 * Every sample starts at the beginning of a record, and the text simply stops after T + 1
 * tokens (the last record is usually cut). The first half of each record is irreducible noise
 * (ln 16 nats per letter, plus ln 2 for the form); the value can only be predicted by
 * attending back to the key — copy (value letter j repeats the token 5 places back) or
 * reversal (it repeats the token 2j + 2 places back), chosen by the form — and ';' is free. Why a fixed key length: with
 * lengths 4 to 8 (this module's first version) the default model learns the record structure
 * but not the lookup in the demo's 2 minutes (held-out 2.58 after 800 serial steps at lr 1e-3,
 * floor 1.41; 2.555 after 3,000 steps at 3e-3). With one length both lookups are learned within
 * ~800 steps at lr 1e-3 (held-out 1.46, floor 1.245) and not at all at 3e-3 (2.24 after 800).
 * The draw of a length is kept (it is always 4), so the grammar can be widened again by
 * changing SYNTH_MAX_KEY in dataset.c.
 *
 * Randomness of synthetic sample i: its draws are rng_bits(s_i, DATASET_STREAM_TRAIN, k)
 * with s_i = rng_bits(seed, DATASET_STREAM_TRAIN, i) and k = 0, 1, 2, ... counting the
 * decisions in text order: for each record first the length (draw % 1, + 4), then the form
 * (draw % 2, 0 = '='), then one draw % 16 per key letter. Evaluation sample k is built the
 * same way from the held-out stream DATASET_STREAM_EVAL; there are DATASET_SYNTH_EVAL_SAMPLES.
 *
 * Loss floor (dataset_loss_floor). The cross-entropy of a perfect model — one that knows the
 * grammar and sees the whole prefix — averaged over the T target positions. The predictive
 * distribution depends only on where the prefix stands in its record:
 *
 *     after k key letters, k < 4        next is a uniform letter              H = ln 16
 *     after 4 key letters               a form, '=' or '|'                    H = ln 2
 *     inside the value, or at its ';'   fully determined                      H = 0
 *
 * dataset_loss_floor() propagates the exact distribution over these states through positions
 * 1..T (the first target follows k = 1 key letter) and averages the expected H (the code in
 * dataset.c also handles a range of key lengths). For long sequences it tends to the
 * per-record rate (4 ln 16 + ln 2) / 10 = 1.1784 nats per token; the rate depends on where T
 * cuts the last record (a cut record keeps its noise but loses its free value).
 *
 * No-copy baseline (dataset_loss_no_copy). The cross-entropy of the best model that knows the
 * grammar and where it stands in its record (so also the form) but cannot see the key's
 * letters when it predicts the value: each value letter then costs ln 16 (uniform), everything
 * else as for the floor. It is what a model reaches that learned the record structure but not
 * the lookup; training moves between this level and the floor. Per record (8 ln 16 + ln 2)/10
 * = 2.2874 nats per token for long sequences.
 *
 *     T          16      32      64      128     256     1024
 *     floor      1.300   1.278   1.245   1.175   1.186   1.183
 *     no-copy    2.339   2.318   2.285   2.301   2.291   2.287
 *
 * Compare ln 256 = 5.545 for a uniform guess over bytes.
 */
#ifndef TRIDENT_DATA_DATASET_H
#define TRIDENT_DATA_DATASET_H

#include <stddef.h>
#include <stdint.h>

/* The rng streams of src/core/rng.h that this module owns ("DATA", "EVAL" in ASCII). */
#define DATASET_STREAM_TRAIN 0x44415441ull
#define DATASET_STREAM_EVAL 0x4556414Cull
/* Number of held-out samples `trident eval` scores on the synthetic data. */
#define DATASET_SYNTH_EVAL_SAMPLES 64

typedef struct dataset dataset;

/* Opens the byte file at `path`, or the synthetic data when path is NULL, without a held-out
 * split. Dies with one line when the file cannot be read or holds fewer than seq_len + 1
 * bytes, or seq_len < 1. */
dataset *dataset_open(const char *path, int seq_len, uint64_t seed);

/* The same with the file cut into train_weight : held_out_weight (see above; held_out_weight
 * 0 = no split; ignored for synthetic data, which has its own held-out stream). Also dies when
 * a part is shorter than seq_len + 1 bytes. */
dataset *dataset_open_split(const char *path, int seq_len, uint64_t seed, int train_weight,
                            int held_out_weight);
void dataset_close(dataset *d);

/* Vocabulary size of the byte-level tokenizer: 256. */
int dataset_vocab_size(void);
int dataset_seq_len(const dataset *d);

/* Writes training sample `sample_index` into tokens[0..seq_len] (seq_len + 1 tokens). */
void dataset_sample(const dataset *d, uint64_t sample_index, int32_t *tokens);

/* Number of evaluation windows, and window k (k < that number) into tokens[0..seq_len]. */
size_t dataset_eval_windows(const dataset *d);
void dataset_eval_window(const dataset *d, size_t k, int32_t *tokens);

/* Expected loss per target token of a perfect model on the synthetic data (nats, see above);
 * NAN for file data, whose floor is unknown. */
double dataset_loss_floor(const dataset *d);

/* Expected loss per target token of the best model that cannot see the key when it predicts
 * the value (the no-copy baseline, nats, see above); NAN for file data. */
double dataset_loss_no_copy(const dataset *d);

/* One line for logs: "synthetic key/value records (seed 42, seq_len 64)" or
 * "file 'data/tiny.txt' (1115394 bytes, seq_len 64)". Owned by the dataset. */
const char *dataset_describe(const dataset *d);

#endif /* TRIDENT_DATA_DATASET_H */
