/* telem_web_report.c - the self-contained HTML job report.
 *
 * The report is the dashboard's own page (www/index.html) with every file
 * it loads inlined: the writer copies index.html line by line, and a line
 * that is exactly
 *     <link rel="stylesheet" href="NAME">   becomes <style>NAME's bytes</style>
 *     <script src="NAME"></script>          becomes <script>NAME's bytes</script>
 * for an embedded NAME, and the <title> line takes the report's title.
 * Before the first script it writes the job data as JSON in
 * <script type="application/json" id="telem-data">, where telem.js finds
 * it and then fetches nothing.  So live page and report cannot drift
 * apart: there is one page.
 *
 * The JSON is streamed from jansson with every '<' written as \u003c (the
 * same string to JSON.parse), so no value can end the element ("</script>")
 * or open an HTML comment inside it.  The embedded scripts and styles hold
 * no "</script" or "</style" (tests/test_web.c checks).
 */
#include "telem_web_int.h"
#include "telem_error.h"

#include <string.h>

#define S_DEFAULT_TITLE "telem job report"

typedef struct {
    FILE *f;
    int failed;
} s_out_t;

/* jansson's dump callback: one chunk of JSON, '<' escaped. */
static int
s_json_chunk(const char *buf, size_t size, void *arg)
{
    s_out_t *o = arg;
    size_t from = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i < size && buf[i] != '<')
            continue;
        if (i > from && fwrite(buf + from, 1, i - from, o->f) != i - from)
            o->failed = 1;
        if (i < size && fputs("\\u003c", o->f) == EOF)
            o->failed = 1;
        from = i + 1;
    }
    return o->failed ? -1 : 0;
}

static void
s_html_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f); break;
        }
    }
}

/* If line (len bytes, no newline) is `<prefix>NAME<suffix>` for an
 * embedded NAME, that file; else NULL. */
static const telem_web_asset_t *
s_ref(const char *line, size_t len, const char *prefix, const char *suffix)
{
    size_t pl = strlen(prefix), sl = strlen(suffix);
    if (len <= pl + sl || strncmp(line, prefix, pl) != 0
        || strncmp(line + len - sl, suffix, sl) != 0)
        return NULL;
    char path[64] = "/";
    size_t n = len - pl - sl;
    if (n >= sizeof path - 1)
        return NULL;
    memcpy(path + 1, line + pl, n);
    path[n + 1] = '\0';
    return telem_web_asset(path);
}

static void
s_inline(FILE *f, const char *open, const telem_web_asset_t *a,
         const char *close)
{
    fputs(open, f);
    fwrite(a->data, 1, a->len, f);
    fputs(close, f);
    fputc('\n', f);
}

/* The data element; 0 or -1. */
static int
s_data(FILE *f, const json_t *data)
{
    s_out_t o = { f, 0 };
    fputs("<script type=\"application/json\" id=\"telem-data\">", f);
    if (json_dump_callback(data, s_json_chunk, &o, JSON_COMPACT) != 0)
        return -1;
    fputs("</script>\n", f);
    return o.failed ? -1 : 0;
}

/* One line of index.html (without its newline); 0 or -1. */
static int
s_line(FILE *f, const char *line, size_t len, const json_t *data,
       const char *title, int *data_written)
{
    const char *p = line;
    while (p < line + len && (*p == ' ' || *p == '\t'))
        p++;
    size_t n = len - (size_t) (p - line);
    const telem_web_asset_t *a;
    if ((a = s_ref(p, n, "<link rel=\"stylesheet\" href=\"", "\">"))) {
        s_inline(f, "<style>", a, "</style>");
    } else if ((a = s_ref(p, n, "<script src=\"", "\"></script>"))) {
        if (!*data_written && s_data(f, data) != 0)
            return -1;
        *data_written = 1;
        s_inline(f, "<script>", a, "</script>");
    } else if (n >= 7 && strncmp(p, "<title>", 7) == 0) {
        fputs("<title>", f);
        s_html_text(f, title);
        fputs("</title>\n", f);
    } else {
        fwrite(line, 1, len, f);
        fputc('\n', f);
    }
    return 0;
}

int
telem_web_report_write(FILE *f, const json_t *data, const char *title)
{
    if (!f || !data)
        return TELEM_EINVAL;
    const telem_web_asset_t *page = telem_web_asset("/index.html");
    const char *s = (const char *) page->data, *end = s + page->len;
    int data_written = 0;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t) (end - s));
        size_t len = nl ? (size_t) (nl - s) : (size_t) (end - s);
        if (s_line(f, s, len, data, title ? title : S_DEFAULT_TITLE,
                   &data_written) != 0)
            return TELEM_EIO;
        s += len + (nl ? 1 : 0);
    }
    if (!data_written && s_data(f, data) != 0)
        return TELEM_EIO;
    return fflush(f) != 0 || ferror(f) ? TELEM_EIO : 0;
}
