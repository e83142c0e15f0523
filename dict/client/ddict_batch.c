/* ddict_batch.c - the batch container: operations, borrowed values and
 * results (see ddict_client_int.h).  The bottom of the client's files: it
 * calls none of them (ddict.c lists the order); ddict_batch_exec.c runs
 * batches.
 *
 * A batch keeps parallel arrays (ops, borrowed values, results) that grow
 * by doubling and are reused across executions, so a pipelined workload
 * allocates nothing per operation once warm.
 */
#include "ddict_client_int.h"

#include <stdlib.h>
#include <string.h>

#include "telem_grow.h"

_Static_assert(DDICT_VALUE_LIMIT == TELEM_DICT_VALUE_MAX,
               "the API's value limit is the wire's");

ddict_batch_t *
ddict_batch_new(void)
{
    return calloc(1, sizeof (ddict_batch_t));
}

void
ddict_batch_clear(ddict_batch_t *self)
{
    for (size_t i = 0; i < self->n; i++)
        zmq_msg_close(&self->rvals[i]);
    self->n = 0;
}

void
ddict_batch_destroy(ddict_batch_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ddict_batch_t *self = *self_p;
    ddict_batch_clear(self);
    free(self->ops);
    free(self->vals);
    free(self->vlens);
    free(self->target);
    free(self->codes);
    free(self->versions);
    free(self->rvals);
    free(self->into);
    free(self->dst);
    free(self->dcap);
    free(self->dlen);
    free(self->done);
    free(self);
    *self_p = NULL;
}

/* Grows one of the parallel arrays from the batch's capacity to room for
 * one more operation; `cap` gets the new capacity. */
#define S_GROW(p, cap) do {                                             \
        (cap) = b->cap;                                                 \
        if (telem_grow((void **) &(p), &(cap), b->n + 1, sizeof *(p),   \
                       64))                                             \
            return TELEM_ENOMEM;                                        \
    } while (0)

/* The capacity moves only when every array grew. */
static int
s_grow(ddict_batch_t *b)
{
    size_t cap;
    S_GROW(b->ops, cap);
    S_GROW(b->vals, cap);
    S_GROW(b->vlens, cap);
    S_GROW(b->target, cap);
    S_GROW(b->codes, cap);
    S_GROW(b->versions, cap);
    S_GROW(b->rvals, cap);
    S_GROW(b->into, cap);
    S_GROW(b->dst, cap);
    S_GROW(b->dcap, cap);
    S_GROW(b->dlen, cap);
    S_GROW(b->done, cap);
    b->cap = cap;
    return 0;
}
#undef S_GROW

int
dc_batch_add(ddict_batch_t *b, uint8_t op, const void *key, size_t klen,
             uint64_t arg, const void *val, size_t vlen, int target)
{
    if (klen > TELEM_DICT_KEY_MAX || vlen > DDICT_VALUE_LIMIT
        || (klen && !key) || (vlen && !val) || b->n >= TELEM_DICT_OPS_MAX * 16)
        return TELEM_EINVAL;
    if (b->n == b->cap && s_grow(b) != 0)
        return TELEM_ENOMEM;
    size_t i = b->n++;
    telem_dict_op_t o = { .op = op, .val = val != NULL, .key = key,
                          .klen = (uint32_t) klen, .arg = arg };
    b->ops[i] = o;
    b->vals[i] = val;
    b->vlens[i] = vlen;
    b->target[i] = target;
    b->into[i] = 0;
    b->dst[i] = NULL;
    b->dcap[i] = 0;
    b->dlen[i] = 0;
    zmq_msg_init(&b->rvals[i]);
    return 0;
}

int
dc_batch_add_into(ddict_batch_t *b, const void *key, size_t klen, void *dst,
                  size_t cap)
{
    if (cap && !dst)
        return TELEM_EINVAL;
    int rc = dc_batch_add(b, TELEM_DOP_GET, key, klen, DC_STREAM_FRAME, NULL,
                          0, -1);
    if (rc == 0) {
        b->into[b->n - 1] = 1;
        b->dst[b->n - 1] = dst;
        b->dcap[b->n - 1] = cap;
    }
    return rc;
}

int
ddict_batch_put(ddict_batch_t *self, const void *key, size_t klen,
                const void *val, size_t vlen)
{
    return dc_batch_add(self, TELEM_DOP_PUT, key, klen, 0, val ? val : "",
                        vlen, -1);
}

int
ddict_batch_get(ddict_batch_t *self, const void *key, size_t klen)
{
    return dc_batch_add(self, TELEM_DOP_GET, key, klen, 0, NULL, 0, -1);
}

int
ddict_batch_get_into(ddict_batch_t *self, const void *key, size_t klen,
                     void *buf, size_t cap)
{
    return dc_batch_add_into(self, key, klen, buf, cap);
}

int
ddict_batch_del(ddict_batch_t *self, const void *key, size_t klen)
{
    return dc_batch_add(self, TELEM_DOP_DEL, key, klen, 0, NULL, 0, -1);
}

size_t
ddict_batch_size(const ddict_batch_t *self)
{
    return self->n;
}

int
ddict_batch_result(const ddict_batch_t *b, size_t i, const void **val,
                   size_t *vlen, uint64_t *version)
{
    if (i >= b->n)
        return TELEM_EINVAL;
    if (val)
        *val = b->into[i] ? b->dst[i]
                         : zmq_msg_data((zmq_msg_t *) &b->rvals[i]);
    if (vlen)
        *vlen = b->into[i] ? b->dlen[i]
                          : zmq_msg_size((zmq_msg_t *) &b->rvals[i]);
    if (version)
        *version = b->versions[i];
    return b->codes[i];
}

