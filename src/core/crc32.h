/* crc32.h — CRC-32 (IEEE 802.3, the zlib polynomial) for checksums in Trident's files.
 * crc32_update(0, p, n) gives the checksum of n bytes; chain calls to checksum pieces. */
#ifndef TRIDENT_CORE_CRC32_H
#define TRIDENT_CORE_CRC32_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32_update(uint32_t crc, const void *data, size_t n);

#endif /* TRIDENT_CORE_CRC32_H */
