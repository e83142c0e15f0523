/* telem_actor_loop.h - the poll loop of a telem actor (telemd's agent, the
 * dictionary server): its command pipe, its sockets, its timer work and
 * its idle memory trim, written once.
 *
 * A daemon's actor thread runs
 *
 *     telem_actor_loop_t *loop = telem_actor_loop_new(&hooks);
 *     telem_actor_loop_add_pipe(loop, pipe);   (optional: poll it first)
 *     telem_actor_loop_add(loop, sock, on_sock, self);   (one per socket)
 *     int by_pipe = telem_actor_loop_run(loop, pipe);
 *     ... close its sockets ...
 *     if (!by_pipe)
 *         zstr_send(pipe, "DONE");
 *
 * telem_actor_loop_run() signals the pipe (zactor_new returns), then until
 * hooks.done() says so or the pipe says "$TERM" (or closes):
 *   1. asks hooks.next() when it must wake up (it does the timer work that
 *      is due and returns a monotonic time in ns) and waits for a socket
 *      until then, at most hooks.cap_ms (so an interrupt is noticed);
 *   2. on the pipe: "$TERM" ends the loop, other commands are dropped; on
 *      a socket: calls its handler; on a timeout: telem_limits_trim() on
 *      hooks.freed_bytes;
 *   3. calls hooks.after() (not after "$TERM").
 * The loop keeps polling after SIGINT/SIGTERM (zpoller nonstop): hooks.done
 * checks zsys_interrupted itself, so the daemon decides how to stop.
 *
 * Thread safety: one loop belongs to one actor thread; sockets may be
 * added from its handlers while it runs.
 */
#ifndef TELEM_ACTOR_LOOP_H
#define TELEM_ACTOR_LOOP_H

#include <czmq.h>
#include <stddef.h>
#include <stdint.h>

typedef struct telem_actor_loop telem_actor_loop_t;

/* A socket is readable: `sock` as given to telem_actor_loop_add(). */
typedef void (telem_actor_loop_fn)(void *sock, void *arg);

typedef struct {
    int (*done)(void *arg);         /* 1: end the loop; before every wait */
    int64_t (*next)(void *arg);     /* timer work; when to wake (mono ns) */
    void (*after)(void *arg);       /* after every wake-up; may be NULL */
    void *arg;                      /* passed to done, next and after */
    int cap_ms;                     /* longest single wait */
    size_t *freed_bytes;            /* trimmed when idle; may be NULL */
} telem_actor_loop_hooks_t;

/* A loop with no socket yet (`hooks` is copied; done and next are
 * required).  NULL when out of memory. */
telem_actor_loop_t *telem_actor_loop_new(const telem_actor_loop_hooks_t *hooks);

/* Frees the loop (not the sockets); accepts NULL or a pointer to NULL;
 * nulls the pointer. */
void telem_actor_loop_destroy(telem_actor_loop_t **self_p);

/* Polls `sock` (a zsock_t, or any reader zpoller accepts) and calls
 * fn(sock, arg) each time it is readable.  Returns 0 or TELEM_ENOMEM. */
int telem_actor_loop_add(telem_actor_loop_t *self, void *sock,
                         telem_actor_loop_fn *fn, void *arg);

/* Polls the actor's `pipe` at this point of the order (when several
 * sockets are readable at once, the one added first is served first).
 * Without this call telem_actor_loop_run() adds the pipe after the
 * sockets added before it.  Returns 0 or TELEM_ENOMEM. */
int telem_actor_loop_add_pipe(telem_actor_loop_t *self, zsock_t *pipe);

/* Runs the loop on the actor's `pipe` as described above.  Returns 1 when
 * it ended on "$TERM" (or a closed pipe), 0 when hooks.done() ended it, or
 * TELEM_ENOMEM (nothing ran; the pipe was not signalled). */
int telem_actor_loop_run(telem_actor_loop_t *self, zsock_t *pipe);

#endif
