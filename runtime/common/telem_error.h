/* telem_error.h - the one list of error codes used across telem.
 *
 * Every function that can fail returns 0 (TELEM_OK) or one of these negative
 * codes; telem_strerror() turns a code into a sentence.  Codes are sent
 * between processes (the dictionary's replies carry them), so a code's
 * value never changes once given.  assert() is kept for
 * programmer errors and never used on input.
 */
#ifndef TELEM_ERROR_H
#define TELEM_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TELEM_OK = 0,
    TELEM_EINVAL = -1,       /* invalid argument */
    TELEM_ENOMEM = -2,       /* out of memory */
    TELEM_EPROTO = -3,       /* malformed or truncated message */
    TELEM_EVERSION = -4,     /* unsupported protocol version */
    TELEM_ETOOBIG = -5,      /* message or field over its limit */
    TELEM_ETIMEDOUT = -6,    /* deadline passed */
    TELEM_ENOTFOUND = -7,    /* no such metric, node, key or file */
    TELEM_EIO = -8,          /* system call or file failed */
    TELEM_EFULL = -9,        /* a bounded queue or store is full */
    TELEM_ECONN = -10,       /* no peer, or the peer went away */
    TELEM_EPARTIAL = -11,    /* some nodes did not answer */
    TELEM_ESTATE = -12,      /* call not valid in the current state */
    TELEM_EUNSUPPORTED = -13, /* feature or backend not available here */
    TELEM_EPERM = -14,       /* not permitted: the peer lacks the job's key,
                                or the request may not come this way */
    /* Dictionary codes travel in its replies (docs/dict.md): their values
       are part of the wire and never change. */
    TELEM_ECONFLICT = -64    /* compare-and-set: the version differs */
} telem_err_t;

/* Returns a static, human readable sentence for an error code (any int is
 * accepted; unknown codes give "unknown error").  Thread-safe. */
const char *telem_strerror(int code);

#ifdef __cplusplus
}
#endif
#endif
