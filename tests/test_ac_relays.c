/* test_ac_relays.c - the analysis client's relays file
 * (analysis/ac/ac_relays.c): what it accepts, every malformed form it
 * refuses with the line and the reason, where a client finds it
 * ($TELEM_RELAYS, beside the node file), and what ac_connect() makes of
 * it: relays tied to the nodes they cover, unknown names ignored, a
 * malformed file refused and explained by ac_nodefile_check().
 */
#include "tmpdir.h"

#include <string.h>
#include <unistd.h>

#include "ac_internal.h"
#include "check.h"

static int
s_parse(const char *text, ac__relay_entry_t **r, size_t *n, char *why,
        size_t why_size)
{
    return ac__relays_parse(text, strlen(text), "relays", r, n, why,
                            why_size);
}

static void
test_accepts(void)
{
    ac__relay_entry_t *r = NULL;
    size_t n = 0;
    char why[256];
    const char *text = "# relays\n"
                       "r1\ttcp://127.0.0.1:5001\tn1,n2,n3\n"
                       "\n   \n"
                       "relay two\tipc:///tmp/r2.sock\tnode four\r\n"
                       "r3\ttcp://[::1]:7\tn5";   /* no final newline */
    CHECK_RC(s_parse(text, &r, &n, why, sizeof why), 0);
    CHECK_INT(n, 3);
    if (n == 3) {
        CHECK_STR(r[0].name, "r1");
        CHECK_STR(r[0].endpoint, "tcp://127.0.0.1:5001");
        CHECK_INT(r[0].nnodes, 3);
        CHECK_STR(r[0].nodes[2], "n3");
        CHECK_STR(r[1].name, "relay two");
        CHECK_STR(r[1].nodes[0], "node four");
        CHECK_STR(r[2].nodes[0], "n5");
    }
    ac__relays_free(&r, n);
    CHECK(r == NULL);
    CHECK_RC(s_parse("", &r, &n, why, sizeof why), 0);
    CHECK_INT(n, 0);
    ac__relays_free(&r, n);
    CHECK_RC(s_parse("# only a comment\n", &r, &n, why, sizeof why), 0);
    CHECK_INT(n, 0);
    ac__relays_free(&r, n);
}

static void
test_refuses(void)
{
    static const struct { const char *text, *reason; } bad[] = {
        { "r1 tcp://127.0.0.1:1 n1\n", "relays:1: not <relay> TAB" },
        { "r1\ttcp://127.0.0.1:1\n", "relays:1: not <relay> TAB" },
        { "#\nr1\tnowhere\tn1\n", "relays:2: endpoint is not" },
        { "r1\ttcp://127.0.0.1:1\t\n", "empty node name" },
        { "r1\ttcp://127.0.0.1:1\tn1,,n2\n", "empty node name" },
        { "r1\ttcp://127.0.0.1:1\tn1,\n", "empty node name" },
        { "r1\ttcp://127.0.0.1:1\tn1,a/b\n", "invalid node name" },
        { "a/b\ttcp://127.0.0.1:1\tn1\n", "invalid node name" },
        { "\ttcp://127.0.0.1:1\tn1\n", "empty node name" },
        { "r1\ttcp://127.0.0.1:1\tn1\tn2\n", "invalid node name" },
        { "r1\ttcp://127.0.0.1:1\tn1\nr1\ttcp://127.0.0.1:2\tn2\n",
          "relay 'r1' is listed twice" },
        { "r1\ttcp://127.0.0.1:1\tn1,n2\nr2\ttcp://127.0.0.1:2\tn2\n",
          "node 'n2' is in more than one group" },
        { "r1\ttcp://127.0.0.1:1\tn1,n1\n", "node 'n1' is in more" },
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ac__relay_entry_t *r = NULL;
        size_t n = 7;
        char why[256] = "";
        int rc = s_parse(bad[k].text, &r, &n, why, sizeof why);
        CHECK_RC(rc, TELEM_EINVAL);
        CHECK(r == NULL && n == 0);
        if (!strstr(why, bad[k].reason)) {
            fprintf(stderr, "case %zu: '%s' does not say '%s'\n", k, why,
                    bad[k].reason);
            CHECK(0);
        }
    }
    /* A NUL byte inside a line. */
    ac__relay_entry_t *r = NULL;
    size_t n = 0;
    char why[256];
    const char nul[] = "r1\ttcp://127.0.0.1:1\tn\0 1\n";
    CHECK_RC(ac__relays_parse(nul, sizeof nul - 1, "relays", &r, &n, why,
                              sizeof why), TELEM_EINVAL);
    CHECK(strstr(why, "NUL") != NULL);
}

static void
s_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void
test_connect(const char *dir)
{
    char nodes[512], relays[512], other[512], why[256];
    snprintf(nodes, sizeof nodes, "%s/nodes", dir);
    snprintf(relays, sizeof relays, "%s/relays", dir);
    snprintf(other, sizeof other, "%s/elsewhere", dir);
    s_write(nodes, "n1\ttcp://127.0.0.1:1\nn2\ttcp://127.0.0.1:2\n"
                   "n3\ttcp://127.0.0.1:3\n");
    unsetenv("TELEM_RELAYS");
    unsetenv("TELEM_KEYS");
    int err = 0;
    /* No relays file: no relays. */
    ac_t *ac = ac_connect(nodes, 100, &err);
    CHECK(ac != NULL);
    CHECK_INT(ac_relay_count(ac), 0);
    ac_close(&ac);
    /* Beside the node file; a node it names that is not a node of ours is
       ignored, a relay left without nodes is dropped. */
    s_write(relays, "r1\ttcp://127.0.0.1:9\tn1,n3,gone\n"
                    "r2\ttcp://127.0.0.1:8\tgone2\n");
    ac = ac_connect(nodes, 100, &err);
    CHECK(ac != NULL);
    CHECK_INT(ac_relay_count(ac), 1);
    CHECK_STR(ac_relay_name(ac, 0), "r1");
    CHECK_STR(ac_relay_endpoint(ac, 0), "tcp://127.0.0.1:9");
    CHECK(ac_relay_name(ac, 1) == NULL);
    CHECK_RC(ac_set_relay_backoff(ac, -1), TELEM_EINVAL);
    CHECK_RC(ac_set_relay_backoff(ac, 0), 0);
    ac_close(&ac);
    /* ac_connect_nodes() never uses relays. */
    const char *names[] = { "n1" }, *eps[] = { "tcp://127.0.0.1:1" };
    ac = ac_connect_nodes(names, eps, 1, 100, &err);
    CHECK(ac != NULL);
    CHECK_INT(ac_relay_count(ac), 0);
    ac_close(&ac);
    /* $TELEM_RELAYS: empty means none; a missing file is an error. */
    setenv("TELEM_RELAYS", "", 1);
    ac = ac_connect(nodes, 100, &err);
    CHECK(ac != NULL && ac_relay_count(ac) == 0);
    ac_close(&ac);
    setenv("TELEM_RELAYS", other, 1);
    CHECK(ac_connect(nodes, 100, &err) == NULL);
    CHECK_RC(err, TELEM_ENOTFOUND);
    s_write(other, "r9\ttcp://127.0.0.1:7\tn2\n");
    ac = ac_connect(nodes, 100, &err);
    CHECK(ac != NULL && ac_relay_count(ac) == 1);
    ac_close(&ac);
    unsetenv("TELEM_RELAYS");
    /* A malformed file fails the client and is explained. */
    s_write(relays, "r1\ttcp://127.0.0.1:9\tn1\nr1\ttcp://127.0.0.1:9\tn2\n");
    CHECK(ac_connect(nodes, 100, &err) == NULL);
    CHECK_RC(err, TELEM_EINVAL);
    CHECK_RC(ac_nodefile_check(nodes, NULL, why, sizeof why), TELEM_EINVAL);
    CHECK(strstr(why, "listed twice") != NULL);
}

int
main(void)
{
    char dir[64];
    if (test_tmpdir(dir, sizeof dir, "test_ac_relays") != 0) {
        fprintf(stderr, "no temporary directory\n");
        return 1;
    }
    test_accepts();
    test_refuses();
    test_connect(dir);
    test_rmtree(dir);
    return check_report("test_ac_relays");
}
