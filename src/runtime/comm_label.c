/* comm_label.c — the thread-local current message label (see comm_label.h). */
#include "src/runtime/comm_label.h"

#include <stddef.h>

static _Thread_local const char *g_label = NULL;
static _Thread_local int g_layer = -1;

void comm_label_set(const char *label, int layer) {
    g_label = label;
    g_layer = layer;
}

void comm_label_clear(void) {
    g_label = NULL;
    g_layer = -1;
}

const char *comm_label(void) { return g_label; }
int comm_label_layer(void) { return g_layer; }
