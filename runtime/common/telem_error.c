/* telem_error.c - sentences for telem's error codes. */
#include "telem_error.h"

const char *
telem_strerror(int code)
{
    switch (code) {
    case TELEM_OK: return "success";
    case TELEM_EINVAL: return "invalid argument";
    case TELEM_ENOMEM: return "out of memory";
    case TELEM_EPROTO: return "malformed or truncated message";
    case TELEM_EVERSION: return "unsupported protocol version";
    case TELEM_ETOOBIG: return "message or field over its size limit";
    case TELEM_ETIMEDOUT: return "deadline passed before an answer came";
    case TELEM_ENOTFOUND: return "not found";
    case TELEM_EIO: return "input/output error";
    case TELEM_EFULL: return "queue or store is full";
    case TELEM_ECONN: return "peer not reachable";
    case TELEM_EPARTIAL: return "some nodes did not answer";
    case TELEM_ESTATE: return "operation not valid in the current state";
    case TELEM_EUNSUPPORTED: return "not supported on this system";
    case TELEM_EPERM:
        return "not permitted (needs the job's key, or the request may not "
               "come this way)";
    case TELEM_ECONFLICT: return "version differs (compare-and-set conflict)";
    default: return "unknown error";
    }
}
