/* telem_crc.h - CRC-32C (Castagnoli), the checksum of the dictionary's log
 * and of the store's compressed blocks.
 *
 * CRC-32C rather than zlib's CRC-32 because x86-64 (SSE4.2) and ARMv8
 * compute it in hardware: with three independent lanes combined at the
 * end it runs at several GB/s, where zlib's table-driven CRC-32 ran at
 * ~1.4 GB/s on the reference machine and was the largest cost of a
 * 64 KiB put (docs/performance.md).  Machines without the instruction use
 * a bitwise loop (slow, same result).
 *
 * The usual convention: initial value 0, check value of "123456789" is
 * 0xe3069283.  telem_crc32c(telem_crc32c(0, a), b) == crc of a then b.
 * Thread-safe (no state).
 */
#ifndef TELEM_CRC_H
#define TELEM_CRC_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of data[0..size) continuing from `crc` (0 to start). */
uint32_t telem_crc32c(uint32_t crc, const void *data, size_t size);

#endif
