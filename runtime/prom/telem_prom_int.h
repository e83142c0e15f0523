/* telem_prom_int.h - PRIVATE to runtime/prom (telem_prom*.c); nothing
 * else includes it.  telem_prom.h is the API.
 *
 * The module is split by responsibility, and calls one way:
 *   telem_prom_render.c  the render: grouping, conflicts, the two formats
 *   telem_prom_snap.c    the snapshot block: building it, reading it back
 *   telem_prom_name.c    name mapping, escaping, UTF-8, the output buffer
 *   telem_prom_http.c    Accept and Accept-Encoding, gzip (stands alone)
 * telem_prom_render.c calls telem_prom_snap.c and telem_prom_name.c;
 * telem_prom_snap.c calls telem_prom_name.c; neither is called back.
 * Internal names carry the tprom_ prefix.
 *
 * The snapshot block (native byte order: it never leaves the process):
 *
 *   header   uint32 magic "TPS1", uint32 0, uint64 record count
 *   record   tprom_rec_t (24 bytes), then NUL-terminated strings:
 *              metric, unit and doc (unless TPROM_REC_INHERIT: same
 *              metric as the record before, whose unit and doc apply),
 *              then ntags pairs key, value;
 *            padded with NULs to a multiple of 8 bytes (rec.size counts
 *            the whole record, padding included)
 */
#ifndef TELEM_PROM_INT_H
#define TELEM_PROM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "telem_prom.h"

#define TPROM_MAGIC UINT32_C(0x31535054)     /* "TPS1" little-endian */
#define TPROM_HDR_SIZE 16u
#define TPROM_REC_INHERIT 1u

/* Metric types in a record: the two of telem_types.h, and one for a
 * metric without a description. */
enum { TPROM_GAUGE = 0, TPROM_COUNTER = 1, TPROM_UNTYPED = 2 };

typedef struct {
    uint32_t size;          /* the whole record, a multiple of 8 */
    uint8_t type;           /* TPROM_GAUGE, TPROM_COUNTER, TPROM_UNTYPED */
    uint8_t ntags;
    uint8_t flags;          /* TPROM_REC_INHERIT */
    uint8_t pad;
    int64_t ts_ns;
    double value;
} tprom_rec_t;

/* One record read back; strings point into the block. */
typedef struct {
    const char *metric, *unit, *doc;
    const char *tags;       /* ntags pairs "key\0value\0" */
    uint32_t ntags;
    uint8_t type;
    int64_t ts_ns;
    double value;
} tprom_ent_t;

/* Reads every record of block[0..len) into a malloc'd array (*ents_p, *n;
 * NULL with 0 records).  Returns 0, TELEM_EINVAL (not a whole, well-formed
 * snapshot) or TELEM_ENOMEM. */
int tprom_block_parse(const void *block, size_t len, tprom_ent_t **ents_p,
                      size_t *n);

/* --- the output buffer (telem_prom_name.c) ------------------------------- *
 * Appends never fail loudly: the first failure sets `failed` and later
 * appends do nothing, so a writer checks once at the end. */
typedef struct {
    char *p;
    size_t len, cap;
    bool failed;
} tprom_buf_t;

/* Makes room for `more` bytes and a NUL, and ends the text with a NUL;
 * false (and failed set) when out of memory. */
bool tprom_buf_reserve(tprom_buf_t *b, size_t more);
void tprom_buf_put(tprom_buf_t *b, const char *s, size_t n);
void tprom_buf_puts(tprom_buf_t *b, const char *s);
void tprom_buf_putc(tprom_buf_t *b, char c);

/* Appends the mapped name (telem_prom.h: metric names; `label` true: label
 * names). */
void tprom_put_name(tprom_buf_t *b, const char *name, bool label);

/* Appends s escaped: '\\' and newline always, '"' when `quote`; bytes
 * that are not valid UTF-8 become U+FFFD. */
void tprom_put_escaped(tprom_buf_t *b, const char *s, bool quote);

/* Appends a value ("%.17g", NaN, +Inf, -Inf). */
void tprom_put_value(tprom_buf_t *b, double v);

#endif
