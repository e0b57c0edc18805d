/* compute: the PIM device (LLMServingSim configs/pim/<name>.ini) and its decode-attention
 * latency; the INI reader is compute/ini.c. Capacity, bandwidth and read latency follow
 * LLMServingSim's PIMModel.init_dram_params() as docs/reference/pim-config.md ("How the numbers
 * are derived") states it; docs/pim.md has the model and a worked example. */
#include "compute/compute_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A required key in its range (docs/pim.md, docs/reliability.md "Numeric ranges"). Sections are
 * the ones the file keeps the key in (pim-config.md, "Keys the simulator actually reads"), named
 * when the key is missing. The geometry's ranges keep a rank's bytes (columns x device_width / 8
 * x rows x banks x devices <= 2^21 x 2^20 x 2^10 x 2^10) in uint64, well above any DRAM part. */
static gboolean ini_range(const sv_compute_ini *ini, const char *key, gboolean ok, GError *e,
                          GError **error)
{
    if (ok)
        return TRUE;
    g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID, "%s:%d: %s", ini->where,
                sv_compute__ini_find(ini, key)->line, e->message);
    g_error_free(e);
    return FALSE;
}

static gboolean pos_int(const sv_compute_ini *ini, const char *key, const char *section, int64_t hi,
                        int64_t *out, GError **error)
{
    if (!sv_compute__ini_int(ini, key, section, out, error))
        return FALSE;
    if (*out <= 0) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "%s:%d: %s: %" G_GINT64_FORMAT " must be positive", ini->where,
                    sv_compute__ini_find(ini, key)->line, key, *out);
        return FALSE;
    }
    GError *e = NULL;
    return ini_range(ini, key, sv_range_check_int(key, *out, SV_RANGE_I(1, hi, NULL), &e), e,
                     error);
}

static gboolean pos_double(const sv_compute_ini *ini, const char *key, const char *section,
                           double hi, double *out, GError **error)
{
    if (!sv_compute__ini_double(ini, key, section, out, error))
        return FALSE;
    if (!(*out > 0)) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "%s:%d: %s: %g must be positive", ini->where,
                    sv_compute__ini_find(ini, key)->line, key, *out);
        return FALSE;
    }
    GError *e = NULL;
    return ini_range(ini, key, sv_range_check_double(key, *out, SV_RANGE_D_OPEN(0, hi, NULL), &e),
                     e, error);
}

static gboolean from_ini(const sv_compute_ini *ini, const char *name, struct sv_compute_pim_cfg *o,
                         GError **error)
{
    memset(o, 0, sizeof *o);
    g_strlcpy(o->name, name, sizeof o->name);
    const sv_compute_ini_entry *proto = sv_compute__ini_find(ini, "protocol");
    if (proto)
        g_strlcpy(o->protocol, proto->value, sizeof o->protocol);
    if (!pos_int(ini, "bankgroups", "dram_structure", 32, &o->bankgroups, error) ||
        !pos_int(ini, "banks_per_group", "dram_structure", 32, &o->banks_per_group, error) ||
        !pos_int(ini, "rows", "dram_structure", 1 << 20, &o->rows, error) ||
        !pos_int(ini, "columns", "dram_structure", 1 << 14, &o->columns, error) ||
        !pos_int(ini, "device_width", "dram_structure", 1024, &o->device_width, error) ||
        !pos_double(ini, "tCK", "timing", 1e6, &o->tck_ns, error) ||
        !pos_int(ini, "CL", "timing", 1000000, &o->cl, error) ||
        !pos_int(ini, "bus_width", "system", 1024, &o->bus_width, error) ||
        !pos_int(ini, "channel_size", "system", 1 << 30, &o->channel_size_mb, error) ||
        !pos_double(ini, "data_rate", "other", 1e7, &o->data_rate_mts, error) ||
        !pos_double(ini, "idle_power", "other", 1e10, &o->idle_power_mw, error) ||
        !pos_double(ini, "peak_power", "other", 1e10, &o->peak_power_mw, error))
        return FALSE;
    if (o->bus_width % o->device_width != 0) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "%s:%d: bus_width: %" G_GINT64_FORMAT
                    " is not a multiple of device_width %" G_GINT64_FORMAT
                    " (devices per rank = bus_width / device_width)",
                    ini->where, sv_compute__ini_find(ini, "bus_width")->line, o->bus_width,
                    o->device_width);
        return FALSE;
    }
    if (o->idle_power_mw > o->peak_power_mw) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "%s:%d: idle_power: %g mW exceeds peak_power %g mW", ini->where,
                    sv_compute__ini_find(ini, "idle_power")->line, o->idle_power_mw,
                    o->peak_power_mw);
        return FALSE;
    }
    /* DRAMSim3's Config::CalculateSize() as pim-config.md quotes it, in bytes rather than MB so
     * that nothing is lost to integer division: a page is one row of every column of one device,
     * a rank is every bank of every device on the bus, and channel_size is snapped down to whole
     * ranks (at least one), as DRAMSim3's integer "channel_size / megs_per_rank *
     * megs_per_rank" does. */
    o->banks = o->bankgroups * o->banks_per_group;
    o->devices_per_rank = o->bus_width / o->device_width;
    o->page_bytes = o->columns * o->device_width / 8;
    o->rank_bytes = (uint64_t)o->page_bytes * (uint64_t)o->rows * (uint64_t)o->banks *
                    (uint64_t)o->devices_per_rank;
    uint64_t target = (uint64_t)o->channel_size_mb << 20;
    o->ranks = (int64_t)(target / o->rank_bytes);
    if (o->ranks < 1)
        o->ranks = 1;
    o->ch_capacity_bytes = (uint64_t)o->ranks * o->rank_bytes;
    /* ch_bw = bus_width / 8 x data_rate / 1000 GB/s (pim-config.md): one transfer moves the whole
     * bus; BL and tCK do not enter (data_rate already is the transfer rate). */
    o->ch_bw_bytes_per_s = (double)o->bus_width / 8.0 * o->data_rate_mts * 1e6;
    /* mem_latency = CL x tCK: CL is DRAMSim3's read (CAS) latency in cycles of tCK. */
    o->read_latency_ns = (double)o->cl * o->tck_ns;
    return TRUE;
}

gboolean sv_compute_pim_parse(const char *text, gssize len, const char *where, const char *name,
                              struct sv_compute_pim_cfg *out, GError **error)
{
    g_autoptr(sv_compute_ini) ini = sv_compute__ini_parse(text, len, where, error);
    return ini && from_ini(ini, name, out, error);
}

gboolean sv_compute_pim_load(const char *path, struct sv_compute_pim_cfg *out, GError **error)
{
    g_autoptr(sv_compute_ini) ini = sv_compute__ini_load(path, error);
    if (!ini)
        return FALSE;
    g_autofree char *base = g_path_get_basename(path);
    char *dot = strrchr(base, '.');
    if (dot && g_ascii_strcasecmp(dot, ".ini") == 0)
        *dot = '\0';
    return from_ini(ini, base, out, error);
}

int64_t sv_compute_pim_channels(const struct sv_compute_pim_cfg *pim, uint64_t mem_bytes)
{
    return (int64_t)(mem_bytes / pim->ch_capacity_bytes);
}

/* ---- attention latency ---------------------------------------------------------------------- */

/* LLMServingSim's calibrated coefficients (serving/core/pim_model.py estimate_with_linear, as
 * docs/reference/pim-config.md "PIM attention latency model" lists them): ns per KV token and ns
 * per call, fitted at the Llama-3.1-8B head shape. */
static const struct {
    const char *name;
    double slope_ns, intercept_ns;
} linear_fit[] = {
    {"LPDDR4X_2GB_4266_pim", 432.4458, 33918.1734},
    {"DDR4_8GB_3200_pim", 333.2538, 30675.2739},
    {"LPDDR5_2GB_6400_pim", 282.4338, 15996.7018},
    {"HBM2_1GB_2000_pim", 242.0548, 14513.5015},
};

gboolean sv_compute_pim_attn_init(struct sv_compute_pim_attn *a,
                                  const struct sv_compute_pim_cfg *pim,
                                  sv_compute_pim_attn_kind kind, GError **error)
{
    memset(a, 0, sizeof *a);
    a->kind = kind;
    if (kind == SV_COMPUTE_PIM_ATTN_BANDWIDTH)
        return TRUE;
    for (size_t i = 0; i < G_N_ELEMENTS(linear_fit); i++) {
        if (strcmp(linear_fit[i].name, pim->name) == 0) {
            a->slope_ns = linear_fit[i].slope_ns;
            a->intercept_ns = linear_fit[i].intercept_ns;
            return TRUE;
        }
    }
    g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_UNKNOWN,
                "PIM device %s has no calibrated linear attention fit (LLMServingSim's table has "
                "DDR4_8GB_3200_pim, HBM2_1GB_2000_pim, LPDDR4X_2GB_4266_pim, "
                "LPDDR5_2GB_6400_pim); use the bandwidth model",
                pim->name);
    return FALSE;
}

uint64_t sv_compute_pim_kv_bytes(const struct sv_compute_model_cfg *m, int tp, int64_t kv_tokens)
{
    if (kv_tokens <= 0)
        return 0;
    return (uint64_t)kv_tokens * sv_compute_model_kv_bytes_per_token_layer(m, tp);
}

double sv_compute_pim_piece_ns(const struct sv_compute_pim_cfg *pim,
                               const struct sv_compute_pim_attn *a,
                               const struct sv_compute_model_cfg *m, int tp, int64_t kv_tokens,
                               int split)
{
    if (kv_tokens <= 0)
        return 0;
    double pieces = split > 1 ? (double)split : 1.0;
    int64_t heads = m->num_heads / (tp > 0 ? tp : 1);
    if (heads < 1)
        heads = 1;
    if (a->kind == SV_COMPUTE_PIM_ATTN_LINEAR) {
        /* pim-config.md: latency_ns = (slope x gqa_ratio x L + intercept x kv_scale) /
         * channel_split, gqa_ratio = (n_head / kv_head) / (32 / 8), kv_scale = n_head x head_dim
         * / (32 x 128); the head counts are one rank's. */
        int64_t kv_heads = sv_compute__kv_heads_per_rank(m, tp);
        double gqa_ratio = ((double)heads / (double)kv_heads) / (32.0 / 8.0);
        double kv_scale = (double)(heads * m->head_dim) / (32.0 * 128.0);
        return (a->slope_ns * gqa_ratio * (double)kv_tokens + a->intercept_ns * kv_scale) / pieces;
    }
    /* Decode attention reads each K and V element once (the bytes of sv_compute_pim_kv_bytes) and
     * does 2 FLOPs per element per query head: q.K (L x head_dim MACs per head) and p.V (the
     * same), 4 x L x heads x head_dim FLOPs; softmax is ignored. The channel streams the piece's
     * bytes at its bus rate after one read latency (CL x tCK) and computes at
     * compute_flops_per_s; the slower of the two bounds the time (a roofline, the two
     * overlapped). */
    double bytes = (double)sv_compute_pim_kv_bytes(m, tp, kv_tokens) / pieces;
    double t = bytes / pim->ch_bw_bytes_per_s * 1e9;
    if (a->compute_flops_per_s > 0) {
        double flops = 4.0 * (double)kv_tokens * (double)heads * (double)m->head_dim / pieces;
        double tc = flops / a->compute_flops_per_s * 1e9;
        if (tc > t)
            t = tc;
    }
    return pim->read_latency_ns + t;
}

double sv_compute_pim_attn_seq_ns(const struct sv_compute_pim_cfg *pim,
                                  const struct sv_compute_pim_attn *a,
                                  const struct sv_compute_model_cfg *m, int tp, int64_t kv_tokens)
{
    return sv_compute_pim_piece_ns(pim, a, m, tp, kv_tokens, 1);
}

/* ---- packing sequences onto channels ------------------------------------------------------- */

typedef struct {
    int64_t size;
    int index;
} pack_item;

static int by_size_desc(const void *pa, const void *pb)
{
    const pack_item *a = pa, *b = pb;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index); /* input order: a total order */
}

void sv_compute_pim_pack_greedy(const int64_t *size, int n_seqs, int n_channels, int *channel_of,
                                void *user)
{
    (void)user;
    g_assert(n_channels > 0 || n_seqs == 0);
    if (n_seqs <= 0)
        return;
    /* Longest-processing-time first (Graham 1969): within 4/3 of the best makespan. A scan for
     * the least-loaded channel is O(channels) per sequence; a heap would do for thousands. */
    pack_item *items = g_new(pack_item, n_seqs);
    int64_t *load = g_new0(int64_t, n_channels);
    for (int i = 0; i < n_seqs; i++)
        items[i] = (pack_item){size[i], i};
    qsort(items, (size_t)n_seqs, sizeof *items, by_size_desc);
    for (int k = 0; k < n_seqs; k++) {
        int best = 0;
        for (int c = 1; c < n_channels; c++)
            if (load[c] < load[best])
                best = c;
        load[best] += items[k].size;
        channel_of[items[k].index] = best;
    }
    g_free(load);
    g_free(items);
}

static const struct sv_compute_pim_place_ops greedy_ops = {
    .api_version = SV_REGISTRY_API_VERSION,
    .pack = sv_compute_pim_pack_greedy,
};

gboolean sv_compute_pim_register_builtins(sv_registry *reg, GError **error)
{
    return sv_registry_add(reg, SV_REGISTRY_PIM_PLACE, "greedy", &greedy_ops, "built-in", error);
}

sv_compute_pim_pack_fn sv_compute_pim_pack_lookup(const char *name, GError **error)
{
    if (name && strcmp(name, "greedy") == 0)
        return sv_compute_pim_pack_greedy;
    g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_UNKNOWN,
                "unknown PIM placement policy '%s' (known: greedy)", name ? name : "(null)");
    return NULL;
}

sv_time sv_compute_pim_iter_time(const struct sv_compute_pim_cfg *pim,
                                 const struct sv_compute_pim_attn *a,
                                 const struct sv_compute_model_cfg *m, int tp,
                                 const int64_t *kv_tokens, int n_seqs, int split, int n_channels,
                                 sv_compute_pim_pack_fn pack, void *pack_user, int *channel_of,
                                 double *channel_ns, int *slowest)
{
    g_assert(n_channels > 0 && split >= 1);
    int n_items = n_seqs * split;
    /* Every piece's KV bytes per token are the same (one model, one rank, equal heads), so
     * tokens order and balance exactly as bytes do: the policy gets the token counts. */
    const int64_t *size = kv_tokens;
    int64_t *pieces = NULL;
    if (split > 1 && n_seqs > 0) {
        pieces = g_new(int64_t, (size_t)n_items);
        for (int i = 0; i < n_items; i++)
            pieces[i] = kv_tokens[i / split];
        size = pieces;
    }
    if (n_items > 0)
        pack(size, n_items, n_channels, channel_of, pack_user);
    double *ns = channel_ns ? channel_ns : g_new(double, n_channels);
    for (int c = 0; c < n_channels; c++)
        ns[c] = 0;
    for (int i = 0; i < n_items; i++) {
        g_assert(channel_of[i] >= 0 && channel_of[i] < n_channels);
        ns[channel_of[i]] += sv_compute_pim_piece_ns(pim, a, m, tp, size[i], split);
    }
    g_free(pieces);
    int worst = n_items > 0 ? 0 : -1;
    for (int c = 1; c < n_channels && n_items > 0; c++)
        if (ns[c] > ns[worst])
            worst = c;
    sv_time t = worst >= 0 ? sv_time_from_ns(ns[worst]) : 0;
    if (slowest)
        *slowest = worst;
    if (!channel_ns)
        g_free(ns);
    return t;
}
