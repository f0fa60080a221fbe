/* cblas.h (shim) — the one CBLAS call kernels/ops_cpu.c makes, for GPU machines without
 * OpenBLAS. tools/gpu/run_gpu_checks.sh puts this folder on the include path only when no
 * system cblas.h is found; the CPU oracle then runs on cblas_naive.c (slow, exact enough).
 * Not a BLAS: row- and column-major sgemm, nothing else.
 */
#ifndef TRIDENT_TOOLS_GPU_SHIM_CBLAS_H
#define TRIDENT_TOOLS_GPU_SHIM_CBLAS_H

enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 };

/* C (M,N) = alpha * op(A) (M,K) @ op(B) (K,N) + beta * C, as the reference CBLAS. */
void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M,
                 int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *C, int ldc);

#endif /* TRIDENT_TOOLS_GPU_SHIM_CBLAS_H */
