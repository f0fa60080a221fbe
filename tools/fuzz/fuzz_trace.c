/* fuzz_trace.c — libFuzzer harness for the trace file reader (src/trace/trace_read.c).
 *
 * trace_file_read must refuse a bad file with a message, or return events whose string ids
 * resolve. Each input is tried twice: as it is, and with its last 4 bytes replaced by the
 * CRC-32 of the rest (src/trace/FORMAT.md), so mutations get past the checksum.
 * Not a unit test: run it with tools/fuzz/run.sh.
 */
#include <string.h>

#include "src/core/crc32.h"
#include "src/trace/trace.h"
#include "tools/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_one(const uint8_t *data, size_t size) {
    char err[512];
    trace_file *f = trace_file_read(fuzz_write_input(data, size), err, sizeof err);
    if (!f) {
        if (!err[0]) abort();
        return;
    }
    volatile size_t sum = strlen(trace_file_path(f));
    const trace_header *h = trace_file_header(f);
    if (h->config_json) sum += strlen(h->config_json);
    for (size_t i = 0; i < trace_file_num_events(f); i++) {
        const trace_event *e = trace_file_event(f, i);
        sum += strlen(trace_file_string(f, e->op)) + strlen(trace_file_string(f, e->group));
    }
    sum += (size_t)trace_file_dropped(f);
    (void)sum;
    trace_file_free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    read_one(data, size);
    if (size < 4) return 0;
    uint8_t *fixed = malloc(size);
    memcpy(fixed, data, size);
    uint32_t crc = crc32_update(0, fixed, size - 4);
    for (int i = 0; i < 4; i++) fixed[size - 4 + i] = (uint8_t)(crc >> (8 * i));
    read_one(fixed, size);
    free(fixed);
    return 0;
}
