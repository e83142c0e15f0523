/* telem_seg_int.h - what the segment and dump writers, the reader and the
 * history index share: a growing byte buffer, varints, the framing of
 * file headers, records and the dump footer, and the payload codecs.
 *
 * Internal to part store (telem_seg*.c, telem_hist*.c).  The byte layout
 * is docs/store.md's "Segment files" and "Dump files".
 */
#ifndef TELEM_SEG_INT_H
#define TELEM_SEG_INT_H

#include <stddef.h>
#include <stdint.h>

#include "telem_seg.h"

#define SEG_MAGIC "TELEMSEG"
#define SEG_FOOT_MAGIC "TELEMIDX"
#define SEG_SYNC 0x0a52ec7eu
#define SEG_REC_HDR 12u               /* sync, len, kind, 0, hcrc */
#define SEG_REC_OVERHEAD 16u          /* header and payload crc */
#define SEG_FILE_HDR_MIN 26u          /* 8 + 2 + 1 + 1 + 8 + 2 + 4 */
#define SEG_FOOTER 28u                /* magic, index_off, index_len, crc */
/* INDEX records are cut at about this many payload bytes. */
#define SEG_INDEX_REC_BYTES (1u << 20)

/* --- buffer ------------------------------------------------------------ */

typedef struct {
    unsigned char *p;
    size_t len;
    size_t cap;
} seg_buf_t;

int seg_buf_reserve(seg_buf_t *b, size_t more);
void seg_buf_free(seg_buf_t *b);
/* The put functions assume seg_buf_reserve() made room. */
void seg_put_u8(seg_buf_t *b, unsigned v);
void seg_put_u16(seg_buf_t *b, unsigned v);
void seg_put_u32(seg_buf_t *b, uint32_t v);
void seg_put_u64(seg_buf_t *b, uint64_t v);
void seg_put_uvar(seg_buf_t *b, uint64_t v);
void seg_put_bytes(seg_buf_t *b, const void *p, size_t n);
/* uvarint length then the bytes. */
void seg_put_str(seg_buf_t *b, const void *p, size_t n);

uint16_t seg_get_u16(const unsigned char *p);
uint32_t seg_get_u32(const unsigned char *p);
uint64_t seg_get_u64(const unsigned char *p);

/* A bounded reader of a payload. */
typedef struct {
    const unsigned char *p;
    size_t len;
    size_t pos;
    int bad;                          /* set by any read past the end */
} seg_cur_t;

uint64_t seg_cur_uvar(seg_cur_t *c);
unsigned seg_cur_u8(seg_cur_t *c);
uint64_t seg_cur_u64(seg_cur_t *c);
/* A uvarint length then that many bytes (at most max): returns them, with
 * *n set; NULL (and c->bad) when they do not fit. */
const unsigned char *seg_cur_str(seg_cur_t *c, size_t max, size_t *n);

/* --- framing ------------------------------------------------------------ */

/* Appends a file header. */
int seg_file_header(seg_buf_t *b, telem_seg_file_kind_t kind,
                    int64_t created_ns, const char *node);

/* Parses a file header at p[0..len): 0 with *info and *hdr_len set,
 * TELEM_EPROTO, TELEM_EVERSION, or 1 when more bytes are needed. */
int seg_file_header_parse(const unsigned char *p, size_t len,
                          telem_seg_info_t *info, size_t *hdr_len);

/* Starts a record of `kind` (reserves its header); returns the offset to
 * give seg_rec_end(), or a negative error. */
long long seg_rec_begin(seg_buf_t *b, telem_seg_rec_kind_t kind,
                        size_t payload_max);
/* Fills in the header and appends the payload's crc. */
void seg_rec_end(seg_buf_t *b, long long start);

/* Checks the record header at p (SEG_REC_HDR bytes): 0 with *kind and
 * *len (payload) set (a kind 1..255: above SEG_REC_KNOWN is a later
 * kind), else TELEM_EPROTO. */
int seg_rec_header(const unsigned char *p, unsigned *kind, uint32_t *len);

/* Appends the dump footer. */
int seg_footer(seg_buf_t *b, uint64_t index_off, uint64_t index_len);

/* --- payloads ------------------------------------------------------------ */

/* 1 if key[0..len) is a canonical key as telem_chunk.h says. */
int seg_key_valid(const char *key, size_t len);

/* Encode SERIES, BLOCK, META, SNAPSHOT records (whole, framed) into b.
 * Arguments are checked by the caller except the block (checked here:
 * TELEM_EINVAL when telem_block_info() refuses it or it is larger). */
int seg_enc_series(seg_buf_t *b, uint64_t id, const char *node,
                   const char *key, uint32_t key_len, int counter);
int seg_enc_block(seg_buf_t *b, uint64_t id, const telem_chunk_t *c,
                  int64_t *first_ts, int64_t *last_ts, uint32_t *npoints);
int seg_enc_meta(seg_buf_t *b, const char *node, const telem_meta_t *m);
int seg_enc_snapshot(seg_buf_t *b, const char *node, const char *json,
                     size_t len, int64_t created_ns);
int seg_enc_note(seg_buf_t *b, telem_seg_note_t type, int64_t time_ms,
                 const char *json, size_t len);

/* The highest record kind this reader decodes; a record whose header
 * names a higher one (up to 255) is framed, checked and skipped. */
#define SEG_REC_KNOWN TELEM_SEG_REC_ANNOTATION

/* Decodes the payload of a record of kind into *r (its strings copied,
 * NUL-terminated, into scratch, which must hold len + 8 bytes).  BLOCK
 * records get series_id, first_seq, closed, block; the caller resolves the
 * series.  Returns 0 or TELEM_EPROTO (also for a kind above
 * SEG_REC_KNOWN). */
int seg_dec_payload(unsigned kind, const unsigned char *p, uint32_t len,
                    char *scratch, telem_seg_rec_t *r);

/* Validated arguments of the writers. */
int seg_check_chunk(const telem_chunk_t *c);
int seg_check_meta(const telem_meta_t *m);

/* --- random access -------------------------------------------------------- */

/* Reads the record at offset of fd (size: the whole record's size when
 * known, 0 when not) into *buf (grown as needed, at most
 * TELEM_SEG_RECORD_MAX + SEG_REC_OVERHEAD) and checks it: 0 with *kind,
 * *payload and *len set, TELEM_EPROTO or TELEM_EIO. */
int seg_read_record(int fd, uint64_t offset, uint32_t size, seg_buf_t *buf,
                    unsigned *kind, const unsigned char **payload,
                    uint32_t *len);

/* --- a set of keys ---------------------------------------------------------- */

/* Byte strings (copied) numbered 0, 1, 2... in the order added. */
typedef struct {
    char **keys;
    uint32_t *lens;
    uint64_t *hashes;
    size_t n, cap;
    uint32_t *slots;                  /* index + 1; 0 empty */
    size_t nslots;
} seg_keys_t;

uint64_t seg_hash(const void *p, size_t n);
/* The number of key[0..len), or -1 when absent. */
long long seg_keys_find(const seg_keys_t *s, const void *key, size_t len);
/* Adds a key not in the set: its number, or TELEM_ENOMEM. */
long long seg_keys_add(seg_keys_t *s, const void *key, size_t len);
/* Empties the set (frees everything). */
void seg_keys_clear(seg_keys_t *s);

/* Writes p[0..n) whole to fd at its position: 0 or TELEM_EIO. */
int seg_write_all(int fd, const void *p, size_t n);

/* Adds a damaged stretch to *d. */
void seg_damage_add(telem_seg_damage_t *d, uint64_t offset, uint64_t bytes);

#endif
