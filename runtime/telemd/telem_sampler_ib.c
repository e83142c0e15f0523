/* telem_sampler_ib.c - level 2: InfiniBand port counters, state and rate.
 *
 * Reads <sys_root>/class/infiniband/<device>/ports/<port>/: every file of
 * counters/ (the IBA PortCounters the kernel exposes, Documentation/ABI/
 * stable/sysfs-class-infiniband) and of hw_counters/ (driver counters:
 * mlx5 gives the RDMA transport's retries, congestion and drop counts),
 * one series per file, tags device and port; plus state, phys_state and
 * rate.  Counters keep the kernel's value and are typed counter, named
 * ib_<file>_total (lower case); port_xmit_data and port_rcv_data count
 * 4-byte words and are given in bytes.  A file this table does not know
 * (a newer driver's counter) is still one series, ib_other_total with
 * a third tag, counter=<file>, so every file is reported and described.
 *
 * The faults a job feels, and the files that give them:
 * - symbol_error, link_error_recovery, link_downed, local_link_integrity_
 *   errors, port_rcv_errors (counters/): a bad cable or port;
 * - port_xmit_wait (counters/): ticks the port had data and could not send
 *   (congestion); port_xmit_discards: packets dropped on send;
 * - out_of_buffer (hw_counters/): packets dropped for lack of a receive
 *   buffer; out_of_sequence, packet_seq_err, local_ack_timeout_err,
 *   rnr_nak_retry_err, duplicate_request, implied_nak_seq_err,
 *   roce_adp_retrans, roce_adp_retrans_to: the transport's retransmissions.
 *
 * Cheap: the files are found once (and again every S_RESCAN calls, for
 * ports that come or go), opened once and re-read with pread().  open()
 * returns TELEM_EUNSUPPORTED when the node has no InfiniBand port.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "telem_sampler.h"
#include "telem_sampler_files.h"

#define S_RESCAN 60                 /* calls between two scans */
#define S_PATH_MAX 512

#define S_C TELEM_METRIC_COUNTER
/* file, scale, doc: one counter each. */
#define S_IB_COUNTERS(X) \
    X(symbol_error, 1, "Minor link errors detected on the port's physical lanes") \
    X(link_error_recovery, 1, "Times the port's link training recovered from an error") \
    X(link_downed, 1, "Times the port's link went down after failing to recover") \
    X(port_rcv_errors, 1, "Packets received with an error (CRC, length, malformed)") \
    X(port_rcv_remote_physical_errors, 1, "Packets received marked bad by another node (EBP)") \
    X(port_rcv_switch_relay_errors, 1, "Packets received that a switch could not relay") \
    X(port_xmit_discards, 1, "Outbound packets discarded (port down, congestion)") \
    X(port_xmit_constraint_errors, 1, "Outbound packets dropped by partition or raw filtering") \
    X(port_rcv_constraint_errors, 1, "Inbound packets dropped by partition or raw filtering") \
    X(local_link_integrity_errors, 1, "Times local physical errors passed the integrity threshold") \
    X(excessive_buffer_overrun_errors, 1, "Times consecutive buffer overruns passed the threshold") \
    X(vl15_dropped, 1, "Subnet management packets (VL15) dropped for lack of buffers") \
    X(port_xmit_wait, 1, "Ticks during which the port had data to send and no credit (congestion)") \
    X(port_xmit_packets, 1, "Packets sent on the port") \
    X(port_rcv_packets, 1, "Packets received on the port") \
    X(unicast_xmit_packets, 1, "Unicast packets sent") \
    X(unicast_rcv_packets, 1, "Unicast packets received") \
    X(multicast_xmit_packets, 1, "Multicast packets sent") \
    X(multicast_rcv_packets, 1, "Multicast packets received") \
    X(out_of_buffer, 1, "Packets dropped for lack of a receive WQE (hw_counters)") \
    X(out_of_sequence, 1, "Out-of-sequence packets received, each one a retransmission (hw_counters)") \
    X(packet_seq_err, 1, "NAKs for a packet sequence error received (hw_counters)") \
    X(local_ack_timeout_err, 1, "Times the sender's ACK timer expired: a retransmission (hw_counters)") \
    X(rnr_nak_retry_err, 1, "RNR NAK retries exhausted (hw_counters)") \
    X(duplicate_request, 1, "Duplicate requests received: the peer retransmitted (hw_counters)") \
    X(implied_nak_seq_err, 1, "Implied NAK sequence errors: a read response out of order (hw_counters)") \
    X(roce_adp_retrans, 1, "RoCE adaptive retransmissions (hw_counters)") \
    X(roce_adp_retrans_to, 1, "RoCE adaptive retransmission timeouts (hw_counters)") \
    X(roce_slow_restart, 1, "RoCE slow restarts (hw_counters)") \
    X(roce_slow_restart_cnps, 1, "CNPs sent in RoCE slow restart (hw_counters)") \
    X(roce_slow_restart_trans, 1, "Transitions to RoCE slow restart (hw_counters)") \
    X(resp_local_length_error, 1, "Responder local length errors (hw_counters)") \
    X(resp_cqe_error, 1, "Responder completions with an error (hw_counters)") \
    X(req_cqe_error, 1, "Requester completions with an error (hw_counters)") \
    X(resp_cqe_flush_error, 1, "Responder completions flushed with an error (hw_counters)") \
    X(req_cqe_flush_error, 1, "Requester completions flushed with an error (hw_counters)") \
    X(req_remote_invalid_request, 1, "Remote invalid request errors seen by the requester (hw_counters)") \
    X(req_remote_access_errors, 1, "Remote access errors seen by the requester (hw_counters)") \
    X(resp_remote_access_errors, 1, "Remote access errors seen by the responder (hw_counters)") \
    X(rp_cnp_handled, 1, "CNPs handled by the reaction point (hw_counters)") \
    X(rp_cnp_ignored, 1, "CNPs ignored by the reaction point (hw_counters)") \
    X(np_cnp_sent, 1, "CNPs sent by the notification point (hw_counters)") \
    X(np_ecn_marked_roce_packets, 1, "ECN-marked RoCE packets received (hw_counters)") \
    X(rx_atomic_requests, 1, "Atomic requests received (hw_counters)") \
    X(rx_read_requests, 1, "RDMA read requests received (hw_counters)") \
    X(rx_write_requests, 1, "RDMA write requests received (hw_counters)") \
    X(rx_icrc_encapsulated, 1, "RoCE packets received with an ICRC error (hw_counters)")

#define S_META(f, scale, doc) \
    {"ib_" #f "_total", S_C, "", doc " (tags device, port)."},
#define S_MAP(f, scale, doc) {#f, "ib_" #f "_total", scale},

typedef struct {
    const char *file;               /* lower case */
    const char *metric;
    double scale;
} s_map_t;

static const s_map_t s_map[] = {
    S_IB_COUNTERS(S_MAP)
    {"port_xmit_data", "ib_port_xmit_data_bytes_total", 4.0},
    {"port_rcv_data", "ib_port_rcv_data_bytes_total", 4.0},
};

static const telem_meta_t s_metrics[] = {
    S_IB_COUNTERS(S_META)
    {"ib_port_xmit_data_bytes_total", S_C, "bytes",
     "Bytes sent on the port (port_xmit_data, 4-byte words, times 4; tags "
     "device, port)."},
    {"ib_port_rcv_data_bytes_total", S_C, "bytes",
     "Bytes received on the port (port_rcv_data, 4-byte words, times 4; "
     "tags device, port)."},
    {"ib_other_total", S_C, "",
     "A counter of counters/ or hw_counters/ that telem has no name for "
     "(tags device, port, counter: the file's name)."},
    {"ib_state", TELEM_METRIC_GAUGE, "",
     "Logical port state (ports/N/state): 1 down, 2 init, 3 armed, "
     "4 active, 5 active defer (tags device, port)."},
    {"ib_phys_state", TELEM_METRIC_GAUGE, "",
     "Physical port state (ports/N/phys_state): 2 polling, 3 disabled, "
     "5 link up, 6 link error recovery (tags device, port)."},
    {"ib_rate_bytes_per_second", TELEM_METRIC_GAUGE, "bytes/s",
     "The link's signalling rate (ports/N/rate, Gb/s over 8; tags device, "
     "port)."},
    {NULL, TELEM_METRIC_GAUGE, NULL, NULL}
};

typedef struct {
    int class_fd;                   /* <sys_root>/class/infiniband */
    telem_sfiles_t files;
    unsigned calls;
} s_ib_t;

/* What a scan walks: one device, then one port of it. */
typedef struct {
    s_ib_t *self;
    const char *device;
    const char *port;
    char dir[S_PATH_MAX];           /* "<device>/ports/<port>/counters" */
} s_scan_t;

static const s_map_t *
s_lookup(const char *file)
{
    char low[128];
    size_t i;
    for (i = 0; file[i] && i + 1 < sizeof low; i++)
        low[i] = (char) (file[i] >= 'A' && file[i] <= 'Z'
                         ? file[i] - 'A' + 'a' : file[i]);
    low[i] = '\0';
    for (size_t k = 0; k < sizeof s_map / sizeof s_map[0]; k++)
        if (strcmp(s_map[k].file, low) == 0)
            return &s_map[k];
    return NULL;
}

/* One file of counters/ or hw_counters/. */
static void
s_scan_counter(int dirfd, const char *name, void *arg)
{
    s_scan_t *sc = arg;
    if (strcmp(name, "lifespan") == 0)
        return;                     /* hw_counters' refresh period, ms */
    const s_map_t *m = s_lookup(name);
    telem_tag_t tags[3] = {
        {"device", sc->device}, {"port", sc->port}, {"counter", name}
    };
    telem_sfiles_add(&sc->self->files, dirfd, name,
                     m ? m->metric : "ib_other_total", TELEM_SFILE_INT,
                     m ? m->scale : 1.0, tags, m ? 2 : 3);
}

static void
s_scan_port(int ports_fd, const char *port, void *arg)
{
    s_scan_t *sc = arg;
    sc->port = port;
    telem_tag_t tags[2] = {{"device", sc->device}, {"port", port}};
    static const struct {
        const char *file, *metric;
        telem_sfile_kind_t kind;
        double scale;
    } attrs[] = {
        {"state", "ib_state", TELEM_SFILE_INT, 1.0},
        {"phys_state", "ib_phys_state", TELEM_SFILE_INT, 1.0},
        {"rate", "ib_rate_bytes_per_second", TELEM_SFILE_GBPS, 1e9 / 8.0},
    };
    char path[S_PATH_MAX];
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", port, attrs[i].file);
        telem_sfiles_add(&sc->self->files, ports_fd, path, attrs[i].metric,
                         attrs[i].kind, attrs[i].scale, tags, 2);
    }
    snprintf(path, sizeof path, "%s/counters", port);
    telem_sfile_each(ports_fd, path, s_scan_counter, sc);
    snprintf(path, sizeof path, "%s/hw_counters", port);
    telem_sfile_each(ports_fd, path, s_scan_counter, sc);
}

static void
s_scan_device(int class_fd, const char *device, void *arg)
{
    s_scan_t *sc = arg;
    sc->device = device;
    snprintf(sc->dir, sizeof sc->dir, "%s/ports", device);
    telem_sfile_each(class_fd, sc->dir, s_scan_port, sc);
}

static void
s_scan(s_ib_t *self)
{
    telem_sfiles_clear(&self->files);
    s_scan_t sc = { .self = self };
    telem_sfile_each(self->class_fd, ".", s_scan_device, &sc);
}

static void
s_close(void **state_p)
{
    if (!state_p || !*state_p)
        return;
    s_ib_t *self = *state_p;
    telem_sfiles_free(&self->files);
    if (self->class_fd >= 0)
        close(self->class_fd);
    free(self);
    *state_p = NULL;
}

/* Opens <dir>/<sub> as a directory; -1 when absent. */
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
    s_ib_t *self = env ? calloc(1, sizeof *self) : NULL;
    int rc = !env ? TELEM_EINVAL : !self ? TELEM_ENOMEM : 0;
    if (self) {
        self->class_fd = s_open_dir(env->sys_root ? env->sys_root : "/sys",
                                    "class/infiniband");
        if (self->class_fd >= 0)
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
    s_ib_t *self = state;
    if (!self || !emit)
        return TELEM_EINVAL;
    if (++self->calls % S_RESCAN == 0)
        s_scan(self);
    if (self->files.n == 0)
        return 0;                   /* every port went away */
    return telem_sfiles_emit(&self->files, emit, arg) > 0 ? 0 : TELEM_EIO;
}

const telem_sampler_vt_t telem_sampler_ib = {
    .name = "ib",
    .min_level = 2,
    .metrics = s_metrics,
    .open = s_open,
    .sample = s_sample,
    .close = s_close,
};
