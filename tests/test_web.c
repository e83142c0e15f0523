/* test_web.c - unit tests for the dashboard's embedded files and the HTML
 * job report (analysis/web):
 *   - every URL path finds its file with the right Content-Type, "/" is
 *     the page, every file ends in a NUL not counted in its length;
 *   - any other path (traversal, doubled or trailing slashes, a query
 *     string, other case, the vendored file's own name, NULL) finds
 *     nothing;
 *   - the page loads each embedded file, and no embedded script or style
 *     holds "<script", "</script", "</style" or "<!--", so inlining cannot
 *     end its element early or open another;
 *   - the report: the data element comes before the scripts, holds no '<'
 *     and reads back to the same JSON although the data is full of
 *     "</script>" and "<!--"; the scripts and styles are inlined whole and
 *     nothing is loaded from elsewhere; the title is escaped; bad
 *     arguments give TELEM_EINVAL and a failing stream TELEM_EIO.
 */
/* memmem, strcasestr: _GNU_SOURCE, which the build defines */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "check.h"
#include "telem_error.h"
#include "telem_web.h"

static const char *const s_paths[][2] = {
    { "/", "text/html; charset=utf-8" },
    { "/index.html", "text/html; charset=utf-8" },
    { "/telem.js", "text/javascript; charset=utf-8" },
    { "/telem_rows.js", "text/javascript; charset=utf-8" },
    { "/telem.css", "text/css; charset=utf-8" },
    { "/uPlot.min.js", "text/javascript; charset=utf-8" },
    { "/uPlot.min.css", "text/css; charset=utf-8" },
};

static void
s_test_lookup(void)
{
    for (size_t i = 0; i < sizeof s_paths / sizeof s_paths[0]; i++) {
        const telem_web_asset_t *a = telem_web_asset(s_paths[i][0]);
        CHECK(a != NULL);
        if (!a)
            continue;
        CHECK_STR(a->type, s_paths[i][1]);
        CHECK(a->len > 100);
        CHECK(a->data[a->len] == 0);
        CHECK(strlen((const char *) a->data) == a->len);
    }
    CHECK(telem_web_asset("/") == telem_web_asset("/index.html"));
    const telem_web_asset_t *u = telem_web_asset("/uPlot.min.js");
    CHECK(u && strstr((const char *) u->data, "uPlot") != NULL);

    static const char *const bad[] = {
        "", "/../x", "/../index.html", "/../telem.js", "//telem.js",
        "/telem.js/", "/./telem.js", "/telem.js?x=1", "/TELEM.JS",
        "telem.js", "/index.htm", "/uPlot.iife.min.js", "/%2e%2e/x",
        "/www/telem.js", "/vendor/uPlot-1.6.32/LICENSE", "/favicon.ico",
        "/telem.js\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(telem_web_asset(bad[i]) == NULL);
    CHECK(telem_web_asset(NULL) == NULL);
}

static void
s_test_assets_inlinable(void)
{
    const char *page = (const char *) telem_web_asset("/")->data;
    CHECK(strstr(page, "<script src=\"telem.js\"></script>") != NULL);
    CHECK(strstr(page, "<script src=\"telem_rows.js\"></script>") != NULL);
    CHECK(strstr(page, "<script src=\"uPlot.min.js\"></script>") != NULL);
    CHECK(strstr(page, "<link rel=\"stylesheet\" href=\"telem.css\">") != NULL);
    CHECK(strstr(page, "<link rel=\"stylesheet\" href=\"uPlot.min.css\">")
          != NULL);
    for (size_t i = 2; i < sizeof s_paths / sizeof s_paths[0]; i++) {
        const char *s = (const char *) telem_web_asset(s_paths[i][0])->data;
        CHECK(strcasestr(s, "<script") == NULL);
        CHECK(strcasestr(s, "</script") == NULL);
        CHECK(strcasestr(s, "</style") == NULL);
        CHECK(strstr(s, "<!--") == NULL);
    }
}

/* Job data whose strings try to break out of the data element. */
static json_t *
s_hostile_data(void)
{
    return json_pack(
        "{s:i, s:I, s:{s:s, s:i, s:i, s:[{s:s, s:s, s:i}]},"
        " s:[], s:[], s:[{s:I, s:s, s:s, s:[], s:[], s:s}],"
        " s:[{s:s, s:{s:s}, s:[], s:[[I, f]]}]}",
        "version", 1, "generated_ms", (json_int_t) 1764000000000,
        "job", "rundir", "/tmp/</script>", "launcher_pid", 1, "restarts", 0,
        "nodes", "name", "n1</SCRIPT><script>alert(1)</script>",
        "state", "active", "rank", 0,
        "missing", "restarts",
        "events", "time_ms", (json_int_t) 1764000000000, "detector",
        "slowgpu", "severity", "act", "nodes", "devices",
        "text", "<!-- <script> </script> & \"quoted\" \u2028",
        "series", "metric", "cg_dgemm_seconds", "tags", "host", "n1",
        "aggregateTags", "dps", (json_int_t) 1764000000000, 0.0123);
}

/* The report of data with title into a string the caller frees. */
static char *
s_report(const json_t *data, const char *title, int *rc)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return NULL;
    *rc = telem_web_report_write(f, data, title);
    fclose(f);
    return buf;
}

static void
s_check_data_element(const char *html, const json_t *data)
{
    static const char tag[] =
        "<script type=\"application/json\" id=\"telem-data\">";
    const char *open = strstr(html, tag);
    CHECK(open != NULL);
    if (!open)
        return;
    const char *body = open + strlen(tag);
    const char *end = strcasestr(body, "</script");
    CHECK(end != NULL);
    if (!end)
        return;
    char *json = strndup(body, (size_t) (end - body));
    CHECK(strchr(json, '<') == NULL);
    json_error_t err;
    json_t *back = json_loads(json, 0, &err);
    CHECK(back != NULL);
    CHECK(json_equal(back, data));
    json_decref(back);
    free(json);
    /* Before the scripts that read it. */
    CHECK(strstr(html, "var uPlot") > end);
}

static void
s_test_report(void)
{
    json_t *data = s_hostile_data();
    CHECK(data != NULL);
    int rc = -99;
    char *html = s_report(data, "job <b>&'\"", &rc);
    CHECK_RC(rc, 0);
    CHECK(html != NULL);
    if (!html) {
        json_decref(data);
        return;
    }
    CHECK(strncmp(html, "<!doctype html>", 15) == 0);
    s_check_data_element(html, data);
    CHECK(strstr(html, "<title>job &lt;b&gt;&amp;&#39;&quot;</title>")
          != NULL);
    /* The scripts and styles, whole, and nothing loaded from elsewhere. */
    for (size_t i = 2; i < sizeof s_paths / sizeof s_paths[0]; i++) {
        const telem_web_asset_t *a = telem_web_asset(s_paths[i][0]);
        CHECK(memmem(html, strlen(html), a->data, a->len) != NULL);
    }
    CHECK(strstr(html, "src=") == NULL);
    CHECK(strstr(html, "rel=\"stylesheet\"") == NULL);
    CHECK(strstr(html, "id=\"telem\"") != NULL);
    /* Exactly one data element, four closing script tags in all (data,
       uPlot, telem_rows.js, telem.js). */
    size_t n = 0;
    for (const char *p = html; (p = strcasestr(p, "</script")); p++)
        n++;
    CHECK_INT(n, 4);
    free(html);

    html = s_report(data, NULL, &rc);
    CHECK_RC(rc, 0);
    CHECK(html && strstr(html, "<title>telem job report</title>"));
    free(html);
    json_decref(data);
}

static void
s_test_report_errors(void)
{
    json_t *data = json_object();
    CHECK_RC(telem_web_report_write(NULL, data, NULL), TELEM_EINVAL);
    CHECK_RC(telem_web_report_write(stdout, NULL, NULL), TELEM_EINVAL);
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        CHECK_RC(telem_web_report_write(full, data, NULL), TELEM_EIO);
        fclose(full);
    }
    /* An empty object is still a page. */
    int rc = -99;
    char *html = s_report(data, NULL, &rc);
    CHECK_RC(rc, 0);
    CHECK(html && strstr(html, "id=\"telem-data\">{}</script>"));
    free(html);
    json_decref(data);
}

int
main(void)
{
    s_test_lookup();
    s_test_assets_inlinable();
    s_test_report();
    s_test_report_errors();
    return check_report("test_web");
}
