/* fuzz_sysinfo.c - libFuzzer target: telemd's one-time system snapshot
 * (runtime/telemd/telem_sysinfo*.c): meminfo, stat, kernel and os-release
 * files, cpuinfo, CPU topology, caches and NUMA nodes under sys, block
 * devices and network interfaces, read through telem_sysinfo_collect()
 * on fixture roots (live 0: files only), as tests/test_sysinfo.c does.
 *
 * Input: a tree (tests/fuzz/fuzz.h) holding proc/..., sys/... and
 * etc/...; tests/data/sysinfo's fixture trees are the seeds.  Oracles
 * beyond the sanitizers: the collection succeeds (bad input is skipped,
 * never an error); the document is one JSON object of the length
 * reported, that jansson reads back, with the schema number and a
 * "skipped" list.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "telem_error.h"
#include "telem_log.h"
#include "telem_sysinfo.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void) argc;
    (void) argv;
    telem_log_init("fuzz_sysinfo", TELEM_LOG_ERROR);
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *root = fz_fresh_dir("t");
    fz_tree(root, data, size);
    telem_sysinfo_kv_t cfg[] = {
        { "window_s", TELEM_SYSINFO_INT, 60, 0, NULL },
        { "rundir", TELEM_SYSINFO_STR, 0, 0, "/run/telem" },
    };
    telem_sysinfo_opts_t o = {
        .node = "n1", .version = "0.1.0", .root = root, .live = 0,
        .config = cfg, .nconfig = 2,
    };
    char *json = NULL;
    size_t len = 0;
    /* Bad input is skipped, never an error: the collector reports memory
     * it could not get as TELEM_ENOMEM, which no input here can cause. */
    int rc = telem_sysinfo_collect(&o, &json, &len);
    FZ_CHECK(rc == 0);
    FZ_CHECK(json && strlen(json) == len);
    json_error_t e;
    json_t *doc = json_loadb(json, len, 0, &e);
    FZ_CHECK(json_is_object(doc));
    FZ_CHECK(json_integer_value(json_object_get(doc, "schema"))
             == TELEM_SYSINFO_SCHEMA);
    FZ_CHECK(json_is_array(json_object_get(doc, "skipped")));
    json_decref(doc);
    free(json);
    return 0;
}
