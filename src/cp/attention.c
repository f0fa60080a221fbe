/* attention.c — local attention or the ring, as a block calls it. See attention.h. */
#include "src/cp/attention.h"

#include "src/cp/ring_attention.h"
#include "src/device/device.h"
#include "src/runtime/comm_label.h"

size_t cp_attention_kept_floats(size_t B, size_t T, size_t NH, int cp_size) {
    return cp_size > 1 ? B * NH * T : B * NH * T * T;
}

void cp_attention_forward(const cp_attention *a, float *out, float *kept, const float *qkv) {
    if (!a->cp) {
        dev_attention_forward(out, kept, qkv, a->B, a->T, a->NH, a->HS);
        return;
    }
    comm_label_set("cp ring fwd attn", a->layer); /* K/V go around the cp group */
    ring_attention_forward(a->cp, out, kept, qkv, a->B, a->T, a->NH, a->HS);
    comm_label_clear();
}

void cp_attention_backward(const cp_attention *a, float *dqkv, const float *dout, const float *qkv,
                           const float *out, const float *kept, float *scratch) {
    if (!a->cp) {
        dev_attention_backward(dqkv, dout, qkv, kept, scratch, a->B, a->T, a->NH, a->HS);
        return;
    }
    comm_label_set("cp ring bwd attn", a->layer); /* K/V around again, dK/dV home */
    ring_attention_backward(a->cp, dqkv, dout, qkv, out, kept, a->B, a->T, a->NH, a->HS);
    comm_label_clear();
}
