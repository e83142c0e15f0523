/* telem_sampler_hw.c - level 2: hardware sensors, hwmon and thermal zones.
 *
 * hwmon (Documentation/hwmon/sysfs-interface.rst): under
 * <sys_root>/class/hwmon/hwmon<N>/, `name` is the chip (coretemp, k10temp,
 * nvme, acpi_power_meter, ...), temp<i>_input a temperature in millidegrees
 * Celsius with its label in temp<i>_label, power<i>_input (or, where the
 * chip only averages, power<i>_average) a power in microwatts with its
 * label in power<i>_label.  Thermal zones (Documentation/driver-api/
 * thermal/sysfs-api.rst): <sys_root>/class/thermal/thermal_zone<N>/temp in
 * millidegrees, its kind in `type`.
 *
 * Tags: chip, sensor (the label, else temp<i> / power<i>) and hwmon (the
 * hwmon<N> directory, since a node has one coretemp per socket); zone and
 * type for thermal zones.  The files are found once (and again every
 * S_RESCAN calls), opened once and re-read with pread(); a sensor that
 * reads back an error (a chip without that input wired) is skipped.
 * open() returns TELEM_EUNSUPPORTED when there is no sensor at all.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_sampler.h"
#include "telem_sampler_files.h"

#define S_RESCAN 60
#define S_PATH_MAX 512
#define S_LABEL_MAX 128

static const telem_meta_t s_metrics[] = {
    {"hwmon_temp_celsius", TELEM_METRIC_GAUGE, "celsius",
     "A hwmon temperature sensor (temp<i>_input; tags chip, sensor, "
     "hwmon)."},
    {"hwmon_power_watts", TELEM_METRIC_GAUGE, "watts",
     "A hwmon power sensor (power<i>_input, else power<i>_average; tags "
     "chip, sensor, hwmon)."},
    {"thermal_zone_temp_celsius", TELEM_METRIC_GAUGE, "celsius",
     "A thermal zone's temperature (thermal_zone<N>/temp; tags zone, "
     "type)."},
    {NULL, TELEM_METRIC_GAUGE, NULL, NULL}
};

typedef struct {
    int hwmon_fd, thermal_fd;       /* class directories, or -1 */
    telem_sfiles_t files;
    unsigned calls;
} s_hw_t;

typedef struct {
    s_hw_t *self;
    const char *hwmon;              /* "hwmon0" */
    char chip[S_LABEL_MAX];
} s_scan_t;

/* Reads a one-line text file into out, without its new line; "" when it
 * is missing or empty. */
static void
s_read_line(int dirfd, const char *path, char *out, size_t size)
{
    char buf[TELEM_SFILE_TEXT_MAX];
    long len = telem_sfile_read_at(dirfd, path, buf, sizeof buf);
    out[0] = '\0';
    if (len <= 0)
        return;
    size_t n = strcspn(buf, "\n");
    if (n >= size)
        n = size - 1;
    memcpy(out, buf, n);
    out[n] = '\0';
}

/* True when name is <prefix><digits><suffix>; *index gets the digits. */
static int
s_match(const char *name, const char *prefix, const char *suffix,
        char *index, size_t size)
{
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl) != 0)
        return 0;
    const char *d = name + pl;
    size_t nd = strspn(d, "0123456789");
    if (nd == 0 || nd >= size || strcmp(d + nd, suffix) != 0)
        return 0;
    memcpy(index, d, nd);
    index[nd] = '\0';
    return 1;
}

/* Adds <kind><i>_<suffix> of one hwmon directory, labelled. */
static void
s_add_sensor(s_scan_t *sc, int dirfd, const char *kind, const char *index,
             const char *suffix, const char *metric, double scale)
{
    char path[S_PATH_MAX], label[S_LABEL_MAX];
    snprintf(path, sizeof path, "%s/%s%s_label", sc->hwmon, kind, index);
    s_read_line(dirfd, path, label, sizeof label);
    if (!label[0])
        snprintf(label, sizeof label, "%s%s", kind, index);
    telem_tag_t tags[3] = {
        {"chip", sc->chip[0] ? sc->chip : sc->hwmon}, {"sensor", label},
        {"hwmon", sc->hwmon}
    };
    snprintf(path, sizeof path, "%s/%s%s_%s", sc->hwmon, kind, index, suffix);
    telem_sfiles_add(&sc->self->files, dirfd, path, metric, TELEM_SFILE_INT,
                     scale, tags, 3);
}

static void
s_scan_sensor(int chip_fd, const char *name, void *arg)
{
    (void) chip_fd;
    s_scan_t *sc = arg;
    int dirfd = sc->self->hwmon_fd;
    char i[16], path[S_PATH_MAX];
    if (s_match(name, "temp", "_input", i, sizeof i))
        s_add_sensor(sc, dirfd, "temp", i, "input", "hwmon_temp_celsius",
                     1e-3);
    else if (s_match(name, "power", "_input", i, sizeof i))
        s_add_sensor(sc, dirfd, "power", i, "input", "hwmon_power_watts",
                     1e-6);
    else if (s_match(name, "power", "_average", i, sizeof i)) {
        snprintf(path, sizeof path, "%s/power%s_input", sc->hwmon, i);
        if (faccessat(dirfd, path, F_OK, 0) != 0)
            s_add_sensor(sc, dirfd, "power", i, "average",
                         "hwmon_power_watts", 1e-6);
    }
}

static void
s_scan_hwmon(int class_fd, const char *hwmon, void *arg)
{
    s_scan_t *sc = arg;
    char path[S_PATH_MAX];
    sc->hwmon = hwmon;
    snprintf(path, sizeof path, "%s/name", hwmon);
    s_read_line(class_fd, path, sc->chip, sizeof sc->chip);
    telem_sfile_each(class_fd, hwmon, s_scan_sensor, sc);
}

static void
s_scan_zone(int class_fd, const char *zone, void *arg)
{
    s_hw_t *self = arg;
    char path[S_PATH_MAX], type[S_LABEL_MAX];
    if (strncmp(zone, "thermal_zone", 12) != 0)
        return;                     /* cooling_device<N> */
    snprintf(path, sizeof path, "%s/type", zone);
    s_read_line(class_fd, path, type, sizeof type);
    telem_tag_t tags[2] = {{"zone", zone}, {"type", type[0] ? type : zone}};
    snprintf(path, sizeof path, "%s/temp", zone);
    telem_sfiles_add(&self->files, class_fd, path,
                     "thermal_zone_temp_celsius", TELEM_SFILE_INT, 1e-3,
                     tags, 2);
}

static void
s_scan(s_hw_t *self)
{
    telem_sfiles_clear(&self->files);
    s_scan_t sc = { .self = self };
    if (self->hwmon_fd >= 0)
        telem_sfile_each(self->hwmon_fd, ".", s_scan_hwmon, &sc);
    if (self->thermal_fd >= 0)
        telem_sfile_each(self->thermal_fd, ".", s_scan_zone, self);
}

static void
s_close(void **state_p)
{
    if (!state_p || !*state_p)
        return;
    s_hw_t *self = *state_p;
    telem_sfiles_free(&self->files);
    if (self->hwmon_fd >= 0)
        close(self->hwmon_fd);
    if (self->thermal_fd >= 0)
        close(self->thermal_fd);
    free(self);
    *state_p = NULL;
}

static int
s_open_dir(const char *dir, const char *sub)
{
    char path[S_PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, sub) >= (int) sizeof path)
        return -1;
    return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static void *
s_open(const telem_sampler_env_t *env, int *err)
{
    s_hw_t *self = env ? calloc(1, sizeof *self) : NULL;
    int rc = !env ? TELEM_EINVAL : !self ? TELEM_ENOMEM : 0;
    if (self) {
        const char *root = env->sys_root ? env->sys_root : "/sys";
        self->hwmon_fd = s_open_dir(root, "class/hwmon");
        self->thermal_fd = s_open_dir(root, "class/thermal");
        s_scan(self);
        if (self->files.n == 0)
            rc = TELEM_EUNSUPPORTED;
    }
    if (err)
        *err = rc;
    if (rc != 0) {
        void *p = self;
        s_close(&p);
        return NULL;
    }
    return self;
}

static int
s_sample(void *state, int64_t now_ns, telem_sampler_emit_fn emit, void *arg)
{
    (void) now_ns;
    s_hw_t *self = state;
    if (!self || !emit)
        return TELEM_EINVAL;
    if (++self->calls % S_RESCAN == 0)
        s_scan(self);
    if (self->files.n == 0)
        return 0;
    return telem_sfiles_emit(&self->files, emit, arg) > 0 ? 0 : TELEM_EIO;
}

const telem_sampler_vt_t telem_sampler_hw = {
    .name = "hw",
    .min_level = 2,
    .metrics = s_metrics,
    .open = s_open,
    .sample = s_sample,
    .close = s_close,
};
