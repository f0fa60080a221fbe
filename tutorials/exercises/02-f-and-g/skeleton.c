/* Exercise 2 — the conjugate operators f and g of tensor parallelism (Megatron-LM, §3).
 *
 * This code replaces the region between the "exercise 2" markers of src/tp/mappings.c; that
 * file's includes are in scope, among them src/runtime/comm.h:
 *     comm_size(g), comm_rank(g)
 *     comm_all_reduce(g, buf, n, COMM_FLOAT32, COMM_SUM)   in place, n floats, every rank of g
 * and the helper `static int active(const comm_group *tp)` = "tp is a group of more than one
 * rank" (tp may be NULL: a serial run).
 *
 * The contract (src/tp/mappings.h). x and dx are n floats on this rank:
 *   f, "copy to the tensor-parallel region", sits where a whole input enters a
 *   column-parallel layer:  forward: identity;            backward: all-reduce (sum).
 *   g, "reduce from the tensor-parallel region", sits where the partial outputs of a
 *   row-parallel layer leave it:  forward: all-reduce (sum);  backward: identity.
 * They are conjugate: one's forward is the other's backward. An identity must cost nothing
 * (no message at all: the tests count the collectives), and with one rank (or tp == NULL)
 * nothing is communicated.
 */
void tp_copy_to_region_forward(comm_group *tp, float *x, size_t n) {
    (void)tp, (void)x, (void)n; /* TODO: f forward */
}

void tp_copy_to_region_backward(comm_group *tp, float *dx, size_t n) {
    (void)tp, (void)dx, (void)n; /* TODO: f backward */
}

void tp_reduce_from_region_forward(comm_group *tp, float *x, size_t n) {
    (void)tp, (void)x, (void)n; /* TODO: g forward */
}

void tp_reduce_from_region_backward(comm_group *tp, float *dx, size_t n) {
    (void)tp, (void)dx, (void)n; /* TODO: g backward */
}
