/* comm_label.h — what the next message is for: a label and a layer, attached to trace events.
 *
 * A student who opens a timeline wants to count the collectives of tensor parallelism: two
 * all-reduces per layer forward (g after attention, g after the MLP), two backward (f's),
 * one for the embedding, three for the loss. The communication layer cannot know any of
 * that — it sees a group and a buffer. So the caller says it, just before the call:
 *
 *   comm_label_set("g fwd attn", layer);      // layer = global transformer layer, -1 n/a
 *   tp_row_linear_forward(tp, ...);           // its all-reduce is reported with the label
 *   comm_label_clear();
 *
 * comm.c reads the current label when it reports a message (comm_event.label/.layer).
 * The label is per thread (thread-local), so a helper thread never inherits it, and it is a
 * string the caller keeps alive (a literal). Labels never contain the layer number: the
 * trace file interns at most TRACE_MAX_STRINGS names, and the layer has a field of its own.
 *
 * Labels in use (keep the set small): TP "g fwd attn" "f bwd attn" "g fwd mlp" "f bwd mlp"
 * "g fwd embed" "f bwd head" "loss max" "loss sum"; sequence parallelism (src/tp/mappings.h:
 * g all-gathers forward and reduce-scatters backward, ḡ the other way round; the event's op
 * says which) "sp g fwd attn" "sp gbar fwd attn" "sp g bwd attn" "sp gbar bwd attn" (and mlp),
 * "sp gbar fwd embed" "sp gbar bwd embed" "sp g fwd head" "sp g bwd head" ("sp g bwd ..."
 * also labels the all-gather of the layer's input again for its weight gradient), optimizer
 * "sp grads" (the LayerNorms' gradients summed over TP); pipeline "act fwd" "grad bwd";
 * optimizer "grads" "params" "grad norm" "tied embed" "overflow"; trainer "loss" "peak mem"
 * "eval loss".
 *
 * Not here: sending anything (comm.h), storing labels (src/trace).
 */
#ifndef TRIDENT_RUNTIME_COMM_LABEL_H
#define TRIDENT_RUNTIME_COMM_LABEL_H

/* Labels this thread's next messages; label is not copied (pass a literal). */
void comm_label_set(const char *label, int layer);
/* Back to "no label" (NULL, layer -1). */
void comm_label_clear(void);
/* The current label (NULL when none) and layer (-1 when none). */
const char *comm_label(void);
int comm_label_layer(void);

#endif /* TRIDENT_RUNTIME_COMM_LABEL_H */
