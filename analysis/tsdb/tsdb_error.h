/* tsdb_error.h - the error an OpenTSDB endpoint answers with: an HTTP
 * status and OpenTSDB's "message" and "details".
 *
 * OpenTSDB answers a failed request with
 *   {"error":{"code":400,"message":"...","details":"..."}}
 * The parsers and the executor of analysis/tsdb fill one of these; the
 * HTTP side turns it into that body.  Plain data: thread-safe as long as
 * each caller has its own. */
#ifndef TSDB_ERROR_H
#define TSDB_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int status;            /* HTTP status: 400 bad query, 404 not found,
                              413 too large, 500 */
    char message[512];     /* OpenTSDB's "message" */
    char details[512];     /* OpenTSDB's "details" ("" when none) */
} tsdb_error_t;

/* Sets e's status and message (printf-like) and empties its details.
 * A NULL e is ignored.  A message longer than the buffer is cut. */
void tsdb_error_set(tsdb_error_t *e, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sets e's details (printf-like), leaving status and message. */
void tsdb_error_details(tsdb_error_t *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#endif
