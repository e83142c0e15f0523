/* telem_keys.c - a job's CURVE key pair (telem_keys.h).
 *
 * The pair is kept as Z85 text, the form libzmq's socket options take,
 * plus the raw public key the ZAP handler compares against.  A key file is
 * opened without following a link and checked on the open descriptor
 * (owner, mode), so what is checked is what is read.  Writing goes through
 * a temporary file created 0600 in the same directory and rename(), so a
 * reader sees the old pair or the new one.
 */
#include "telem_keys.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "telem_error.h"
#include "telem_paths.h"
#include "telem_why.h"

struct telem_keys {
    char pub[TELEM_KEYS_Z85_LEN + 1];
    char sec[TELEM_KEYS_Z85_LEN + 1];
    unsigned char pub_raw[32];
    char dir[TELEM_PATH_MAX];
};

static telem_keys_t *
s_fail(telem_keys_t **k, int *err, int code)
{
    telem_keys_destroy(k);
    if (err)
        *err = code;
    return NULL;
}

/* 1 when s holds exactly TELEM_KEYS_Z85_LEN characters of Z85's
 * alphabet (zmq_z85_decode checks the rest). */
static int
s_z85_text(const char *s, size_t n)
{
    static const char alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz"
                                   "ABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
    if (n != TELEM_KEYS_Z85_LEN)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!s[i] || !strchr(alphabet, s[i]))
            return 0;
    return 1;
}

/* Checks that the pair is whole and that the public key is the secret
 * key's; fills pub_raw. */
static int
s_check_pair(telem_keys_t *k, char *why, size_t why_size)
{
    char derived[TELEM_KEYS_Z85_LEN + 1];
    if (!*k->pub || !*k->sec) {
        telem_why(why, why_size, "a key file needs a 'public' and a "
                  "'secret' line");
        return TELEM_EINVAL;
    }
    if (!zmq_z85_decode(k->pub_raw, k->pub)) {
        telem_why(why, why_size, "the public key is not Z85 text");
        return TELEM_EINVAL;
    }
    if (zmq_curve_public(derived, k->sec) != 0
        || strcmp(derived, k->pub) != 0) {
        memset(derived, 0, sizeof derived);
        telem_why(why, why_size, "the public key is not the secret key's");
        return TELEM_EINVAL;
    }
    return 0;
}

/* One line "public KEY" or "secret KEY" into k. */
static int
s_parse_line(telem_keys_t *k, const char *line, size_t n, size_t lineno,
             char *why, size_t why_size)
{
    char *slot = NULL;
    if (n >= 7 && memcmp(line, "public ", 7) == 0)
        slot = k->pub;
    else if (n >= 7 && memcmp(line, "secret ", 7) == 0)
        slot = k->sec;
    if (!slot || !s_z85_text(line + 7, n - 7)) {
        telem_why(why, why_size, "line %zu: expected 'public KEY' or "
                  "'secret KEY' with a key of %d Z85 characters", lineno,
                  TELEM_KEYS_Z85_LEN);
        return TELEM_EINVAL;
    }
    if (*slot) {
        telem_why(why, why_size, "line %zu: the %s key is given twice",
                  lineno, slot == k->pub ? "public" : "secret");
        return TELEM_EINVAL;
    }
    memcpy(slot, line + 7, TELEM_KEYS_Z85_LEN);
    slot[TELEM_KEYS_Z85_LEN] = '\0';
    return 0;
}

telem_keys_t *
telem_keys_parse(const char *text, size_t len, int *err, char *why,
                 size_t why_size)
{
    telem_keys_t *k = NULL;
    if (len > TELEM_KEYS_FILE_MAX) {
        telem_why(why, why_size, "a key file is at most %d bytes",
                  TELEM_KEYS_FILE_MAX);
        return s_fail(&k, err, TELEM_ETOOBIG);
    }
    if (!(k = calloc(1, sizeof *k)))
        return s_fail(&k, err, TELEM_ENOMEM);
    size_t lineno = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t) (nl - (text + at)) : len - at;
        const char *line = text + at;
        at += n + 1;
        lineno++;
        if (n && line[n - 1] == '\r')
            n--;
        if (n == 0 || line[0] == '#')
            continue;
        int rc = s_parse_line(k, line, n, lineno, why, why_size);
        if (rc)
            return s_fail(&k, err, rc);
    }
    int rc = s_check_pair(k, why, why_size);
    if (rc)
        return s_fail(&k, err, rc);
    if (err)
        *err = 0;
    return k;
}

static int
s_path(char *buf, size_t size, const char *dir, const char *file)
{
    int n = snprintf(buf, size, "%s/%s", dir, file);
    return n < 0 || (size_t) n >= size ? TELEM_ETOOBIG : 0;
}

/* An open key file of this user, closed to group and other, read whole. */
static int
s_read_fd(int fd, const char *path, char *buf, size_t *len, char *why,
          size_t why_size)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return telem_why(why, why_size, "%s: %s", path, strerror(errno)),
               TELEM_EIO;
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
        return telem_why(why, why_size, "%s must be a file of this user "
                         "that no one else can read or write (mode 0600; it "
                         "is %04o, owner uid %u)", path,
                         (unsigned) (st.st_mode & 07777),
                         (unsigned) st.st_uid), TELEM_EPERM;
    if (st.st_size > TELEM_KEYS_FILE_MAX)
        return telem_why(why, why_size, "%s is over %d bytes: not a key "
                         "file", path, TELEM_KEYS_FILE_MAX), TELEM_ETOOBIG;
    ssize_t n = read(fd, buf, TELEM_KEYS_FILE_MAX + 1);
    if (n < 0)
        return telem_why(why, why_size, "%s: %s", path, strerror(errno)),
               TELEM_EIO;
    *len = (size_t) n;
    return 0;
}

/* A key directory must be this user's and closed to others: a directory
 * someone else could write to would let them swap the file. */
static int
s_check_dir(const char *dir, char *why, size_t why_size)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return telem_why(why, why_size, "key directory %s: %s", dir,
                         strerror(errno)),
               errno == ENOENT ? TELEM_ENOTFOUND : TELEM_EIO;
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
        return telem_why(why, why_size, "key directory %s must be a "
                         "directory of this user that no one else can write "
                         "to (mode 0700)", dir), TELEM_EPERM;
    return 0;
}

telem_keys_t *
telem_keys_load(const char *dir, int *err, char *why, size_t why_size)
{
    char path[TELEM_PATH_MAX], buf[TELEM_KEYS_FILE_MAX + 1];
    size_t len = 0;
    telem_keys_t *k = NULL;
    if (!dir || !*dir || s_path(path, sizeof path, dir, TELEM_KEYS_FILE))
        return telem_why(why, why_size, "key directory path empty or too "
                         "long"), s_fail(&k, err, TELEM_ETOOBIG);
    int rc = s_check_dir(dir, why, why_size);
    if (rc)
        return s_fail(&k, err, rc);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return telem_why(why, why_size, "%s: %s", path, strerror(errno)),
               s_fail(&k, err, errno == ENOENT ? TELEM_ENOTFOUND
                                : errno == ELOOP ? TELEM_EPERM : TELEM_EIO);
    rc = s_read_fd(fd, path, buf, &len, why, why_size);
    close(fd);
    char inner[256] = "";
    if (!rc)
        k = telem_keys_parse(buf, len, &rc, inner, sizeof inner);
    memset(buf, 0, sizeof buf);
    if (rc) {
        if (*inner)
            telem_why(why, why_size, "%s: %s", path, inner);
        return s_fail(&k, err, rc);
    }
    snprintf(k->dir, sizeof k->dir, "%s", dir);
    if (err)
        *err = 0;
    return k;
}

/* Creates `dir` mode 0700 when missing, else checks it. */
static int
s_make_dir(const char *dir, char *why, size_t why_size)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return telem_why(why, why_size, "cannot create key directory %s: "
                         "%s", dir, strerror(errno)), TELEM_EIO;
    return s_check_dir(dir, why, why_size);
}

static int
s_write(const char *dir, const telem_keys_t *k, char *why, size_t why_size)
{
    char path[TELEM_PATH_MAX], tmp[TELEM_PATH_MAX];
    if (s_path(path, sizeof path, dir, TELEM_KEYS_FILE)
        || s_path(tmp, sizeof tmp, dir, "." TELEM_KEYS_FILE ".XXXXXX"))
        return telem_why(why, why_size, "key directory path too long"),
               TELEM_ETOOBIG;
    int fd = mkstemp(tmp);          /* mode 0600 */
    if (fd < 0)
        return telem_why(why, why_size, "cannot write in %s: %s", dir,
                         strerror(errno)), TELEM_EIO;
    char text[256];
    int n = snprintf(text, sizeof text,
                     "# telem job key: the CURVE key pair of one job (Z85).\n"
                     "# Whoever can read this file can act as the job: keep "
                     "it mode 0600.\npublic %s\nsecret %s\n", k->pub, k->sec);
    int bad = write(fd, text, (size_t) n) != n || fsync(fd) != 0;
    memset(text, 0, sizeof text);
    bad |= close(fd) != 0;
    if (bad || rename(tmp, path) != 0) {
        telem_why(why, why_size, "cannot write %s: %s", path,
                  strerror(errno));
        unlink(tmp);
        return TELEM_EIO;
    }
    return 0;
}

telem_keys_t *
telem_keys_create(const char *dir, int *err, char *why, size_t why_size)
{
    telem_keys_t *k = NULL;
    if (!zmq_has("curve"))
        return telem_why(why, why_size, "this libzmq has no CURVE "
                         "security"), s_fail(&k, err, TELEM_EUNSUPPORTED);
    if (!dir || !*dir || strlen(dir) >= sizeof k->dir)
        return telem_why(why, why_size, "key directory path empty or too "
                         "long"), s_fail(&k, err, TELEM_ETOOBIG);
    if (!(k = calloc(1, sizeof *k)))
        return s_fail(&k, err, TELEM_ENOMEM);
    if (zmq_curve_keypair(k->pub, k->sec) != 0
        || !zmq_z85_decode(k->pub_raw, k->pub))
        return telem_why(why, why_size, "cannot make a key pair: %s",
                         zmq_strerror(errno)), s_fail(&k, err, TELEM_EIO);
    int rc = s_make_dir(dir, why, why_size);
    if (!rc)
        rc = s_write(dir, k, why, why_size);
    if (rc)
        return s_fail(&k, err, rc);
    snprintf(k->dir, sizeof k->dir, "%s", dir);
    if (err)
        *err = 0;
    return k;
}

/* 1 when DIR/keys/job.key exists, with DIR/keys in `out`. */
static int
s_keys_in(const char *dir, size_t dir_len, char *out, size_t size)
{
    char file[TELEM_PATH_MAX];
    int n = snprintf(out, size, "%.*s/%s", (int) dir_len, dir,
                     TELEM_KEYS_SUBDIR);
    if (n < 0 || (size_t) n >= size
        || s_path(file, sizeof file, out, TELEM_KEYS_FILE))
        return TELEM_ETOOBIG;
    if (access(file, F_OK) == 0)
        return 1;
    *out = '\0';
    return 0;
}

int
telem_keys_locate(const char *rundir, const char *nodefile, char *dir,
                  size_t dir_size)
{
    char def[TELEM_PATH_MAX];
    const char *env = getenv(TELEM_KEYS_ENV);
    if (dir_size)
        *dir = '\0';
    if (env) {
        if (!*env)
            return 0;
        int n = snprintf(dir, dir_size, "%s", env);
        return n < 0 || (size_t) n >= dir_size ? TELEM_ETOOBIG : 1;
    }
    const char *slash = nodefile ? strrchr(nodefile, '/') : NULL;
    int rc = nodefile ? s_keys_in(slash ? nodefile : ".",
                                  slash ? (size_t) (slash - nodefile) : 1,
                                  dir, dir_size) : 0;
    if (rc)
        return rc;
    if (!rundir && telem_rundir_default(def, sizeof def))
        return TELEM_ETOOBIG;
    rundir = rundir ? rundir : def;
    return s_keys_in(rundir, strlen(rundir), dir, dir_size);
}

int
telem_keys_find(const char *rundir, const char *nodefile, telem_keys_t **out,
                char *why, size_t why_size)
{
    char dir[TELEM_PATH_MAX];
    *out = NULL;
    int rc = telem_keys_locate(rundir, nodefile, dir, sizeof dir);
    if (rc == TELEM_ETOOBIG)
        telem_why(why, why_size, "key directory path too long");
    if (rc <= 0)
        return rc;
    *out = telem_keys_load(dir, &rc, why, why_size);
    return rc;
}

int
telem_keys_loopback(const char *addr)
{
    char host[64];
    if (strncmp(addr, "tcp://", 6) == 0) {
        addr += 6;
        const char *colon = strrchr(addr, ':');
        size_t n = colon ? (size_t) (colon - addr) : strlen(addr);
        if (n >= sizeof host)
            return 0;
        memcpy(host, addr, n);
        host[n] = '\0';
    } else if (snprintf(host, sizeof host, "%s", addr) >= (int) sizeof host) {
        return 0;
    }
    char *h = host;
    size_t n = strlen(h);
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
        h[n - 1] = '\0';
        h++;
    }
    struct in_addr a4;
    struct in6_addr a6;
    if (strcmp(h, "localhost") == 0)
        return 1;
    if (inet_pton(AF_INET, h, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, h, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

int
telem_keys_for_bind(const char *keys_dir, int insecure, const char *rundir,
                    const char *bind_addr, telem_keys_t **out, char *why,
                    size_t why_size)
{
    int rc = 0;
    *out = NULL;
    if (keys_dir)
        *out = telem_keys_load(keys_dir, &rc, why, why_size);
    else
        rc = telem_keys_find(rundir, NULL, out, why, why_size);
    if (rc || *out || !bind_addr || insecure
        || telem_keys_loopback(bind_addr))
        return rc;
    telem_why(why, why_size, "a TCP bind off loopback (%s) needs the job's "
              "keys: --keys DIR (telem_keygen DIR makes them; telem_launch "
              "does for its jobs), or --insecure on a network only you "
              "use", bind_addr);
    return TELEM_EPERM;
}

int
telem_keys_remove(const char *dir)
{
    char path[TELEM_PATH_MAX];
    if (!dir || !*dir || s_path(path, sizeof path, dir, TELEM_KEYS_FILE))
        return TELEM_EINVAL;
    if (unlink(path) != 0 && errno != ENOENT)
        return TELEM_EIO;
    if (rmdir(dir) != 0 && errno != ENOENT && errno != ENOTEMPTY
        && errno != EEXIST)
        return TELEM_EIO;
    return 0;
}

const char *
telem_keys_public(const telem_keys_t *self)
{
    return self->pub;
}

const char *
telem_keys_dir(const telem_keys_t *self)
{
    return self->dir;
}

int
telem_keys_match(const telem_keys_t *self, const unsigned char *key,
                 size_t len)
{
    if (len != sizeof self->pub_raw)
        return 0;
    unsigned diff = 0;
    for (size_t i = 0; i < len; i++)
        diff |= (unsigned) (key[i] ^ self->pub_raw[i]);
    return diff == 0;
}

/* ZMQ_ZAP_ENFORCE_DOMAIN, a draft option of libzmq 4.3 (built into
   Debian's library, its name hidden by the header without the draft API):
   without a ZAP handler in the process the handshake fails, where by
   default libzmq would let every CURVE client in unchecked. */
#ifdef ZMQ_ZAP_ENFORCE_DOMAIN
#define S_ZAP_ENFORCE_DOMAIN ZMQ_ZAP_ENFORCE_DOMAIN
#else
#define S_ZAP_ENFORCE_DOMAIN 93
#endif

static int
s_set(void *sock, int option, const void *value, size_t size)
{
    return zmq_setsockopt(sock, option, value, size);
}

int
telem_keys_apply_server(void *sock, const telem_keys_t *self)
{
    int one = 1;
    return s_set(sock, ZMQ_CURVE_SERVER, &one, sizeof one)
        || s_set(sock, ZMQ_CURVE_SECRETKEY, self->sec, TELEM_KEYS_Z85_LEN)
        || s_set(sock, ZMQ_ZAP_DOMAIN, TELEM_KEYS_ZAP_DOMAIN,
                 strlen(TELEM_KEYS_ZAP_DOMAIN))
        || s_set(sock, S_ZAP_ENFORCE_DOMAIN, &one, sizeof one) ? -1 : 0;
}

int
telem_keys_apply_client(void *sock, const telem_keys_t *self)
{
    return s_set(sock, ZMQ_CURVE_SERVERKEY, self->pub, TELEM_KEYS_Z85_LEN)
        || s_set(sock, ZMQ_CURVE_PUBLICKEY, self->pub, TELEM_KEYS_Z85_LEN)
        || s_set(sock, ZMQ_CURVE_SECRETKEY, self->sec, TELEM_KEYS_Z85_LEN)
        ? -1 : 0;
}

int
telem_keys_plain_ok(void *sock)
{
    int mech = ZMQ_NULL;
    size_t len = sizeof mech;
    if (zmq_getsockopt(sock, ZMQ_MECHANISM, &mech, &len) != 0)
        return -1;
    if (mech != ZMQ_NULL) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

void
telem_keys_destroy(telem_keys_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    volatile char *p = (volatile char *) *self_p;
    for (size_t i = 0; i < sizeof **self_p; i++)
        p[i] = 0;
    free(*self_p);
    *self_p = NULL;
}
