/* adamw_cuda.cu — one AdamW step over a flat range of parameters on the GPU, the formula of
 * src/optim/adamw.c (its CPU twin) element by element:
 *
 *   g' = g * grad_scale
 *   m  = b1 m + (1-b1) g'            v = b2 v + (1-b2) g'^2
 *   p -= lr * ( (m/c1) / (sqrt(v/c2) + eps) + wd * p ),   c1 = 1-b1^t, c2 = 1-b2^t
 *
 * The bias corrections c1, c2 are computed once on the host with powf, exactly as the CPU
 * does, and passed in; the kernel is one thread per parameter. Because parameters,
 * gradients, m and v share one layout (one arena each), the serial optimizer calls this
 * once on the whole buffer and ZeRO on its shard's offsets.
 *
 * Not here: the learning-rate schedule and the clip factor (host arithmetic, adamw.c).
 */
#include "kernels/cuda_common.cuh"

using namespace trident_cuda;

__global__ void adamw_kernel(float *p, const float *g, float *m, float *v, size_t n, float b1,
                             float b2, float eps, float c1, float c2, float lr, float wd,
                             float grad_scale) {
    for (size_t i = global_index(); i < n; i += global_stride()) {
        float gi = g[i] * grad_scale;
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float mhat = mi / c1, vhat = vi / c2;
        p[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * p[i]);
    }
}

extern "C" void cuda_adamw_update(const cuda_context *ctx, float *p, const float *g, float *m,
                                  float *v, size_t n, float beta1, float beta2, float eps, float lr,
                                  float wd, int t, float grad_scale) {
    if (n == 0) return;
    const float c1 = 1.0f - powf(beta1, (float)t), c2 = 1.0f - powf(beta2, (float)t);
    adamw_kernel<<<grid_for(n), BLOCK, 0, ctx->stream>>>(p, g, m, v, n, beta1, beta2, eps, c1, c2,
                                                         lr, wd, grad_scale);
    cudaCheckLast();
}
