/* test_sysinfo.c - the one-time system snapshot (telem_sysinfo.h), its
 * wire messages (sysinfo, sysinfo_reply) and telemd's answer to them.
 *
 * Fixture trees under tests/data/sysinfo: numa2 is a 2-socket machine (4
 * cores a socket, 2 threads a core, 2 NUMA nodes, an NVMe disk, a
 * rotational disk, an empty loop device, three interfaces); broken holds
 * a malformed file for every source.  Missing sources are checked on an
 * empty tree, and a tree cut in the middle of the CPU topology, built
 * here.  Every skipped source must be named in "skipped", and nothing may
 * crash.  The live snapshot of this machine is checked for the sections
 * every Linux machine has.
 */
#include "tmpdir.h"

#include <jansson.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "telem_proto.h"
#include "telem_sysinfo.h"
#include "telem_time.h"
#include "telemd_agent.h"

#ifndef TELEM_TEST_DATA
#error "TELEM_TEST_DATA must name tests/data (tests/CMakeLists.txt)"
#endif

static json_t *
s_collect(const telem_sysinfo_opts_t *o)
{
    char *text = NULL;
    size_t len = 0;
    int rc = telem_sysinfo_collect(o, &text, &len);
    CHECK_RC(rc, 0);
    if (rc)
        return NULL;
    CHECK_INT(len, strlen(text));
    json_error_t err;
    json_t *doc = json_loadb(text, len, 0, &err);
    CHECK(json_is_object(doc));
    free(text);
    return doc;
}

/* Integer at a path of object keys ("cpu", "sockets"); -1 if absent. */
static long long
s_int(const json_t *doc, const char *a, const char *b)
{
    const json_t *v = json_object_get(doc, a);
    if (b)
        v = json_object_get(v, b);
    return json_is_integer(v) ? (long long) json_integer_value(v) : -1;
}

static const char *
s_str(const json_t *doc, const char *a, const char *b)
{
    const json_t *v = json_object_get(doc, a);
    if (b)
        v = json_object_get(v, b);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* 1 if "skipped" names source. */
static int
s_skipped(const json_t *doc, const char *source)
{
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(doc, "skipped"), i, e)
        if (strcmp(json_string_value(json_object_get(e, "source")), source) == 0)
            return 1;
    return 0;
}

static void
test_numa2(void)
{
    const telem_sysinfo_kv_t cfg[] = {
        { "level", TELEM_SYSINFO_INT, 3, 0, NULL },
        { "log_dir", TELEM_SYSINFO_STR, 0, 0, "/var/x" },
        { "no_log", TELEM_SYSINFO_BOOL, 1, 0, NULL },
        { "ratio", TELEM_SYSINFO_DBL, 0, 0.5, NULL },
    };
    telem_sysinfo_opts_t o = { .node = "n1", .version = "9.9.9",
                               .root = TELEM_TEST_DATA "/sysinfo/numa2",
                               .config = cfg, .nconfig = 4 };
    json_t *d = s_collect(&o);
    REQUIRE(d);
    CHECK_INT(s_int(d, "schema", NULL), TELEM_SYSINFO_SCHEMA);
    CHECK_STR(s_str(d, "node", NULL), "n1");
    CHECK_STR(s_str(d, "cpu", "model_name"),
              "Intel(R) Xeon(R) Fixture 8480 @ 2.00GHz");
    CHECK_STR(s_str(d, "cpu", "vendor"), "GenuineIntel");
    CHECK_INT(s_int(d, "cpu", "family"), 6);
    CHECK_INT(s_int(d, "cpu", "model"), 143);
    CHECK_INT(s_int(d, "cpu", "processors"), 16);
    CHECK_INT(s_int(d, "cpu", "threads"), 16);
    CHECK_INT(s_int(d, "cpu", "sockets"), 2);
    CHECK_INT(s_int(d, "cpu", "cores"), 8);
    CHECK_INT(s_int(d, "cpu", "cores_per_socket"), 4);
    CHECK_INT(s_int(d, "cpu", "threads_per_core"), 2);
    CHECK_STR(s_str(d, "cpu", "online"), "0-15");
    const json_t *flags = json_object_get(json_object_get(d, "cpu"), "flags");
    CHECK_INT(json_array_size(flags), 14);
    CHECK_STR(json_string_value(json_array_get(flags, 13)), "avx512f");
    /* caches: L1d 48K x 8 cores, L3 105 MiB x 2 sockets */
    const json_t *caches = json_object_get(json_object_get(d, "cpu"), "caches");
    CHECK_INT(json_array_size(caches), 4);
    CHECK_INT(s_int(json_array_get(caches, 0), "size_bytes", NULL), 48 * 1024);
    CHECK_INT(s_int(json_array_get(caches, 0), "instances", NULL), 8);
    CHECK_STR(s_str(json_array_get(caches, 1), "type", NULL), "Instruction");
    CHECK_INT(s_int(json_array_get(caches, 3), "level", NULL), 3);
    CHECK_INT(s_int(json_array_get(caches, 3), "instances", NULL), 2);
    CHECK_INT(s_int(json_array_get(caches, 3), "total_bytes", NULL),
              2LL * 107520 * 1024);
    const json_t *numa = json_object_get(d, "numa");
    CHECK_INT(json_array_size(numa), 2);
    CHECK_STR(s_str(json_array_get(numa, 1), "cpus", NULL), "4-7,12-15");
    CHECK_INT(s_int(json_array_get(numa, 1), "mem_total_bytes", NULL),
              65536000LL * 1024);
    CHECK_INT(s_int(d, "memory", "total_bytes"), 131072000LL * 1024);
    CHECK_INT(s_int(d, "memory", "available_bytes"), 125000000LL * 1024);
    CHECK_INT(s_int(d, "memory", "hugepages_total"), 4);
    CHECK_INT(s_int(d, "boot", "time_ns"), 1700000000LL * TELEM_NS_PER_SEC);
    CHECK_INT(s_int(d, "boot", "accuracy_ns"), TELEM_NS_PER_SEC);
    CHECK_STR(s_str(d, "boot", "source"), "proc_stat_btime");
    CHECK_STR(s_str(d, "kernel", "release"), "6.1.0-fixture");
    CHECK_STR(s_str(d, "kernel", "hostname"), "fixture-node");
    CHECK_STR(s_str(d, "os", "pretty_name"), "Debian GNU/Linux 12 (bookworm)");
    CHECK_STR(s_str(d, "os", "id"), "debian");
    const json_t *block = json_object_get(d, "block");
    CHECK_INT(json_array_size(block), 2);        /* the empty loop0 left out */
    const json_t *nv = json_array_get(block, 0), *sda = json_array_get(block, 1);
    CHECK_STR(s_str(nv, "name", NULL), "nvme0n1");
    CHECK(json_is_true(json_object_get(nv, "nvme")));
    CHECK(json_is_false(json_object_get(nv, "rotational")));
    CHECK_STR(s_str(nv, "model", NULL), "Fixture NVMe SSD 1.92TB");
    CHECK_INT(s_int(nv, "size_bytes", NULL), 3750748848LL * 512);
    CHECK(json_is_true(json_object_get(sda, "rotational")));
    const json_t *net = json_object_get(d, "net");
    CHECK_INT(json_array_size(net), 3);
    CHECK_STR(s_str(json_array_get(net, 0), "name", NULL), "eth0");
    CHECK_INT(s_int(json_array_get(net, 0), "speed_mbps", NULL), 25000);
    CHECK_INT(s_int(json_array_get(net, 0), "mtu", NULL), 9000);
    CHECK(json_is_null(json_object_get(json_array_get(net, 1), "speed_mbps")));
    CHECK_STR(s_str(json_array_get(net, 1), "state", NULL), "down");
    CHECK(!json_object_get(json_array_get(net, 0), "addresses"));  /* not live */
    CHECK(!json_object_get(d, "gpus"));
    const json_t *c = json_object_get(json_object_get(d, "telem"), "config");
    CHECK_STR(s_str(d, "telem", "version"), "9.9.9");
    CHECK_INT(s_int(c, "level", NULL), 3);
    CHECK_STR(s_str(c, "log_dir", NULL), "/var/x");
    CHECK(json_is_true(json_object_get(c, "no_log")));
    CHECK(json_real_value(json_object_get(c, "ratio")) == 0.5);
    CHECK_INT(json_array_size(json_object_get(d, "skipped")), 0);
    json_decref(d);
}

/* A malformed file in every source: each skipped or its value left out. */
static void
test_broken(void)
{
    telem_sysinfo_opts_t o = { .root = TELEM_TEST_DATA "/sysinfo/broken" };
    json_t *d = s_collect(&o);
    REQUIRE(d);
    static const char *const skipped[] = {
        "cpuinfo", "cpu topology", "numa", "memory", "boot", "kernel", "os",
    };
    for (size_t i = 0; i < sizeof skipped / sizeof skipped[0]; i++) {
        CHECK(s_skipped(d, skipped[i]));
        if (!s_skipped(d, skipped[i]))
            fprintf(stderr, "  not skipped: %s\n", skipped[i]);
    }
    CHECK(!json_object_get(d, "memory"));
    CHECK(!json_object_get(d, "numa"));
    CHECK_INT(json_array_size(json_object_get(d, "block")), 0);
    const json_t *eth = json_array_get(json_object_get(d, "net"), 0);
    CHECK(json_is_null(json_object_get(eth, "speed_mbps")));
    CHECK(json_is_null(json_object_get(eth, "mtu")));
    json_decref(d);
}

static int
s_write(const char *dir, const char *rel, const char *text)
{
    char path[1024], cmd[1200];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    if (system(cmd) != 0)
        return -1;
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

/* Nothing at all, then a topology cut short and an oversized file. */
static void
test_missing(void)
{
    char dir[256];
    REQUIRE(test_tmpdir(dir, sizeof dir, "test_sysinfo") == 0);
    telem_sysinfo_opts_t o = { .root = dir };
    json_t *d = s_collect(&o);
    REQUIRE(d);
    static const char *const all[] = {
        "cpuinfo", "cpu topology", "numa", "memory", "boot", "kernel", "os",
        "block", "net",
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        CHECK(s_skipped(d, all[i]));
    CHECK_INT(json_array_size(json_object_get(d, "skipped")), 9);
    json_decref(d);

    REQUIRE(s_write(dir, "sys/devices/system/cpu/online", "0-3\n") == 0);
    REQUIRE(s_write(dir, "sys/devices/system/cpu/cpu0/topology/core_id", "0") == 0);
    REQUIRE(s_write(dir, "sys/devices/system/cpu/cpu0/topology/physical_package_id",
                    "0") == 0);
    REQUIRE(s_write(dir, "sys/devices/system/node/online", "0-99999999") == 0);
    char *big = malloc(200000);
    REQUIRE(big);
    memset(big, 'x', 199999);
    big[199999] = '\0';
    REQUIRE(s_write(dir, "proc/meminfo", big) == 0);
    REQUIRE(s_write(dir, "etc/os-release", "ID=\"a\0b") == 0);
    free(big);
    d = s_collect(&o);
    REQUIRE(d);
    CHECK_INT(s_int(d, "cpu", "threads"), 4);
    CHECK_INT(s_int(d, "cpu", "sockets"), -1);     /* cpu1's topology missing */
    CHECK(s_skipped(d, "cpu topology"));
    CHECK(s_skipped(d, "cpu caches"));
    CHECK(s_skipped(d, "numa"));
    CHECK(s_skipped(d, "memory"));                 /* too long */
    CHECK(s_skipped(d, "os"));
    json_decref(d);
    test_rmtree(dir);

    /* a root too long for a path is refused, not cut */
    char *root = malloc(5000);
    REQUIRE(root);
    memset(root, 'a', 4999);
    root[4999] = '\0';
    o.root = root;
    char *text = (char *) 1;
    size_t len = 1;
    CHECK_RC(telem_sysinfo_collect(&o, &text, &len), TELEM_EINVAL);
    CHECK(text == NULL && len == 0);
    CHECK_RC(telem_sysinfo_collect(NULL, &text, &len), TELEM_EINVAL);
    free(root);
}

/* Numbers of cpuinfo that are no int64 or no JSON number: a value past
 * int64 was cast to it (undefined; found by fuzz_sysinfo), and "nan" or
 * "inf" made the whole snapshot fail as out of memory. */
static void
test_cpuinfo_numbers(void)
{
    char dir[256];
    REQUIRE(test_tmpdir(dir, sizeof dir, "test_sysinfo") == 0);
    REQUIRE(s_write(dir, "proc/cpuinfo", "processor\t: 0\n"
                    "cpu MHz\t\t: 2.22222e+47\nbogomips\t: inf\n"
                    "cpu family\t: nan\nmodel\t\t: 6\n"
                    "stepping\t: -9300000000000000000\n") == 0);
    telem_sysinfo_opts_t o = { .root = dir };
    json_t *d = s_collect(&o);
    REQUIRE(d);
    const json_t *cpu = json_object_get(d, "cpu");
    CHECK(json_is_real(json_object_get(cpu, "mhz"))
          && json_real_value(json_object_get(cpu, "mhz")) == 2.22222e+47);
    CHECK(json_is_real(json_object_get(cpu, "stepping")));
    CHECK(!json_object_get(cpu, "bogomips") && !json_object_get(cpu, "family"));
    CHECK_INT(s_int(d, "cpu", "model"), 6);
    json_decref(d);
    test_rmtree(dir);
}

/* This machine: every Linux machine has these. */
static void
test_live(void)
{
    telem_sysinfo_opts_t o = { .node = "live", .live = 1,
                               .nvml_library = "/nonexistent/libnvml.so" };
    int64_t t0 = telem_mono_ns();
    json_t *d = s_collect(&o);
    int64_t took = telem_mono_ns() - t0;
    REQUIRE(d);
    fprintf(stderr, "live snapshot took %.1f ms\n", (double) took / 1e6);
    CHECK_INT(s_int(d, "cpu", "threads"), sysconf(_SC_NPROCESSORS_ONLN));
    CHECK(s_int(d, "memory", "total_bytes") > 0);
    CHECK_STR(s_str(d, "boot", "source"), "clock_realtime-clock_boottime");
    long long boot = s_int(d, "boot", "time_ns"), btime = s_int(d, "boot", "btime_s");
    CHECK(s_int(d, "boot", "accuracy_ns") > 0
          && s_int(d, "boot", "accuracy_ns") < TELEM_NS_PER_SEC);
    /* /proc/stat's btime is the same instant truncated to the second */
    CHECK(boot - btime * TELEM_NS_PER_SEC > -TELEM_NS_PER_SEC
          && boot - btime * TELEM_NS_PER_SEC < 2 * TELEM_NS_PER_SEC);
    CHECK(s_str(d, "kernel", "release") && s_str(d, "kernel", "machine"));
    CHECK(json_is_array(json_object_get(d, "net")));
    CHECK(s_skipped(d, "gpus"));                   /* no such NVML */
    json_decref(d);
}

/* sysinfo and sysinfo_reply round trip; malformed replies refused. */
static void
test_proto(void)
{
    telem_proto_encoder_t *e = telem_proto_encoder_new();
    telem_proto_decoder_t *dec = telem_proto_decoder_new();
    REQUIRE(e && dec);
    const void *data;
    size_t size;
    telem_msg_t m;
    telem_sysinfo_req_t q = { .id = 42 };
    CHECK_RC(telem_proto_encode_sysinfo(e, &q, &data, &size), 0);
    CHECK_RC(telem_proto_decode(dec, data, size, &m), 0);
    CHECK_INT(m.type, TELEM_MSG_SYSINFO);
    CHECK_INT(m.u.sysinfo.id, 42);
    CHECK_STR(telem_proto_msg_type_name(TELEM_MSG_SYSINFO_REPLY), "sysinfo_reply");
    telem_sysinfo_rep_t r = { .id = 7, .node = "n1", .json = "{\"a\":1}" };
    CHECK_RC(telem_proto_encode_sysinfo_reply(e, &r, &data, &size), 0);
    CHECK_RC(telem_proto_decode(dec, data, size, &m), 0);
    CHECK_INT(m.type, TELEM_MSG_SYSINFO_REPLY);
    CHECK_STR(m.u.sysinfo_reply.node, "n1");
    CHECK_STR(m.u.sysinfo_reply.json, "{\"a\":1}");
    /* every truncation of the reply is refused */
    unsigned char copy[256];
    REQUIRE(size < sizeof copy);
    memcpy(copy, data, size);
    size_t full = size;
    for (size_t k = 0; k < full; k++)
        CHECK(telem_proto_decode(dec, copy, k, &m) < 0);
    r.json = "";
    CHECK_RC(telem_proto_encode_sysinfo_reply(e, &r, &data, &size), TELEM_EINVAL);
    char *huge = malloc(TELEM_SYSINFO_MAX + 2);
    REQUIRE(huge);
    memset(huge, ' ', TELEM_SYSINFO_MAX + 1);
    huge[TELEM_SYSINFO_MAX + 1] = '\0';
    r.json = huge;
    CHECK_RC(telem_proto_encode_sysinfo_reply(e, &r, &data, &size), TELEM_ETOOBIG);
    free(huge);
    /* a reply without its document, and one with a NUL inside */
    static const unsigned char no_js[] = { 0x84, 0xa1, 'v', 1, 0xa1, 't', 17,
        0xa2, 'i', 'd', 1, 0xa2, 'n', 'd', 0xa1, 'x' };
    CHECK_RC(telem_proto_decode(dec, no_js, sizeof no_js, &m), TELEM_EPROTO);
    static const unsigned char nul[] = { 0x85, 0xa1, 'v', 1, 0xa1, 't', 17,
        0xa2, 'i', 'd', 1, 0xa2, 'n', 'd', 0xa1, 'x', 0xa2, 'j', 's', 0xa3,
        '{', 0, '}' };
    CHECK_RC(telem_proto_decode(dec, nul, sizeof nul, &m), TELEM_EPROTO);
    telem_proto_encoder_destroy(&e);
    telem_proto_decoder_destroy(&dec);
}

/* telemd's agent takes the snapshot at start and answers for it. */
static void
test_agent(void)
{
    telemd_config_t cfg = { .node = "a1", .level = 2,
                            .window_ns = 60 * TELEM_NS_PER_SEC,
                            .interval_ns = TELEM_NS_PER_SEC,
                            .proc_root = TELEM_TEST_DATA "/sysinfo/numa2/proc",
                            .nvml_library = "/nonexistent/libnvml.so" };
    telemd_agent_t *a = telemd_agent_new(&cfg, NULL);
    telem_proto_encoder_t *e = telem_proto_encoder_new();
    telem_proto_decoder_t *dec = telem_proto_decoder_new();
    REQUIRE(a && e && dec);
    size_t len = 0;
    const char *js = telemd_agent_sysinfo(a, &len);
    REQUIRE(js && len == strlen(js));
    json_t *d = json_loads(js, 0, NULL);
    CHECK_STR(s_str(d, "node", NULL), "a1");
    CHECK_INT(s_int(d, "cpu", "sockets"), 2);     /* the fixture's sys/ */
    CHECK_INT(s_int(json_object_get(d, "telem"), "config", NULL), -1);
    CHECK_INT(s_int(json_object_get(json_object_get(d, "telem"), "config"),
                    "level", NULL), 2);
    json_decref(d);
    const void *data, *reply;
    size_t size, rsize;
    telem_sysinfo_req_t q = { .id = 99 };
    REQUIRE(telem_proto_encode_sysinfo(e, &q, &data, &size) == 0);
    CHECK_RC(telemd_agent_request(a, data, size, TELEMD_FROM_JOB, &reply, &rsize), 0);
    telem_msg_t m;
    REQUIRE(telem_proto_decode(dec, reply, rsize, &m) == 0);
    CHECK_INT(m.type, TELEM_MSG_SYSINFO_REPLY);
    CHECK_INT(m.u.sysinfo_reply.id, 99);
    CHECK_STR(m.u.sysinfo_reply.node, "a1");
    CHECK_STR(m.u.sysinfo_reply.json, js);
    telemd_agent_destroy(&a);
    CHECK(a == NULL);
    telem_proto_encoder_destroy(&e);
    telem_proto_decoder_destroy(&dec);
}

int
main(void)
{
    test_numa2();
    test_broken();
    test_missing();
    test_cpuinfo_numbers();
    test_live();
    test_proto();
    test_agent();
    return check_report("test_sysinfo");
}
