/* telem_keys.h - a job's CURVE key pair: made, written, found and loaded,
 * and put on a socket.
 *
 * Every TCP socket between the processes of a job is ZeroMQ CURVE with one
 * key pair per job (docs/security.md).  telem_launch makes it at the
 * start of a job in RUNDIR/keys/job.key (the directory mode 0700, the
 * file 0600; under Slurm the run directory is on a file system every node
 * sees), hands the directory to the daemons with --keys and to every
 * process it starts in $TELEM_KEYS, and removes it when the job ends.
 * The key never appears on a command line, where ps would show it.
 *
 * One pair serves both ends: a daemon's TCP socket is the CURVE server
 * with the job's secret key, every client (libtelem, the analysis client,
 * the dictionary client, telem_watch, telem_agg, the launcher) connects
 * as a CURVE client with the same pair, and the daemon's ZAP handler
 * (telem_zap.h) lets in only clients that prove they hold it.  Whoever
 * can read job.key is the job: the file's owner and mode are checked on
 * every load (as ssh checks a private key), and a file another user could
 * read or write is refused.
 *
 * The file is text, at most 4 KiB:
 *     # comment lines
 *     public <40 Z85 characters>
 *     secret <40 Z85 characters>
 * and the public key must be the one the secret key gives.
 *
 * This file is part of the raw-libzmq path (telem_sock_raw): the client
 * libraries use it without czmq.  Nothing here logs; failures fill a
 * caller's `why` (telem_why.h).
 *
 * Thread safety: a telem_keys_t is read-only once made and may be shared
 * by threads; the functions touch only their arguments and the file
 * system.
 */
#ifndef TELEM_KEYS_H
#define TELEM_KEYS_H

#include <stddef.h>

/* The key file's name inside a key directory, the directory's name
 * inside a run directory, and the environment variable naming it. */
#define TELEM_KEYS_FILE "job.key"
#define TELEM_KEYS_SUBDIR "keys"
#define TELEM_KEYS_ENV "TELEM_KEYS"

/* The ZAP domain of every CURVE server socket of telem. */
#define TELEM_KEYS_ZAP_DOMAIN "telem"

/* Z85 text of a 32-byte key, without its terminating NUL. */
#define TELEM_KEYS_Z85_LEN 40

/* The largest key file read. */
#define TELEM_KEYS_FILE_MAX 4096

typedef struct telem_keys telem_keys_t;

/* Makes a fresh key pair (zmq_curve_keypair) and writes it to
 * DIR/job.key: DIR is created mode 0700 when missing (its parent must
 * exist), the file is written mode 0600 beside it and renamed into place,
 * so a reader never sees half a key.  An existing DIR must be this user's
 * and closed to group and other.  Returns the keys, or NULL with *err
 * (NULL allowed) set to TELEM_EUNSUPPORTED (libzmq without CURVE),
 * TELEM_EPERM (DIR belongs to another user or is open to others),
 * TELEM_EIO (a file-system call failed), TELEM_ETOOBIG (path too long) or
 * TELEM_ENOMEM, and a sentence in `why`. */
telem_keys_t *telem_keys_create(const char *dir, int *err, char *why,
                                size_t why_size);

/* Reads DIR/job.key.  Returns the keys, or NULL with *err set to
 * TELEM_ENOTFOUND (no such file), TELEM_EPERM (the file or DIR is not
 * this user's, or the file is open to group or other), TELEM_EINVAL (not
 * a key file: see the format above), TELEM_EIO, TELEM_ETOOBIG or
 * TELEM_ENOMEM, and a sentence in `why` that names the file. */
telem_keys_t *telem_keys_load(const char *dir, int *err, char *why,
                              size_t why_size);

/* Parses the text of a key file (`len` bytes, no NUL needed).  Returns
 * the keys, or NULL with *err set to TELEM_EINVAL (a malformed line, a
 * missing or repeated key, a key that is not Z85, a public key that does
 * not match the secret one), TELEM_ETOOBIG (over TELEM_KEYS_FILE_MAX) or
 * TELEM_ENOMEM, and the reason in `why`.  The keys' directory is "". */
telem_keys_t *telem_keys_parse(const char *text, size_t len, int *err,
                               char *why, size_t why_size);

/* The key directory a process uses, in `dir`:
 *   $TELEM_KEYS when it is set (empty: none, on purpose);
 *   else, given the job's node file `nodefile` (NULL: none), the keys/
 *   beside it when keys/job.key exists there (telem_launch writes
 *   RUNDIR/nodes beside RUNDIR/keys, so a client handed a job's node file
 *   finds its key);
 *   else RUNDIR/keys when RUNDIR/keys/job.key exists (rundir NULL: the
 *   default run directory, telem_paths.h);
 *   else none.
 * Returns 1 (dir filled), 0 (no keys: dir is "") or TELEM_ETOOBIG. */
int telem_keys_locate(const char *rundir, const char *nodefile, char *dir,
                      size_t dir_size);

/* telem_keys_locate() then telem_keys_load().  Returns 0 with *out the
 * keys, or with *out NULL when there are none; else the load's error
 * with *out NULL and its sentence in `why`. */
int telem_keys_find(const char *rundir, const char *nodefile,
                    telem_keys_t **out, char *why, size_t why_size);

/* 1 when `addr` (a bind address: "127.0.0.1", "::1", "[::1]",
 * "localhost", or a tcp:// endpoint with one) is on the loopback
 * interface, where only users of this machine reach it; else 0. */
int telem_keys_loopback(const char *addr);

/* The keys of a daemon that binds TCP at `bind_addr` (NULL: no TCP):
 * those of `keys_dir` when given (--keys), else
 * telem_keys_find(rundir, NULL).
 * Without keys a bind off loopback is refused (TELEM_EPERM, with the fix
 * in `why`) unless `insecure` (an explicit opt-out for a trusted
 * network).  Returns 0 with *out the keys or NULL (plain: loopback, no
 * TCP, or insecure), else an error with *out NULL and `why` filled. */
int telem_keys_for_bind(const char *keys_dir, int insecure,
                        const char *rundir, const char *bind_addr,
                        telem_keys_t **out, char *why, size_t why_size);

/* Removes DIR/job.key and DIR (when empty).  Returns 0 (also when they
 * were already gone) or TELEM_EIO. */
int telem_keys_remove(const char *dir);

/* The public key, Z85 (TELEM_KEYS_Z85_LEN characters), and the directory
 * the keys were loaded from ("" when parsed from text). */
const char *telem_keys_public(const telem_keys_t *self);
const char *telem_keys_dir(const telem_keys_t *self);

/* 1 when `key` (a client's public key as its ZAP request carries it,
 * 32 raw bytes) is this job's public key, else 0.  Constant time. */
int telem_keys_match(const telem_keys_t *self, const unsigned char *key,
                     size_t len);

/* Makes a libzmq socket, before its bind, a CURVE server with the job's
 * secret key on ZAP domain "telem", with ZMQ_ZAP_ENFORCE_DOMAIN so that a
 * process without a ZAP handler lets no client in.  0, or -1 with errno
 * from libzmq. */
int telem_keys_apply_server(void *sock, const telem_keys_t *self);

/* Makes a libzmq socket, before its connect, a CURVE client holding the
 * job's pair and expecting the job's public key from the server.  0, or
 * -1 with errno. */
int telem_keys_apply_client(void *sock, const telem_keys_t *self);

/* 0 when a plain bind or connect of `sock` would be plain: its mechanism
 * is still NULL.  libzmq takes a socket's options at each bind and
 * connect, and a ZAP domain cannot be unset, so a socket that serves ipc
 * and TCP binds its plain endpoints first; else -1 with errno EINVAL. */
int telem_keys_plain_ok(void *sock);

/* Frees the keys, overwriting the secret first.  Accepts NULL or a
 * pointer to NULL; nulls the caller's pointer. */
void telem_keys_destroy(telem_keys_t **self_p);

#endif
