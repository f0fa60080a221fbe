/* tensorfile.h — a validated file of named tensors plus a metadata string.
 *
 * Checkpoints (model shards, optimizer moments, step, RNG and data position) are stored in this
 * container; the byte layout is specified in src/ckpt/FORMAT.md, precisely enough for another
 * program to read it. In short:
 *
 *     [ header 64 B | metadata (JSON text) | tensor data, each 64-byte aligned | table | trailer ]
 *
 * Writing streams: each tf_writer_add() appends the tensor's bytes to a temporary file next to
 * the target, and tf_writer_commit() appends the table and trailer, then renames the temporary
 * over the target (src/core/atomic_file.h). A crash or tf_writer_abort() at any point leaves
 * the previous file as it was.
 *
 *     tf_writer *w = tf_writer_open("run/ckpt/step_100.rank0.bin", "{\"step\":100}");
 *     int64_t shape[2] = {3 * C, C};
 *     tf_writer_add(w, "layers.0.qkv_w", TF_F32, 2, shape, qkvw);
 *     tf_writer_commit(w);                                   // w is freed
 *
 * Reading validates everything before returning (magic, version, every size and offset,
 * names, dtypes, each tensor's CRC-32, the file's CRC-32 and length) and keeps the whole
 * file in memory; tensors are views into it, 64-byte aligned:
 *
 *     char err[512];
 *     tf_reader *r = tf_reader_open(path, err, sizeof err);
 *     if (!r) die("%s", err);          // "checkpoint 'x.bin': truncated at byte 4096 of expected 8192"
 *     const float *qkvw = tf_reader_require(r, "layers.0.qkv_w", TF_F32, 2, shape);
 *     long long step; tf_meta_get_int(tf_reader_meta(r), "step", &step);
 *     tf_reader_close(r);
 *
 * The reader never reads outside the file and never crashes, whatever the bytes: a bad file
 * gives NULL and one message naming the file, what is wrong and, where it helps, the byte offset.
 *
 * Not here: what the tensors mean (src/ckpt's checkpoint code decides names and metadata), and
 * a JSON parser — metadata is opaque text; tf_meta_get_*() only scan flat top-level keys.
 */
#ifndef TRIDENT_CKPT_TENSORFILE_H
#define TRIDENT_CKPT_TENSORFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_MAGIC "TRIDENTT"
#define TF_VERSION 1u
#define TF_MAX_NDIM 4
#define TF_MAX_NAME 127 /* bytes, without the terminating NUL */
#define TF_ALIGN 64     /* every tensor's data starts at a multiple of this file offset */

/* Element types; the numbers are the codes stored in the file. */
typedef enum {
    TF_F32 = 1,
    TF_BF16 = 2,
    TF_F16 = 3,
    TF_I32 = 4,
    TF_I64 = 5,
    TF_U8 = 6,
} tf_dtype;

/* Bytes per element (0 for an unknown code) and the short name ("f32", "bf16"; "?" if unknown). */
size_t tf_dtype_size(tf_dtype dtype);
const char *tf_dtype_name(tf_dtype dtype);

/* ---- writing ---------------------------------------------------------------------------- */

typedef struct tf_writer tf_writer;

/* Starts a file at `path` (written as a temporary beside it until commit). meta_json is any
 * UTF-8 text, normally a JSON object; NULL means empty. Dies if the temporary cannot be made. */
tf_writer *tf_writer_open(const char *path, const char *meta_json);

/* Appends one tensor: `ndim` (0..4) dimensions in shape[0..ndim), row-major data of
 * product(shape) elements (NULL allowed when that is 0). The bytes are written at once; the
 * caller may reuse `data` on return. Names are 1..127 bytes and unique within the file.
 * A bad name, dtype or shape, or a failed write, removes the temporary and dies. */
void tf_writer_add(tf_writer *w, const char *name, tf_dtype dtype, int ndim, const int64_t *shape,
                   const void *data);

/* Writes the table and trailer, syncs, and renames over the target; frees w. Dies on failure
 * (the temporary is removed and any previous file kept). */
void tf_writer_commit(tf_writer *w);

/* Removes the temporary and frees w; any previous file at the path is untouched. */
void tf_writer_abort(tf_writer *w);

/* ---- reading ---------------------------------------------------------------------------- */

typedef struct tf_reader tf_reader;

typedef struct {
    const char *name;
    tf_dtype dtype;
    int ndim;
    int64_t shape[TF_MAX_NDIM]; /* shape[ndim..4) are 0 */
    size_t numel;               /* product of shape[0..ndim); 1 for ndim 0 */
    size_t nbytes;              /* numel * tf_dtype_size(dtype) */
    const void *data;           /* 64-byte aligned; valid until tf_reader_close() */
} tf_tensor;

/* Reads and validates the whole file. On any problem returns NULL and writes one line
 * ("checkpoint '<path>': <what is wrong>") into err[0..errlen). */
tf_reader *tf_reader_open(const char *path, char *err, size_t errlen);
void tf_reader_close(tf_reader *r);

/* The metadata text as written (NUL-terminated; "" when empty). */
const char *tf_reader_meta(const tf_reader *r);
/* Tensors in file order: i < tf_reader_count(r). */
size_t tf_reader_count(const tf_reader *r);
const tf_tensor *tf_reader_tensor(const tf_reader *r, size_t i);
/* The tensor called `name`, or NULL. */
const tf_tensor *tf_reader_find(const tf_reader *r, const char *name);
/* The data of tensor `name`, which must have this dtype and shape; otherwise dies with one line
 * ("checkpoint 'x.bin': tensor 'wte' is f32 (256, 64) but f32 (256, 128) was expected"). */
const void *tf_reader_require(const tf_reader *r, const char *name, tf_dtype dtype, int ndim,
                              const int64_t *shape);

/* ---- metadata lookups --------------------------------------------------------------------
 * For a JSON object's top-level keys only ({"step": 100, "config": {...}}): nested objects and
 * arrays are skipped, not searched. Each returns false when the text is not such an object,
 * the key is absent, or the value has the wrong type (an int must be an integral number that
 * fits in long long; a string must fit in out[0..cap) with its NUL). The scan stops at the
 * first match; the text after it is not checked (tf_meta_check checks the whole object). */
bool tf_meta_get_int(const char *json, const char *key, long long *out);
bool tf_meta_get_double(const char *json, const char *key, double *out);
bool tf_meta_get_string(const char *json, const char *key, char *out, size_t cap);
/* True when the object has top-level `key`, whatever its value (to tell "absent" from "of
 * the wrong type" after a get_* returned false). */
bool tf_meta_has(const char *json, const char *key);
/* True when the text is a JSON object whose top-level keys are each written plainly (no
 * backslash escape: "a\u0062" would read as "ab" here but not to a reader that compares the
 * raw text) and each appear once (readers disagree on which of two copies wins: these lookups
 * stop at the first, most JSON readers take the last). Otherwise false, and err holds a phrase
 * naming the key ("has the key \"tp\" twice"). Readers of metadata that means something call
 * it before any lookup (src/ckpt/checkpoint_read.c). */
bool tf_meta_check(const char *json, char *err, size_t errlen);

#endif /* TRIDENT_CKPT_TENSORFILE_H */
