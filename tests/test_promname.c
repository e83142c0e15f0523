/* test_promname.c - Prometheus-style names with labels (telem_promname.h):
 * what the push API accepts, what it refuses and why, the writer, and
 * that the two round-trip.
 *
 * Malformed input: bad metric and label names, missing '=', missing or
 * unterminated quotes, unknown escapes, raw line feeds, invalid UTF-8,
 * blanks, text after '}', repeated and reserved labels, too many labels,
 * over-long names, values and texts, and every prefix of valid names
 * (each either parses or is refused; none reads past its end, which the
 * sanitizer build checks).
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "telem_error.h"
#include "telem_promname.h"

static telem_promname_t s_pn;

static int
s_parse(const char *text)
{
    return telem_promname_parse(text, 0, &s_pn, NULL, 0);
}

/* Parses text and checks the metric and "k=v;k=v;" of its labels. */
static void
s_ok(const char *text, const char *metric, const char *labels)
{
    char why[128] = "";
    int rc = telem_promname_parse(text, 0, &s_pn, why, sizeof why);
    CHECK_RC(rc, 0);
    if (rc) {
        fprintf(stderr, "  refused '%s': %s\n", text, why);
        return;
    }
    CHECK_STR(s_pn.metric, metric);
    char got[2048] = "";
    for (uint32_t i = 0; i < s_pn.nlabels; i++) {
        strcat(got, s_pn.labels[i].key);
        strcat(got, "=");
        strcat(got, s_pn.labels[i].value);
        strcat(got, ";");
    }
    CHECK_STR(got, labels);
}

/* Refused, with a reason that contains `why_part`. */
static void
s_bad(const char *text, const char *why_part)
{
    char why[128] = "";
    int rc = telem_promname_parse(text, 0, &s_pn, why, sizeof why);
    CHECK_RC(rc, TELEM_EINVAL);
    CHECK(strstr(why, why_part) != NULL);
    if (!strstr(why, why_part))
        fprintf(stderr, "  '%s': reason '%s', expected '%s'\n", text, why,
                why_part);
}

static void
s_test_valid(void)
{
    s_ok("strace_hits_total{scall=\"read\"}", "strace_hits_total",
         "scall=read;");
    s_ok("up", "up", "");
    s_ok("a:b_c9", "a:b_c9", "");
    s_ok("_x", "_x", "");
    s_ok("m{}", "m", "");
    s_ok("m{a=\"1\",}", "m", "a=1;");
    s_ok("m{b=\"2\",a=\"1\"}", "m", "b=2;a=1;");
    s_ok("m{a=\"\"}", "m", "");                 /* empty value: absent */
    s_ok("m{a=\"\",b=\"x\"}", "m", "b=x;");
    s_ok("m{a=\"q\\\"uote\"}", "m", "a=q\"uote;");
    s_ok("m{a=\"back\\\\slash\"}", "m", "a=back\\slash;");
    s_ok("m{a=\"line\\nfeed\"}", "m", "a=line\nfeed;");
    s_ok("m{a=\"a,b}c{d=e\"}", "m", "a=a,b}c{d=e;");
    s_ok("m{a=\"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}", "m",
         "a=h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80;");
    s_ok("m{_a=\"1\",rank=\"2\",A9=\"3\"}", "m", "_a=1;rank=2;A9=3;");
    s_ok("m{a=\"1\",b=\"2\",c=\"3\",d=\"4\",e=\"5\",f=\"6\",g=\"7\","
         "h=\"8\"}", "m", "a=1;b=2;c=3;d=4;e=5;f=6;g=7;h=8;");
    CHECK(telem_promname_metric_ok("a:b"));
    CHECK(!telem_promname_metric_ok("9a"));
    CHECK(!telem_promname_metric_ok("a-b"));
    CHECK(!telem_promname_metric_ok(""));
    CHECK(!telem_promname_metric_ok(NULL));
    CHECK(telem_promname_label_ok("scall"));
    CHECK(!telem_promname_label_ok("a:b"));
    CHECK(!telem_promname_label_ok("__name__"));
    CHECK(!telem_promname_label_ok("host"));
    CHECK(!telem_promname_label_ok("pid"));
}

static void
s_test_malformed(void)
{
    s_bad(NULL, "no name");
    s_bad("", "metric name expected");
    s_bad("9lives", "metric name expected");
    s_bad("{a=\"1\"}", "metric name expected");
    s_bad("a-b", "something else");
    s_bad("a b", "something else");
    s_bad("m{a=\"1\"} ", "text after");
    s_bad("m{a=\"1\"}x", "text after");
    s_bad("m{a=\"1\"", "missing '}'");
    s_bad("m{", "label 1: label name expected");
    s_bad("m{9=\"1\"}", "label name expected");
    s_bad("m{a:b=\"1\"}", "'=' expected");
    s_bad("m{ a=\"1\"}", "label name expected");
    s_bad("m{a =\"1\"}", "'=' expected");
    s_bad("m{a}", "'=' expected");
    s_bad("m{a=1}", "double quotes");
    s_bad("m{a=\"1}", "unterminated");
    s_bad("m{a=\"1\\\"}", "unterminated");
    s_bad("m{a=\"1\\", "unterminated");
    s_bad("m{a=\"\\t\"}", "unknown escape");
    s_bad("m{a=\"\\x41\"}", "unknown escape");
    s_bad("m{a=\"x\ny\"}", "raw line feed");
    s_bad("m{a=\"\xff\"}", "UTF-8");
    s_bad("m{a=\"\xc3\"}", "UTF-8");
    s_bad("m{a=\"\xed\xa0\x80\"}", "UTF-8");          /* a surrogate */
    s_bad("m{a=\"\xc0\xaf\"}", "UTF-8");              /* overlong */
    s_bad("m{a=\"1\"b=\"2\"}", "',' or '}' expected");
    s_bad("m{a=\"1\",,b=\"2\"}", "label 2: label name expected");
    s_bad("m{a=\"1\",a=\"2\"}", "label 2: label name repeated");
    s_bad("m{a=\"\",a=\"2\"}", "repeated");
    s_bad("m{__name__=\"x\"}", "reserved");
    s_bad("m{host=\"x\"}", "telem's own");
    s_bad("m{pid=\"1\"}", "telem's own");
    s_bad("m{a=\"1\",b=\"2\",c=\"3\",d=\"4\",e=\"5\",f=\"6\",g=\"7\","
          "h=\"8\",i=\"9\"}", "label 9: more than 8 labels");
}

static void
s_test_limits(void)
{
    char text[TELEM_PROMNAME_TEXT_MAX + 64];
    memset(text, 'm', 255);
    text[255] = '\0';
    CHECK_RC(s_parse(text), 0);
    text[255] = 'm';
    text[256] = '\0';
    s_bad(text, "metric name longer than 255");
    /* A value of 255 bytes once unescaped is fine, 256 is not, even when
     * its escapes make the text longer. */
    strcpy(text, "m{k=\"");
    size_t at = strlen(text);
    for (int i = 0; i < 255; i++) {
        text[at++] = '\\';
        text[at++] = '"';
    }
    strcpy(text + at, "\"}");
    CHECK_RC(s_parse(text), 0);
    CHECK_INT(strlen(s_pn.labels[0].value), 255);
    strcpy(text + at, "x\"}");
    s_bad(text, "value longer than 255");
    char key[300];
    memset(key, 'k', 256);
    key[256] = '\0';
    snprintf(text, sizeof text, "m{%s=\"v\"}", key);
    s_bad(text, "label name longer than 255");
    memset(text, 'm', TELEM_PROMNAME_TEXT_MAX + 1);
    text[TELEM_PROMNAME_TEXT_MAX + 1] = '\0';
    s_bad(text, "longer than 4096");
    /* Eight maximal labels: the largest name that parses. */
    at = 0;
    memset(text, 'm', 255);
    at = 255;
    text[at++] = '{';
    for (int l = 0; l < 8; l++) {
        memset(text + at, 'a' + l, 200);
        at += 200;
        text[at++] = '=';
        text[at++] = '"';
        memset(text + at, 'v', 255);
        at += 255;
        text[at++] = '"';
        text[at++] = l < 7 ? ',' : '}';
    }
    text[at] = '\0';
    CHECK(at < TELEM_PROMNAME_TEXT_MAX);
    CHECK_RC(s_parse(text), 0);
    CHECK_INT(s_pn.nlabels, 8);
}

/* Every prefix of valid names is either valid or refused: the parser
 * never reads past the NUL (ASan would say). */
static void
s_test_prefixes(void)
{
    static const char *const names[] = {
        "strace_hits_total{scall=\"read\",fd=\"3\"}",
        "m{a=\"q\\\"\\\\\\n\xc3\xa9\"}",
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        char buf[128];
        size_t n = strlen(names[k]);
        for (size_t i = 0; i <= n; i++) {
            memcpy(buf, names[k], i);
            buf[i] = '\0';
            int rc = s_parse(buf);
            CHECK(rc == 0 || rc == TELEM_EINVAL);
        }
    }
}

static void
s_test_bare(void)
{
    /* Command lines: values without quotes, as a shell leaves them. */
    CHECK_RC(telem_promname_parse("m{scall=read,fd=3}", TELEM_PROMNAME_BARE,
                                  &s_pn, NULL, 0), 0);
    CHECK_INT(s_pn.nlabels, 2);
    CHECK_STR(s_pn.labels[0].value, "read");
    CHECK_STR(s_pn.labels[1].value, "3");
    CHECK_RC(telem_promname_parse("m{a=\"x y\",b=z}", TELEM_PROMNAME_BARE,
                                  &s_pn, NULL, 0), 0);
    CHECK_STR(s_pn.labels[0].value, "x y");
    CHECK_RC(telem_promname_parse("m{a=b\"c}", TELEM_PROMNAME_BARE, &s_pn,
                                  NULL, 0), TELEM_EINVAL);
    CHECK_RC(telem_promname_parse("m{a=b", TELEM_PROMNAME_BARE, &s_pn,
                                  NULL, 0), TELEM_EINVAL);
    CHECK_RC(s_parse("m{scall=read}"), TELEM_EINVAL);
    /* Selectors may name telem's own tags. */
    CHECK_RC(telem_promname_parse("m{pid=\"7\",host=n1}",
                                  TELEM_PROMNAME_BARE | TELEM_PROMNAME_OWN,
                                  &s_pn, NULL, 0), 0);
    CHECK_INT(s_pn.nlabels, 2);
    CHECK_RC(s_parse("m{pid=\"7\"}"), TELEM_EINVAL);
}

static void
s_test_format(void)
{
    char buf[512];
    telem_tag_t tags[] = { { "host", "n1" }, { "scall", "read" },
                           { "v", "a\"b\\c\nd" } };
    const char *const skip[] = { "host", NULL };
    CHECK_INT(telem_promname_format(buf, sizeof buf, "m", tags, 3, skip),
              (int) strlen("m{scall=\"read\",v=\"a\\\"b\\\\c\\nd\"}"));
    CHECK_STR(buf, "m{scall=\"read\",v=\"a\\\"b\\\\c\\nd\"}");
    /* Round trip: what the writer writes, the parser reads back. */
    CHECK_RC(s_parse(buf), 0);
    CHECK_STR(s_pn.labels[1].value, "a\"b\\c\nd");
    CHECK_INT(telem_promname_format(buf, sizeof buf, "m", tags, 1, skip), 1);
    CHECK_STR(buf, "m");
    CHECK_INT(telem_promname_format(buf, sizeof buf, "m", tags, 1, NULL),
              (int) strlen("m{host=\"n1\"}"));
    CHECK_RC(telem_promname_format(buf, 8, "m", tags, 3, skip),
             TELEM_ETOOBIG);
    CHECK(strlen(buf) < 8);
    CHECK_RC(telem_promname_format(buf, sizeof buf, NULL, tags, 0, NULL),
             TELEM_EINVAL);
}

int
main(void)
{
    s_test_valid();
    s_test_malformed();
    s_test_limits();
    s_test_prefixes();
    s_test_bare();
    s_test_format();
    return check_report("test_promname");
}
