/* fuzz.h - what telem's libFuzzer targets (tests/fuzz/fuzz_*.c) share: an
 * oracle check that aborts, a cursor over the input, a private scratch
 * directory, files and whole directory trees written from the input, and
 * the CRC fix-ups that let a mutated file reach the parser behind its
 * checksum.
 *
 * Why a tree format: the /proc, /sys and node-file parsers take paths, not
 * bytes, so a target writes its input as files first.  One input holds a
 * whole tree, in a text form the seeds stay readable in:
 *
 *     @@ proc/stat
 *     cpu  10 0 5 100 ...
 *     @@ proc/123/ns/net -> net:[4026531840]
 *     @@ sys/block/sda/
 *
 * A line "@@ PATH" starts a file whose content runs to the next line that
 * starts with "@@ " (the newline before it is the content's last byte);
 * "@@ PATH -> TARGET" makes a symbolic link, "@@ PATH/" a directory.
 * Paths are relative, of at most FZ_TREE_DEPTH components, none "." or
 * ".."; link targets hold no '/', so nothing outside the tree is read.
 * Text before the first "@@ " line is ignored.
 *
 * State: libFuzzer calls a target's LLVMFuzzerTestOneInput many times in
 * one process, so the scratch directory is a file static made on first
 * use and removed at exit; everything else is per call.  Header-only
 * (static functions): each target is one program built from one .c file.
 */
#ifndef TELEM_FUZZ_H
#define TELEM_FUZZ_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "telem_crc.h"

#define FZ_TREE_DEPTH 8       /* path components of one tree entry */
#define FZ_TREE_ENTRIES 256   /* entries of one tree */
#define FZ_PATH_MAX 512

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An oracle: a property every input must keep.  Aborting is how a target
 * tells libFuzzer it found a bug that is not a memory error. */
#define FZ_CHECK(cond)                                                      \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__,     \
                    __LINE__, #cond);                                       \
            abort();                                                        \
        }                                                                   \
    } while (0)

/* ------------------------------------------------------------- cursor */

typedef struct {
    const uint8_t *p;
    size_t n;
} fz_in_t;

/* The next byte, 0 once the input is used up. */
static inline uint8_t
fz_u8(fz_in_t *in)
{
    if (in->n == 0)
        return 0;
    in->n--;
    return *in->p++;
}

/* The bytes up to the next `sep` (or the end) as a malloc'd NUL-terminated
 * string, the separator consumed; NULL when out of memory. */
static inline char *
fz_token(fz_in_t *in, int sep)
{
    const uint8_t *e = memchr(in->p, sep, in->n);
    size_t len = e ? (size_t) (e - in->p) : in->n;
    char *s = malloc(len + 1);
    if (!s)
        return NULL;
    memcpy(s, in->p, len);
    s[len] = '\0';
    in->p += len + (e != NULL);
    in->n -= len + (e != NULL);
    return s;
}

/* A malloc'd NUL-terminated copy of data[0..size) (NUL bytes inside stay:
 * C string parsers stop at the first). */
static inline char *
fz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s) {
        memcpy(s, data, size);
        s[size] = '\0';
    }
    return s;
}

/* --------------------------------------------------------------- files */

static char s_fz_dir[FZ_PATH_MAX];

static int
s_fz_rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void) st;
    (void) flag;
    (void) f;
    remove(path);
    return 0;
}

/* Removes path and everything below it (links are not followed). */
static inline void
fz_rm_tree(const char *path)
{
    nftw(path, s_fz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void
s_fz_cleanup(void)
{
    if (s_fz_dir[0])
        fz_rm_tree(s_fz_dir);
}

/* The process's private scratch directory: under $TMPDIR, else /dev/shm
 * (memory: a target writes files on every input), else /tmp.  Aborts when
 * none can be made: nothing could be tested. */
static inline const char *
fz_scratch(void)
{
    if (s_fz_dir[0])
        return s_fz_dir;
    const char *bases[] = { getenv("TMPDIR"), "/dev/shm", "/tmp" };
    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
        if (!bases[i] || !*bases[i])
            continue;
        snprintf(s_fz_dir, sizeof s_fz_dir, "%s/telem-fuzz-XXXXXX", bases[i]);
        if (mkdtemp(s_fz_dir)) {
            atexit(s_fz_cleanup);
            return s_fz_dir;
        }
    }
    fprintf(stderr, "fuzz: no scratch directory: %s\n", strerror(errno));
    abort();
}

/* Writes data[0..n) as the whole file `path` (mode 0600).  0 or -1. */
static inline int
fz_write(const char *path, const void *data, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        p += w;
        n -= (size_t) w;
    }
    close(fd);
    return n == 0 ? 0 : -1;
}

/* ---------------------------------------------------------------- trees */

/* 1 when rel is a path a tree may hold (see the top of the file). */
static inline int
s_fz_path_ok(const char *rel)
{
    int depth = 0;
    const char *p = rel;
    if (!*rel || *rel == '/' || strlen(rel) > FZ_PATH_MAX / 2)
        return 0;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t) (e - p) : strlen(p);
        if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.')
            || (len == 0 && e) || ++depth > FZ_TREE_DEPTH)
            return 0;
        p += len + (e != NULL);
    }
    return 1;
}

/* Makes the directories above root/rel (mode 0700). */
static inline void
s_fz_parents(const char *root, const char *rel)
{
    char path[FZ_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *s = path + strlen(root) + 1; (s = strchr(s, '/')) != NULL; s++) {
        *s = '\0';
        mkdir(path, 0700);
        *s = '/';
    }
}

/* One entry: the header line (path, maybe " -> target") and its content. */
static inline void
s_fz_entry(const char *root, char *head, const uint8_t *body, size_t len)
{
    char *arrow = strstr(head, " -> ");
    const char *target = NULL;
    if (arrow) {
        *arrow = '\0';
        target = arrow + 4;
    }
    size_t hl = strlen(head);
    int dir = hl > 0 && head[hl - 1] == '/';
    if (dir)
        head[hl - 1] = '\0';
    if (!s_fz_path_ok(head) || (target && (!*target || strchr(target, '/'))))
        return;
    char path[FZ_PATH_MAX];
    s_fz_parents(root, head);
    snprintf(path, sizeof path, "%s/%s", root, head);
    if (dir)
        mkdir(path, 0700);
    else if (target)
        (void) symlink(target, path);
    else
        (void) fz_write(path, body, len);
}

/* Where the entry starting at p[0..n) ("@@ " already consumed) ends: the
 * offset of the next "\n@@ " plus one, or n. */
static inline size_t
s_fz_entry_end(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 3 < n; i++)
        if (p[i] == '\n' && p[i + 1] == '@' && p[i + 2] == '@' && p[i + 3] == ' ')
            return i + 1;
    return n;
}

/* Writes the tree held in data[0..size) (format at the top) under root,
 * which must exist.  Returns the number of entries read. */
static inline int
fz_tree(const char *root, const uint8_t *data, size_t size)
{
    size_t off = 0;
    int n = 0;
    if (size < 3 || memcmp(data, "@@ ", 3) != 0)
        off = s_fz_entry_end(data, size);
    while (off + 3 <= size && n < FZ_TREE_ENTRIES
           && memcmp(data + off, "@@ ", 3) == 0) {
        const uint8_t *p = data + off + 3;
        size_t left = size - off - 3, end = s_fz_entry_end(p, left);
        const uint8_t *nl = memchr(p, '\n', end);
        size_t hl = nl ? (size_t) (nl - p) : end;
        char head[FZ_PATH_MAX];
        if (hl < sizeof head && !memchr(p, '\0', hl)) {
            memcpy(head, p, hl);
            head[hl] = '\0';
            size_t body = nl ? hl + 1 : hl;
            s_fz_entry(root, head, p + body, end - body);
        }
        off += 3 + end;
        n++;
    }
    return n;
}

/* A fresh, empty directory `name` in the scratch directory, for this
 * input (what an earlier input left there is removed).  The returned path
 * is static: valid until the next call. */
static inline const char *
fz_fresh_dir(const char *name)
{
    static char path[FZ_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", fz_scratch(), name);
    fz_rm_tree(path);
    if (mkdir(path, 0700) != 0) {
        fprintf(stderr, "fuzz: cannot make %s: %s\n", path, strerror(errno));
        abort();
    }
    return path;
}

/* ------------------------------------------------------------- checksums */

static inline uint32_t
fz_get32le(const uint8_t *p)
{
    return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16
           | (uint32_t) p[3] << 24;
}

static inline void
fz_put32le(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t) (v >> (8 * i));
}

/* CRC-32C of p[0..n) written little-endian at at[0..4). */
static inline void
fz_crc_at(uint8_t *at, const uint8_t *p, size_t n)
{
    fz_put32le(at, telem_crc32c(0, p, n));
}

#endif
