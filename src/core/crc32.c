/* crc32.c — table-driven CRC-32 (reflected, polynomial 0xEDB88320). See crc32.h. */
#include "src/core/crc32.h"

static uint32_t g_table[256];
static int g_ready = 0;

static void build_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        g_table[i] = c;
    }
    g_ready = 1;
}

uint32_t crc32_update(uint32_t crc, const void *data, size_t n) {
    if (!g_ready) build_table();
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) crc = g_table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}
