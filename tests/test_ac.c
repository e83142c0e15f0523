/* test_ac.c - the analysis client against fake nodes speaking the real
 * codec (tests/ac_fake.h): fan-out and merging of query replies, query
 * arguments reaching the nodes, status and control through the client,
 * and the node file.  Misbehaving nodes are test_ac_faults.c's.  The checks
 * are on behaviour (which data came, who is missing), not on timings.
 */
#include "ac.h"

/* A program that includes the public client header gets no wire types. */
#ifdef TELEM_PROTO_H
#error "ac.h pulls in the codec's header telem_proto.h"
#endif

#include "ac_fake.h"

/* ---- tests ------------------------------------------------------------- */

static void
test_fanout_merges(void *ctx)
{
    fake_t f[3];
    s_fake_start(&f[0], ctx, "alpha", FAKE_OK);
    s_fake_start(&f[1], ctx, "beta node", FAKE_OK);
    s_fake_start(&f[2], ctx, "\xce\xb3 #3,x=y", FAKE_OK);
    ac_t *ac = s_client(f, 3, 10000);
    CHECK_INT(ac_node_count(ac), 3);
    ac_result_t *r = NULL;

    /* The catalog as a fresh client's first call (series without points). */
    CHECK_INT(ac_metrics(ac, &r), 0);
    CHECK_INT(ac_result_nseries(r), 6);
    ac_result_destroy(&r);
    CHECK_STR(ac_node_name(ac, 1), "beta node");
    CHECK_STR(ac_node_endpoint(ac, 2), f[2].endpoint);
    CHECK_INT(ac_node_find(ac, "\xce\xb3 #3,x=y"), 2);
    CHECK_INT(ac_node_find(ac, "nope"), -1);

    CHECK_INT(ac_query(ac, NULL, &r), 0);
    CHECK_INT(ac_result_nseries(r), 6);
    CHECK_INT(ac_result_nmissing(r), 0);
    for (size_t i = 0; i < ac_result_nseries(r); i++) {
        const telem_series_t *s = ac_result_series(r, i);
        CHECK_STR(s->metric, i < 3 ? "cpu" : "mem");
        CHECK_STR(s_tag(s, "host"), ac_result_series_node(r, i));
        CHECK_INT(s->npoints, NPTS);
        CHECK(s->values[2] == 2000 + 2 + 0.5);   /* request 2 */
        CHECK(s->ts[0] < s->ts[1] && s->ts[1] < s->ts[2]);
    }
    CHECK_STR(ac_result_series(r, 3)->unit, "B");
    CHECK_INT(ac_result_series(r, 3)->type, TELEM_METRIC_COUNTER);
    CHECK(ac_result_series(r, 6) == NULL);
    /* Sorted by metric, then tags: "alpha" < "beta node" < "\xce\xb3..." */
    CHECK_STR(ac_result_series_node(r, 0), "alpha");
    CHECK_STR(ac_result_series_node(r, 2), "\xce\xb3 #3,x=y");
    ac_result_destroy(&r);
    CHECK(r == NULL);

    /* A metric subset, the latest point, the catalog. */
    const char *mem[] = { "mem" };
    ac_query_t q = { .metrics = mem, .nmetrics = 1,
                     .flags = TELEM_QUERY_LATEST };
    CHECK_INT(ac_query(ac, &q, &r), 0);
    CHECK_INT(ac_result_nseries(r), 3);
    for (size_t i = 0; i < ac_result_nseries(r); i++) {
        CHECK_STR(ac_result_series(r, i)->metric, "mem");
        CHECK_INT(ac_result_series(r, i)->npoints, 1);
        CHECK(ac_result_series(r, i)->values[0] == 3000 + 2 + 0.5);
    }
    ac_result_destroy(&r);
    CHECK_INT(ac_metrics(ac, &r), 0);
    CHECK_INT(ac_result_nseries(r), 6);
    CHECK_INT(ac_result_series(r, 0)->npoints, 0);
    CHECK_STR(ac_result_series(r, 0)->doc, "cpu busy");
    ac_result_destroy(&r);

    ac_close(&ac);
    for (int i = 0; i < 3; i++)
        s_fake_stop(&f[i]);
}

static void
test_query_arguments(void *ctx)
{
    fake_t f[2];
    s_fake_start(&f[0], ctx, "alpha", FAKE_OK);
    s_fake_start(&f[1], ctx, "beta node", FAKE_OK);
    ac_t *ac = s_client(f, 2, 10000);
    ac_result_t *r = NULL;

    /* A node subset; an unknown node is refused before sending. */
    const char *only[] = { "beta node", "beta node" };
    ac_query_t qn = { .nodes = only, .nnodes = 2 };
    CHECK_INT(ac_query(ac, &qn, &r), 0);
    CHECK_INT(ac_result_nseries(r), 2);
    CHECK_INT(s_count_from(r, "beta node"), 2);
    ac_result_destroy(&r);
    const char *bad[] = { "gamma" };
    ac_query_t qb = { .nodes = bad, .nnodes = 1 };
    CHECK_INT(ac_query(ac, &qb, &r), TELEM_ENOTFOUND);
    CHECK(r == NULL);

    /* What goes on the wire: relative and default times, filters. */
    telem_tag_t tags[2] = { { "gpu", "0" }, { "rank", "*" } };
    ac_query_t qt = { .start_ns = -60 * TELEM_NS_PER_SEC, .max_points = 7,
                      .tags = tags, .ntags = 2 };
    int64_t now = telem_now_ns();
    CHECK_INT(ac_query(ac, &qt, &r), 0);
    ac_result_destroy(&r);
    pthread_mutex_lock(&f[0].mu);
    CHECK(llabs(f[0].q.start_ns - (now - 60 * TELEM_NS_PER_SEC))
          < 10 * TELEM_NS_PER_SEC);
    CHECK_INT(f[0].q.end_ns, 0);
    CHECK_INT(f[0].q.max_points, 7);
    CHECK_INT(f[0].q.nfilters, 2);
    CHECK_STR(f[0].filter[1][0], "rank");
    CHECK_STR(f[0].filter[1][1], "*");
    pthread_mutex_unlock(&f[0].mu);
    ac_query_t qd = { 0 };
    now = telem_now_ns();
    CHECK_INT(ac_query(ac, &qd, &r), 0);
    ac_result_destroy(&r);
    pthread_mutex_lock(&f[1].mu);
    CHECK(llabs(f[1].q.start_ns - (now - AC_WINDOW_DEFAULT_NS))
          < 10 * TELEM_NS_PER_SEC);
    pthread_mutex_unlock(&f[1].mu);
    ac_query_t qbad = { .start_ns = 20, .end_ns = 10 };
    CHECK_INT(ac_query(ac, &qbad, &r), TELEM_EINVAL);
    CHECK(r == NULL);

    /* A result outlives its client. */
    CHECK_INT(ac_query(ac, NULL, &r), 0);
    ac_close(&ac);
    CHECK(ac == NULL);
    CHECK_STR(ac_result_series(r, 3)->metric, "mem");
    ac_result_destroy(&r);
    for (int i = 0; i < 2; i++)
        s_fake_stop(&f[i]);
}

static void
test_status_and_control(void *ctx)
{
    fake_t f[3];
    s_fake_start(&f[0], ctx, "a", FAKE_OK);
    s_fake_start(&f[1], ctx, "b", FAKE_SILENT);
    s_fake_start(&f[2], ctx, "c", FAKE_ERROR);
    ac_t *ac = s_client(f, 3, 300);
    ac_status_result_t *r = NULL;
    CHECK_INT(ac_status(ac, &r), TELEM_EPARTIAL);
    CHECK_INT(ac_status_result_count(r), 3);
    CHECK_INT(ac_status_result_nmissing(r), 2);
    CHECK_STR(ac_status_result_node(r, 0), "a");
    const telem_status_t *st = ac_status_result_status(r, 0);
    CHECK(st != NULL);
    if (st) {
        CHECK_STR(st->node, "a");
        CHECK_INT(st->level, 2);
        CHECK_INT(st->nseries, 2);
        CHECK_INT(st->pid, 42);
    }
    CHECK_INT(ac_status_result_code(r, 0), 0);
    CHECK(ac_status_result_status(r, 1) == NULL);
    CHECK_INT(ac_status_result_code(r, 1), TELEM_ETIMEDOUT);
    CHECK_INT(ac_status_result_code(r, 2), TELEM_EINVAL);
    CHECK_STR(ac_status_result_message(r, 2), "bad query");
    ac_status_result_destroy(&r);
    CHECK(r == NULL);

    /* One node only. */
    CHECK_INT(ac_control(ac, 0, TELEM_CTL_SET_LEVEL, 3, 0, &r), 0);
    CHECK_INT(ac_status_result_count(r), 1);
    CHECK_STR(ac_status_result_node(r, 0), "a");
    CHECK_INT(ac_status_result_status(r, 0)->level, 3);
    ac_status_result_destroy(&r);
    pthread_mutex_lock(&f[0].mu);
    CHECK_INT(f[0].last_op, TELEM_CTL_SET_LEVEL);
    CHECK_INT(f[0].last_arg, 3);
    pthread_mutex_unlock(&f[0].mu);
    CHECK_INT(ac_control(ac, 0, TELEM_CTL_SYNC, 99, 0, &r), 0);
    CHECK_INT(ac_status_result_synced(r, 0), 1);
    ac_status_result_destroy(&r);
    CHECK_INT(ac_control(ac, 3, TELEM_CTL_STATUS, 0, 0, &r), TELEM_EINVAL);
    CHECK(r == NULL);
    ac_close(&ac);
    for (int i = 0; i < 3; i++)
        s_fake_stop(&f[i]);
}

/* ---- node files -------------------------------------------------------- */

static void
s_write(const char *path, const char *text, size_t len)
{
    FILE *fp = fopen(path, "w");
    if (!fp || fwrite(text, 1, len, fp) != len) {
        perror(path);
        exit(1);
    }
    fclose(fp);
}

static int
s_check_text(const char *dir, const char *text, size_t len, char *why,
             size_t *n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/nodes", dir);
    s_write(path, text, len);
    return ac_nodefile_check(path, n, why, 256);
}

#define TEXT(s) s, sizeof(s) - 1

static void
test_nodefile(void *ctx)
{
    char dir[] = "/tmp/test_ac.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    char why[256], path[512];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/nodes", dir);
    CHECK_INT(s_check_text(dir, TEXT(
        "# the job's nodes\n"
        "\n"
        "alpha\ttcp://127.0.0.1:5555\n"
        "beta node\t ipc:///tmp/x.sock \r\n"
        "   \n"
        "#x\ty\n"
        "\xce\xb3:odd,name=1 #\ttcp://127.0.0.1:6000"), why, &n), 0);
    CHECK_INT(n, 3);
    int err = 1;
    ac_t *ac = ac_connect(path, 0, &err);
    CHECK_INT(err, 0);
    CHECK_INT(ac_node_count(ac), 3);
    CHECK_STR(ac_node_name(ac, 1), "beta node");
    CHECK_STR(ac_node_endpoint(ac, 1), "ipc:///tmp/x.sock");
    CHECK_STR(ac_node_name(ac, 2), "\xce\xb3:odd,name=1 #");
    ac_close(&ac);
    /* The default path comes from $TELEM_NODEFILE. */
    setenv("TELEM_NODEFILE", path, 1);
    ac = ac_connect(NULL, 0, &err);
    CHECK_INT(ac_node_count(ac), 3);
    ac_close(&ac);
    unsetenv("TELEM_NODEFILE");

    /* A node file that points at live nodes. */
    fake_t f;
    s_fake_start(&f, ctx, "live one", FAKE_OK);
    char text[512];
    int len = snprintf(text, sizeof text, "# test\nlive one\t%s\n", f.endpoint);
    s_write(path, text, (size_t) len);
    ac = ac_connect(path, 10000, &err);
    ac_result_t *r = NULL;
    CHECK_INT(ac_query(ac, NULL, &r), 0);
    CHECK_INT(s_count_from(r, "live one"), 2);
    ac_result_destroy(&r);
    ac_close(&ac);
    s_fake_stop(&f);
    unlink(path);
    rmdir(dir);
}

static void
test_nodefile_errors(void)
{
    char dir[] = "/tmp/test_ac.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    char why[256], path[512];
    size_t n = 0;
    int err = 0;
    snprintf(path, sizeof path, "%s/nodes", dir);
    ac_t *ac;

    CHECK_INT(s_check_text(dir, TEXT("a\ttcp://h:1\nb tcp://h:2\n"), why, &n),
              TELEM_EINVAL);
    CHECK(strstr(why, ":2:") && strstr(why, "tab"));
    CHECK_INT(s_check_text(dir, TEXT("a/b\ttcp://h:1\n"), why, &n),
              TELEM_EINVAL);
    CHECK_INT(s_check_text(dir, TEXT("..\ttcp://h:1\n"), why, &n),
              TELEM_EINVAL);
    CHECK_INT(s_check_text(dir, TEXT("a\ttcp://h:1\na\ttcp://h:2\n"), why, &n),
              TELEM_EINVAL);
    CHECK(strstr(why, "duplicate") != NULL);
    CHECK_INT(s_check_text(dir, TEXT("a\th:1\n"), why, &n), TELEM_EINVAL);
    CHECK_INT(s_check_text(dir, TEXT("a\t\n"), why, &n), TELEM_EINVAL);
    CHECK_INT(s_check_text(dir, TEXT("\ttcp://h:1\n"), why, &n), TELEM_EINVAL);
    CHECK_INT(s_check_text(dir, TEXT("a\ttcp://h:1 x\n"), why, &n),
              TELEM_EINVAL);
    CHECK_INT(s_check_text(dir, TEXT("a\0b\ttcp://h:1\n"), why, &n),
              TELEM_EINVAL);
    CHECK_INT(s_check_text(dir, TEXT("# nothing\n\n"), why, &n),
              TELEM_ENOTFOUND);
    ac = ac_connect(path, 0, &err);
    CHECK(ac == NULL);
    CHECK_INT(err, TELEM_ENOTFOUND);
    unlink(path);
    CHECK_INT(ac_nodefile_check(path, &n, why, sizeof why), TELEM_ENOTFOUND);
    CHECK(strstr(why, path) != NULL);
    ac = ac_connect(path, 0, &err);
    CHECK(ac == NULL);
    CHECK_INT(err, TELEM_ENOTFOUND);

    /* Same rules for a list given in code. */
    const char *names[] = { "x", "x/y" };
    const char *eps[] = { "tcp://h:1", "tcp://h:2" };
    CHECK(ac_connect_nodes(names, eps, 2, 0, &err) == NULL);
    CHECK_INT(err, TELEM_EINVAL);
    CHECK(ac_connect_nodes(names, eps, 0, 0, &err) == NULL);
    CHECK_INT(err, TELEM_ENOTFOUND);

    unlink(path);
    rmdir(dir);
}

/* The routing id under which fake f saw the last request. */
static size_t
s_peer(fake_t *f, unsigned char *out)
{
    pthread_mutex_lock(&f->mu);
    size_t n = f->npeer;
    memcpy(out, f->peer, n);
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* ac_set_nodes: the new list is what the client asks, and a node listed
 * before and after keeps its connection (the same routing id at the
 * node); a bad list leaves the client as it was. */
static void
test_set_nodes(void *ctx)
{
    fake_t f[3];
    s_fake_start(&f[0], ctx, "alpha", FAKE_OK);
    s_fake_start(&f[1], ctx, "beta", FAKE_OK);
    s_fake_start(&f[2], ctx, "gamma", FAKE_OK);
    ac_t *ac = s_client(f, 2, 10000);
    ac_result_t *r = NULL;
    CHECK_INT(ac_query(ac, NULL, &r), 0);
    CHECK_INT(ac_result_nseries(r), 4);
    ac_result_destroy(&r);
    unsigned char before[32], after[32];
    size_t nb = s_peer(&f[1], before);
    CHECK(nb > 0);

    const char *names[] = { "gamma", "beta" };
    const char *eps[] = { f[2].endpoint, f[1].endpoint };
    CHECK_INT(ac_set_nodes(ac, names, eps, 2), 0);
    CHECK_INT(ac_node_count(ac), 2);
    CHECK_STR(ac_node_name(ac, 0), "gamma");
    CHECK_INT(ac_node_find(ac, "alpha"), -1);
    int before_alpha = f[0].nrequests;
    CHECK_INT(ac_query(ac, NULL, &r), 0);
    CHECK_INT(ac_result_nseries(r), 4);
    CHECK_INT(s_count_from(r, "gamma"), 2);
    CHECK_INT(s_count_from(r, "beta"), 2);
    CHECK_INT(s_count_from(r, "alpha"), 0);
    ac_result_destroy(&r);
    CHECK_INT(f[0].nrequests, before_alpha);
    size_t na = s_peer(&f[1], after);
    CHECK(na == nb && memcmp(before, after, nb) == 0);

    /* Same name, new endpoint: a new connection, to the new place (where
       another node answers, which the client refuses to pass off). */
    const char *moved[] = { f[0].endpoint };
    const char *beta[] = { "beta" };
    CHECK_INT(ac_set_nodes(ac, beta, moved, 1), 0);
    CHECK_INT(ac_query(ac, NULL, &r), TELEM_ECONN);
    CHECK(r == NULL || (ac_result_nmissing(r) == 1
                        && strstr(ac_result_missing_message(r, 0), "alpha")));
    ac_result_destroy(&r);
    CHECK_INT(f[0].nrequests, before_alpha + 1);

    /* Refused lists change nothing. */
    const char *dup[] = { "x", "x" }, *dup_eps[] = { "tcp://h:1", "tcp://h:2" };
    CHECK_INT(ac_set_nodes(ac, dup, dup_eps, 2), TELEM_EINVAL);
    const char *bad[] = { "a/b" };
    CHECK_INT(ac_set_nodes(ac, bad, moved, 1), TELEM_EINVAL);
    CHECK_INT(ac_set_nodes(NULL, beta, moved, 1), TELEM_EINVAL);
    CHECK_INT(ac_node_count(ac), 1);
    CHECK_STR(ac_node_endpoint(ac, 0), f[0].endpoint);

    /* No nodes at all, then some again. */
    CHECK_INT(ac_set_nodes(ac, NULL, NULL, 0), 0);
    CHECK_INT(ac_node_count(ac), 0);
    CHECK_INT(ac_set_nodes(ac, names, eps, 2), 0);
    CHECK_INT(ac_query(ac, NULL, &r), 0);
    CHECK_INT(ac_result_nseries(r), 4);
    ac_result_destroy(&r);
    ac_close(&ac);
    for (int i = 0; i < 3; i++)
        s_fake_stop(&f[i]);
}

int
main(void)
{
    void *ctx = zmq_ctx_new();
    test_fanout_merges(ctx);
    test_query_arguments(ctx);
    test_status_and_control(ctx);
    test_nodefile(ctx);
    test_nodefile_errors();
    test_set_nodes(ctx);
    zmq_ctx_term(ctx);
    return check_report("test_ac");
}
