/* test_keys.c - the job's key pair and the ZAP handler (telem_keys.h,
 * telem_zap.h), and CURVE through the socket factory.
 *
 *   - a key file is made 0600 in a 0700 directory and loads back the
 *     same pair; one open to group or other, or in a directory others
 *     can write, is refused (TELEM_EPERM); a missing one is
 *     TELEM_ENOTFOUND; malformed texts (no key, a key twice, a short key,
 *     a stray line, a public key that is not the secret's, a huge file)
 *     are refused with their reason;
 *   - $TELEM_KEYS, keys/ beside a node file and RUNDIR/keys are found in
 *     that order, and an empty
 *     $TELEM_KEYS means none; a TCP bind off loopback without keys is
 *     refused unless insecure; the loopback test knows its addresses;
 *   - with the ZAP handler up, a factory ROUTER on TCP with the keys
 *     answers a DEALER holding them, and never a plain DEALER, nor one
 *     holding another pair (the handler counts and refuses it); an ipc
 *     endpoint bound on the same ROUTER after the TCP one stays plain;
 *   - fail closed: a CURVE server in a process whose ZAP handler is gone
 *     lets no client in.
 */
#include "tmpdir.h"

#include <czmq.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "telem_error.h"
#include "telem_keys.h"
#include "telem_sock.h"
#include "telem_zap.h"

static char s_dir[128];

static void
test_create_load(void)
{
    char kd[256], path[300], why[512] = "";
    int err = -1;
    snprintf(kd, sizeof kd, "%s/keys", s_dir);
    telem_keys_t *k = telem_keys_create(kd, &err, why, sizeof why);
    CHECK(k != NULL);
    CHECK_RC(err, 0);
    struct stat st;
    snprintf(path, sizeof path, "%s/job.key", kd);
    CHECK(stat(kd, &st) == 0 && (st.st_mode & 0777) == 0700);
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    telem_keys_t *l = telem_keys_load(kd, &err, why, sizeof why);
    CHECK(l != NULL);
    CHECK_STR(l ? telem_keys_public(l) : NULL, k ? telem_keys_public(k) : "");
    CHECK_STR(l ? telem_keys_dir(l) : NULL, kd);
    telem_keys_destroy(&l);
    CHECK(l == NULL);
    /* A file others can read is refused, and so is one in a directory
       others can write to. */
    chmod(path, 0640);
    CHECK(telem_keys_load(kd, &err, why, sizeof why) == NULL);
    CHECK_RC(err, TELEM_EPERM);
    CHECK(strstr(why, "0640") != NULL);
    chmod(path, 0600);
    chmod(kd, 0777);
    CHECK(telem_keys_load(kd, &err, why, sizeof why) == NULL);
    CHECK_RC(err, TELEM_EPERM);
    chmod(kd, 0700);
    /* A link in place of the file is not followed. */
    char other[300];
    snprintf(other, sizeof other, "%s/other.key", kd);
    CHECK(rename(path, other) == 0 && symlink(other, path) == 0);
    CHECK(telem_keys_load(kd, &err, why, sizeof why) == NULL);
    CHECK_RC(err, TELEM_EPERM);
    unlink(path);
    CHECK(telem_keys_load(kd, &err, why, sizeof why) == NULL);
    CHECK_RC(err, TELEM_ENOTFOUND);
    CHECK(rename(other, path) == 0);
    /* Removal takes the file and the directory. */
    CHECK_RC(telem_keys_remove(kd), 0);
    CHECK(access(kd, F_OK) != 0);
    CHECK_RC(telem_keys_remove(kd), 0);
    telem_keys_destroy(&k);
    telem_keys_destroy(&k);
}

static void
s_bad(const char *text, size_t len, int code, const char *reason)
{
    char why[256] = "";
    int err = 0;
    telem_keys_t *k = telem_keys_parse(text, len, &err, why, sizeof why);
    CHECK(k == NULL);
    CHECK_RC(err, code);
    if (!strstr(why, reason))
        fprintf(stderr, "reason '%s' lacks '%s'\n", why, reason);
    CHECK(strstr(why, reason) != NULL);
    telem_keys_destroy(&k);
}

static void
test_parse(void)
{
    char pub[41], sec[41], pub2[41], sec2[41], text[512];
    CHECK_RC(zmq_curve_keypair(pub, sec), 0);
    CHECK_RC(zmq_curve_keypair(pub2, sec2), 0);
    snprintf(text, sizeof text, "# c\r\n\npublic %s\r\nsecret %s", pub, sec);
    int err = -1;
    telem_keys_t *k = telem_keys_parse(text, strlen(text), &err, NULL, 0);
    CHECK(k != NULL);
    CHECK_STR(k ? telem_keys_public(k) : NULL, pub);
    telem_keys_destroy(&k);
    s_bad("", 0, TELEM_EINVAL, "needs a 'public' and a 'secret'");
    snprintf(text, sizeof text, "public %s\n", pub);
    s_bad(text, strlen(text), TELEM_EINVAL, "needs a 'public'");
    snprintf(text, sizeof text, "public %s\npublic %s\n", pub, pub);
    s_bad(text, strlen(text), TELEM_EINVAL, "line 2: the public key is "
          "given twice");
    snprintf(text, sizeof text, "public %.39s\nsecret %s\n", pub, sec);
    s_bad(text, strlen(text), TELEM_EINVAL, "line 1: expected");
    snprintf(text, sizeof text, "public %s\nsecret %s\nkey x\n", pub, sec);
    s_bad(text, strlen(text), TELEM_EINVAL, "line 3: expected");
    snprintf(text, sizeof text, "public %s\nsecret %s\n", pub2, sec);
    s_bad(text, strlen(text), TELEM_EINVAL, "not the secret key's");
    snprintf(text, sizeof text, "public %s\nsecret %.39s~\n", pub, sec);
    s_bad(text, strlen(text), TELEM_EINVAL, "line 2: expected");
    /* A NUL inside a key is not Z85. */
    snprintf(text, sizeof text, "public %s\nsecret %s\n", pub, sec);
    text[10] = '\0';
    s_bad(text, strlen(pub) + strlen(sec) + 16, TELEM_EINVAL,
          "line 1: expected");
    char *big = calloc(1, TELEM_KEYS_FILE_MAX + 2);
    if (big) {
        memset(big, '#', TELEM_KEYS_FILE_MAX + 1);
        s_bad(big, TELEM_KEYS_FILE_MAX + 1, TELEM_ETOOBIG, "at most");
    }
    free(big);
}

static void
test_locate(void)
{
    char rundir[256], dir[300], why[512];
    snprintf(rundir, sizeof rundir, "%s/run", s_dir);
    CHECK(mkdir(rundir, 0700) == 0);
    unsetenv(TELEM_KEYS_ENV);
    CHECK_RC(telem_keys_locate(rundir, NULL, dir, sizeof dir), 0);
    CHECK_STR(dir, "");
    telem_keys_t *k = NULL;
    CHECK_RC(telem_keys_find(rundir, NULL, &k, why, sizeof why), 0);
    CHECK(k == NULL);
    char kd[300];
    snprintf(kd, sizeof kd, "%s/keys", rundir);
    telem_keys_t *made = telem_keys_create(kd, NULL, why, sizeof why);
    CHECK_RC(telem_keys_locate(rundir, NULL, dir, sizeof dir), 1);
    CHECK_STR(dir, kd);
    CHECK_RC(telem_keys_find(rundir, NULL, &k, why, sizeof why), 0);
    CHECK(k != NULL && made != NULL
          && strcmp(telem_keys_public(k), telem_keys_public(made)) == 0);
    telem_keys_destroy(&k);
    /* Beside a node file, before the run directory. */
    char jobdir[256], jobkeys[300], nodefile[300];
    snprintf(jobdir, sizeof jobdir, "%s/job", s_dir);
    snprintf(jobkeys, sizeof jobkeys, "%s/keys", jobdir);
    snprintf(nodefile, sizeof nodefile, "%s/nodes", jobdir);
    CHECK(mkdir(jobdir, 0700) == 0);
    CHECK_RC(telem_keys_locate(rundir, nodefile, dir, sizeof dir), 1);
    CHECK_STR(dir, kd);                 /* none beside it yet */
    telem_keys_t *near = telem_keys_create(jobkeys, NULL, why, sizeof why);
    CHECK_RC(telem_keys_locate(rundir, nodefile, dir, sizeof dir), 1);
    CHECK_STR(dir, jobkeys);
    CHECK_RC(telem_keys_find(rundir, nodefile, &k, why, sizeof why), 0);
    CHECK(k && near && strcmp(telem_keys_public(k),
                              telem_keys_public(near)) == 0);
    telem_keys_destroy(&k);
    telem_keys_destroy(&near);
    /* $TELEM_KEYS wins; empty means none on purpose. */
    setenv(TELEM_KEYS_ENV, "/nonexistent/keys", 1);
    CHECK_RC(telem_keys_locate(rundir, NULL, dir, sizeof dir), 1);
    CHECK_STR(dir, "/nonexistent/keys");
    CHECK_RC(telem_keys_find(rundir, NULL, &k, why, sizeof why), TELEM_ENOTFOUND);
    setenv(TELEM_KEYS_ENV, "", 1);
    CHECK_RC(telem_keys_locate(rundir, NULL, dir, sizeof dir), 0);
    unsetenv(TELEM_KEYS_ENV);
    /* A bind off loopback needs keys, or --insecure. */
    CHECK_RC(telem_keys_for_bind(NULL, 0, s_dir, "tcp://10.1.2.3:0", &k, why,
                                 sizeof why), TELEM_EPERM);
    CHECK(strstr(why, "--keys") != NULL);
    CHECK_RC(telem_keys_for_bind(NULL, 1, s_dir, "tcp://10.1.2.3:0", &k, why,
                                 sizeof why), 0);
    CHECK(k == NULL);
    CHECK_RC(telem_keys_for_bind(NULL, 0, s_dir, "tcp://127.0.0.1:0", &k,
                                 why, sizeof why), 0);
    CHECK_RC(telem_keys_for_bind(NULL, 0, rundir, "tcp://10.1.2.3:0", &k,
                                 why, sizeof why), 0);
    CHECK(k != NULL);
    telem_keys_destroy(&k);
    CHECK_RC(telem_keys_for_bind("/nonexistent", 0, rundir, NULL, &k, why,
                                 sizeof why), TELEM_ENOTFOUND);
    telem_keys_destroy(&made);
    CHECK(telem_keys_loopback("127.0.0.1"));
    CHECK(telem_keys_loopback("127.3.4.5"));
    CHECK(telem_keys_loopback("tcp://127.0.0.1:5555"));
    CHECK(telem_keys_loopback("tcp://[::1]:0"));
    CHECK(telem_keys_loopback("::1"));
    CHECK(telem_keys_loopback("localhost"));
    CHECK(!telem_keys_loopback("0.0.0.0"));
    CHECK(!telem_keys_loopback("tcp://0.0.0.0:0"));
    CHECK(!telem_keys_loopback("tcp://[::]:0"));
    CHECK(!telem_keys_loopback("10.0.0.1"));
    CHECK(!telem_keys_loopback("128.0.0.1"));
    CHECK(!telem_keys_loopback("node001"));
}

/* Sends "ping" from DEALER `d` and waits up to `ms` for the ROUTER to
 * see it and answer; 1 when the answer came back.  Destroys d. */
static int
s_ping(zsock_t *router, zsock_t *d, int ms)
{
    if (!d)
        return 0;
    zstr_send(d, "ping");
    int ok = 0;
    zpoller_t *p = zpoller_new(router, d, NULL);
    int64_t end = zclock_mono() + ms;
    while (zclock_mono() < end) {
        void *which = zpoller_wait(p, 50);
        if (which == router) {
            zmsg_t *m = zmsg_recv(router);
            zmsg_send(&m, router);          /* echo to its identity */
        } else if (which == d) {
            char *s = zstr_recv(d);
            ok = s && strcmp(s, "ping") == 0;
            zstr_free(&s);
            break;
        }
    }
    zpoller_destroy(&p);
    zsock_destroy(&d);
    return ok;
}

/* s_ping() from a factory DEALER holding `keys` (NULL: plain). */
static int
s_round_trip(zsock_t *router, const char *ep, const telem_keys_t *keys,
             int ms)
{
    telem_sock_opts_t o = {
        .max_msg = 4096, .sndhwm = TELEM_SOCK_KEEP, .rcvhwm = TELEM_SOCK_KEEP,
        .linger_ms = 0, .sndtimeo_ms = TELEM_SOCK_KEEP, .keys = keys,
    };
    return s_ping(router, telem_sock_new_connect(ZMQ_DEALER, &o, ep), ms);
}

/* s_ping() from a DEALER that expects the server key of `server` but
 * holds the pair of `own` (read back from its key file). */
static int
s_round_trip_as(zsock_t *router, const char *ep, const telem_keys_t *server,
                const telem_keys_t *own, int ms)
{
    char path[300], line[128], sec[41] = "";
    snprintf(path, sizeof path, "%s/job.key", telem_keys_dir(own));
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "secret ", 7) == 0)
            snprintf(sec, sizeof sec, "%.40s", line + 7);
    if (f)
        fclose(f);
    zsock_t *d = zsock_new(ZMQ_DEALER);
    if (!d)
        return 0;
    zsock_set_linger(d, 0);
    zsock_set_curve_serverkey(d, telem_keys_public(server));
    zsock_set_curve_publickey(d, telem_keys_public(own));
    zsock_set_curve_secretkey(d, sec);
    zsock_connect(d, "%s", ep);
    return s_ping(router, d, ms);
}

static void
test_curve(void)
{
    char kd[256], kd2[256], why[512], ep[128], ipc[300], ipc_ep[300];
    snprintf(kd, sizeof kd, "%s/k1", s_dir);
    snprintf(kd2, sizeof kd2, "%s/k2", s_dir);
    telem_keys_t *k = telem_keys_create(kd, NULL, why, sizeof why);
    telem_keys_t *other = telem_keys_create(kd2, NULL, why, sizeof why);
    CHECK(k && other);
    if (!k || !other)
        goto out;
    int err = -1;
    telem_zap_t *zap = telem_zap_new(k, &err);
    CHECK(zap != NULL);
    CHECK_RC(err, 0);
    /* A second handler in the same process cannot bind. */
    telem_zap_t *zap2 = telem_zap_new(k, &err);
    CHECK(zap2 == NULL);
    CHECK_RC(err, TELEM_ESTATE);
    telem_sock_opts_t o = {
        .max_msg = 4096, .sndhwm = TELEM_SOCK_KEEP, .rcvhwm = TELEM_SOCK_KEEP,
        .linger_ms = 0, .sndtimeo_ms = TELEM_SOCK_KEEP, .keys = k,
    };
    snprintf(ipc, sizeof ipc, "ipc://%s/r.sock", s_dir);
    zsock_t *r = telem_sock_new_bind(ZMQ_ROUTER, &o, ipc, ipc_ep,
                                     sizeof ipc_ep, &err);
    CHECK(r != NULL);
    CHECK_RC(telem_sock_bind(r, "tcp://127.0.0.1:0", k, ep, sizeof ep), 0);
    /* Plain after CURVE cannot be: the ZAP domain stays on the socket. */
    snprintf(ipc, sizeof ipc, "ipc://%s/late.sock", s_dir);
    CHECK_RC(telem_sock_bind(r, ipc, k, NULL, 0), TELEM_EIO);
    CHECK(s_round_trip(r, ep, k, 5000));
    CHECK(!s_round_trip(r, ep, NULL, 300));
    /* A client that knows the server's key but holds another pair gets
       as far as the ZAP handler, which refuses it. */
    CHECK(!s_round_trip_as(r, ep, k, other, 500));
    uint64_t allowed = 0, refused = 0;
    for (int i = 0; i < 100 && refused == 0; i++) {
        telem_zap_counts(zap, &allowed, &refused);
        zclock_sleep(10);
    }
    CHECK(allowed >= 1);
    CHECK_INT(refused, 1);
    /* The ipc endpoint of the same socket is plain. */
    CHECK(s_round_trip(r, ipc_ep, NULL, 5000));
    /* Fail closed: with the handler gone nobody gets in. */
    telem_zap_destroy(&zap);
    CHECK(zap == NULL);
    CHECK(!s_round_trip(r, ep, k, 500));
    zsock_destroy(&r);
out:
    telem_keys_destroy(&k);
    telem_keys_destroy(&other);
}

int
main(void)
{
    if (test_tmpdir(s_dir, sizeof s_dir, "test_keys") != 0) {
        perror("mkdtemp");
        return 1;
    }
    test_create_load();
    test_parse();
    test_locate();
    test_curve();
    test_rmtree(s_dir);
    return check_report("test_keys");
}
