/* compute: the PIM device (LLMServingSim configs/pim/<name>.ini) and its attention latency
 * (compute/pim.c, compute/ini.c). Every expected value is computed by hand from the file's keys
 * with the formulas of docs/reference/pim-config.md ("How the numbers are derived"), written out
 * next to each assertion; docs/pim.md works the same numbers. */
#include "compute/compute.h"
#include "compute/compute_internal.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define PIM_DIR "reference/llmservingsim/configs/pim"
#define GIB (UINT64_C(1) << 30)
#define MIB (UINT64_C(1) << 20)

static void show(const GError *err)
{
    if (err)
        fprintf(stderr, "%s\n", err->message);
}

static gboolean load_shipped(const char *stem, struct sv_compute_pim_cfg *pim)
{
    g_autofree char *path = g_strdup_printf(SV_SHARED "/" PIM_DIR "/%s.ini", stem);
    GError *err = NULL;
    gboolean ok = sv_compute_pim_load(path, pim, &err);
    show(err);
    g_clear_error(&err);
    return ok;
}

/* The four shipped files: structure, derived capacity, bandwidth and latency as pim-config.md's
 * table lists them (8 GB, 25.6 GB/s, 13.86 ns; 1 GB, 32.0, 14.00; 2 GB, 8.53, 16.85; 2 GB,
 * 12.80, 10.62), each recomputed below from the file's keys. */
static void test_pim_shipped(void)
{
    SV_REQUIRE_SHARED(PIM_DIR, "LLMServingSim's PIM device files");
    struct sv_compute_pim_cfg p;

    CU_ASSERT_FATAL(load_shipped("DDR4_8GB_3200_pim", &p));
    CU_ASSERT_STRING_EQUAL(p.name, "DDR4_8GB_3200_pim");
    CU_ASSERT_STRING_EQUAL(p.protocol, "DDR4");
    SV_ASSERT_EQ_I64(p.banks, 8);                           /* 2 x 4 */
    SV_ASSERT_EQ_I64(p.devices_per_rank, 4);                /* 64 / 16 */
    SV_ASSERT_EQ_I64(p.page_bytes, 2048);                   /* 1024 x 16 / 8 */
    SV_ASSERT_EQ_I64(p.rank_bytes, 4 * GIB);                /* 2048 x 65536 x 8 x 4 */
    SV_ASSERT_EQ_I64(p.ranks, 2);                           /* 8192 MB / 4096 MB */
    SV_ASSERT_EQ_I64(p.ch_capacity_bytes, 8 * GIB);         /* the "8GB" of the name */
    CU_ASSERT_DOUBLE_EQUAL(p.ch_bw_bytes_per_s, 25.6e9, 1); /* 64 / 8 x 3200e6 */
    CU_ASSERT_DOUBLE_EQUAL(p.read_latency_ns, 13.86, 1e-9); /* 22 x 0.63 */
    CU_ASSERT_DOUBLE_EQUAL(p.tck_ns, 0.63, 0);
    CU_ASSERT_DOUBLE_EQUAL(p.idle_power_mw, 623, 0);
    CU_ASSERT_DOUBLE_EQUAL(p.peak_power_mw, 3803, 0);
    SV_ASSERT_EQ_I64(sv_compute_pim_channels(&p, 512 * GIB), 64); /* 512 / 8 */

    CU_ASSERT_FATAL(load_shipped("HBM2_1GB_2000_pim", &p));
    SV_ASSERT_EQ_I64(p.banks, 16);             /* 4 x 4 */
    SV_ASSERT_EQ_I64(p.devices_per_rank, 1);   /* 128 / 128 */
    SV_ASSERT_EQ_I64(p.page_bytes, 1024);      /* 64 x 128 / 8 */
    SV_ASSERT_EQ_I64(p.rank_bytes, 512 * MIB); /* 1024 x 32768 x 16 x 1 */
    SV_ASSERT_EQ_I64(p.ranks, 2);              /* 1024 MB / 512 MB */
    SV_ASSERT_EQ_I64(p.ch_capacity_bytes, GIB);
    CU_ASSERT_DOUBLE_EQUAL(p.ch_bw_bytes_per_s, 32e9, 1);  /* 128 / 8 x 2000e6 */
    CU_ASSERT_DOUBLE_EQUAL(p.read_latency_ns, 14.0, 1e-9); /* 14 x 1 */
    CU_ASSERT_DOUBLE_EQUAL(p.peak_power_mw, 760, 0);

    CU_ASSERT_FATAL(load_shipped("LPDDR4X_2GB_4266_pim", &p));
    SV_ASSERT_EQ_I64(p.rank_bytes, 2 * GIB); /* 2048 x 65536 x 16 x 1 */
    SV_ASSERT_EQ_I64(p.ranks, 1);
    CU_ASSERT_DOUBLE_EQUAL(p.ch_bw_bytes_per_s, 8.532e9, 1); /* 16 / 8 x 4266e6 */
    CU_ASSERT_DOUBLE_EQUAL(p.read_latency_ns, 16.848, 1e-9); /* 36 x 0.468 */
    CU_ASSERT_DOUBLE_EQUAL(p.idle_power_mw, 70, 0);

    /* The file whose section header carries a comment ("[timing]   # *** cycles ..."). */
    CU_ASSERT_FATAL(load_shipped("LPDDR5_2GB_6400_pim", &p));
    SV_ASSERT_EQ_I64(p.ch_capacity_bytes, 2 * GIB);
    CU_ASSERT_DOUBLE_EQUAL(p.ch_bw_bytes_per_s, 12.8e9, 1);  /* 16 / 8 x 6400e6 */
    CU_ASSERT_DOUBLE_EQUAL(p.read_latency_ns, 10.625, 1e-9); /* 34 x 0.3125 */
    CU_ASSERT_DOUBLE_EQUAL(p.peak_power_mw, 877, 0);
    SV_ASSERT_EQ_I64(sv_compute_pim_channels(&p, 512 * GIB), 256);
}

/* A device of our own: page 512 B (512 columns x 8 bits), 8 devices on a 64-bit bus, 4 banks,
 * 1024 rows: a rank is 512 x 1024 x 4 x 8 = 16 MiB. 16 GB/s (64 / 8 x 2000 MT/s = 16 B/ns),
 * read latency 10 x 1.0 = 10 ns. %s is channel_size (MB). */
static const char *own_ini = "# a test device\n"
                             "[dram_structure]   ; structure\n"
                             "protocol = DDR4\n"
                             "bankgroups = 2\n"
                             "banks_per_group = 2\n"
                             "rows = 1024\n"
                             "columns = 512    # per row\n"
                             "device_width = 8\n"
                             "\n"
                             "[timing]\n"
                             "tCK = 1.0\n"
                             "CL = 10\n"
                             "tRCD = 10\n"
                             "[power]\n"
                             "VDD = 1.2\n"
                             "[system]\n"
                             "channel_size = %s\n"
                             "channels = 1\n"
                             "bus_width = 64\n"
                             "[other]\n"
                             "data_rate = 2000 # MT/s\n"
                             "idle_power = 100 # mW\n"
                             "peak_power = 500\n";

static gboolean own(const char *channel_size, const char *name, struct sv_compute_pim_cfg *p,
                    GError **err)
{
    g_autofree char *text = g_strdup_printf(own_ini, channel_size);
    return sv_compute_pim_parse(text, -1, "own.ini", name, p, err);
}

static void test_pim_own_ini(void)
{
    struct sv_compute_pim_cfg p;
    GError *err = NULL;
    CU_ASSERT_FATAL(own("40", "own", &p, &err));
    CU_ASSERT_STRING_EQUAL(p.name, "own");
    SV_ASSERT_EQ_I64(p.banks, 4);
    SV_ASSERT_EQ_I64(p.devices_per_rank, 8);
    SV_ASSERT_EQ_I64(p.page_bytes, 512);
    SV_ASSERT_EQ_I64(p.rank_bytes, 16 * MIB);
    SV_ASSERT_EQ_I64(p.ranks, 2);                    /* 40 MB snaps down to 2 x 16 MB */
    SV_ASSERT_EQ_I64(p.ch_capacity_bytes, 32 * MIB); /* ... = 32 MiB */
    CU_ASSERT_DOUBLE_EQUAL(p.ch_bw_bytes_per_s, 16e9, 0);
    CU_ASSERT_DOUBLE_EQUAL(p.read_latency_ns, 10.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(p.idle_power_mw, 100, 0);
    SV_ASSERT_EQ_I64(sv_compute_pim_channels(&p, 100 * MIB), 3); /* floor(100 / 32) */

    /* Less than one rank asked for: one rank, at least (5 MB -> 16 MiB). */
    CU_ASSERT_FATAL(own("5", "own", &p, &err));
    SV_ASSERT_EQ_I64(p.ranks, 1);
    SV_ASSERT_EQ_I64(p.ch_capacity_bytes, 16 * MIB);

    /* The same device loaded from a file: the name is the file's stem. */
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *path = g_build_filename(dir, "MY_PIM.ini", NULL);
    g_autofree char *text = g_strdup_printf(own_ini, "16");
    CU_ASSERT_FATAL(g_file_set_contents(path, text, -1, NULL));
    CU_ASSERT_FATAL(sv_compute_pim_load(path, &p, &err));
    show(err);
    CU_ASSERT_STRING_EQUAL(p.name, "MY_PIM");
    SV_ASSERT_EQ_I64(p.ch_capacity_bytes, 16 * MIB);
    sv_test_rmtree(dir);
}

/* Each malformed input names file:line and the key. */
static void expect_error(const char *text, const char *want1, const char *want2)
{
    struct sv_compute_pim_cfg p;
    GError *err = NULL;
    CU_ASSERT_FALSE(sv_compute_pim_parse(text, -1, "bad.ini", "bad", &p, &err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    if (!strstr(err->message, want1) || !strstr(err->message, want2))
        fprintf(stderr, "unexpected message: %s (want '%s', '%s')\n", err->message, want1, want2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err->message, want1));
    CU_ASSERT_PTR_NOT_NULL(strstr(err->message, want2));
    g_clear_error(&err);
}

static char *replace(const char *key_line, const char *with)
{
    g_autofree char *text = g_strdup_printf(own_ini, "16");
    const char *at = strstr(text, key_line);
    g_assert(at);
    return g_strdup_printf("%.*s%s%s", (int)(at - text), text, with, at + strlen(key_line));
}

static void test_pim_errors(void)
{
    g_autofree char *no_rate = replace("data_rate = 2000 # MT/s\n", "");
    expect_error(no_rate, "bad.ini: missing key data_rate", "[other]");
    g_autofree char *bad_cl = replace("CL = 10\n", "CL = ten\n");
    expect_error(bad_cl, "bad.ini:12: CL:", "'ten' is not an integer");
    g_autofree char *bad_tck = replace("tCK = 1.0\n", "tCK = 1.0ns\n");
    expect_error(bad_tck, "bad.ini:11: tCK:", "not a number");
    g_autofree char *zero = replace("rows = 1024\n", "rows = 0\n");
    expect_error(zero, "bad.ini:6: rows:", "must be positive");
    g_autofree char *dup = replace("channels = 1\n", "CL = 11\n");
    expect_error(dup, "bad.ini:18: key CL", "repeats line 12");
    g_autofree char *noeq = replace("channels = 1\n", "channels 1\n");
    expect_error(noeq, "bad.ini:18:", "'channels 1' is not a key = value line");
    g_autofree char *hdr = replace("[power]\n", "[power\n");
    expect_error(hdr, "bad.ini:14:", "malformed section header");
    g_autofree char *empty = replace("VDD = 1.2\n", "VDD =   # nothing\n");
    expect_error(empty, "bad.ini:15:", "key VDD has no value");
    g_autofree char *width = replace("bus_width = 64\n", "bus_width = 60\n");
    expect_error(width, "bad.ini:19: bus_width:", "not a multiple of device_width 8");
    g_autofree char *power = replace("idle_power = 100 # mW\n", "idle_power = 600\n");
    expect_error(power, "bad.ini:22: idle_power:", "exceeds peak_power");

    struct sv_compute_pim_cfg p;
    GError *err = NULL;
    CU_ASSERT_FALSE(sv_compute_pim_load("/nonexistent/X.ini", &p, &err));
    CU_ASSERT_PTR_NOT_NULL(err);
    g_clear_error(&err);
}

/* Greedy packing, largest first onto the least-loaded channel: 5 -> c0, 4 -> c1, 3 -> c1 (4 < 5),
 * 3 -> c0 (5 < 7), 1 -> c1 (7 < 8): loads 8 and 8. */
static void test_pim_pack(void)
{
    const int64_t size[] = {5, 4, 3, 3, 1};
    int ch[5];
    sv_compute_pim_pack_greedy(size, 5, 2, ch, NULL);
    const int want[] = {0, 1, 1, 0, 1};
    int64_t load[2] = {0, 0};
    for (int i = 0; i < 5; i++) {
        SV_ASSERT_EQ_I64(ch[i], want[i]);
        load[ch[i]] += size[i];
    }
    SV_ASSERT_EQ_I64(load[0], 8);
    SV_ASSERT_EQ_I64(load[1], 8);

    /* Input order does not matter beyond ties: 1, 3, 5 on 3 channels: 5 -> c0, 3 -> c1, 1 -> c2. */
    const int64_t s2[] = {1, 3, 5};
    int c2[3];
    sv_compute_pim_pack_greedy(s2, 3, 3, c2, NULL);
    SV_ASSERT_EQ_I64(c2[0], 2);
    SV_ASSERT_EQ_I64(c2[1], 1);
    SV_ASSERT_EQ_I64(c2[2], 0);

    GError *err = NULL;
    CU_ASSERT(sv_compute_pim_pack_lookup("greedy", &err) == sv_compute_pim_pack_greedy);
    CU_ASSERT_PTR_NULL(sv_compute_pim_pack_lookup("random", &err));
    CU_ASSERT_PTR_NOT_NULL(err);
    if (err)
        CU_ASSERT_PTR_NOT_NULL(strstr(err->message, "known: greedy"));
    g_clear_error(&err);
}

/* A model whose KV of one token in one layer is 2 x 1 KV head x 64 x 2 bytes = 256 B. */
static struct sv_compute_model_cfg small_model(void)
{
    struct sv_compute_model_cfg m;
    memset(&m, 0, sizeof m);
    g_strlcpy(m.name, "tiny", sizeof m.name);
    m.num_heads = 4;
    m.num_kv_heads = 1;
    m.head_dim = 64;
    m.hidden_size = 256;
    m.num_layers = 2;
    m.dtype_bytes = 2;
    return m;
}

/* The bandwidth model on the own device (16 B/ns, 10 ns read latency). */
static void test_pim_bandwidth(void)
{
    struct sv_compute_pim_cfg p;
    struct sv_compute_pim_attn a;
    GError *err = NULL;
    CU_ASSERT_FATAL(own("16", "own", &p, &err));
    CU_ASSERT_FATAL(sv_compute_pim_attn_init(&a, &p, SV_COMPUTE_PIM_ATTN_BANDWIDTH, &err));
    struct sv_compute_model_cfg m = small_model();
    SV_ASSERT_EQ_I64(sv_compute_pim_kv_bytes(&m, 1, 1000), 256000);
    SV_ASSERT_EQ_I64(sv_compute_pim_kv_bytes(&m, 1, 0), 0);
    /* 10 + 256000 / 16 = 16010 ns */
    CU_ASSERT_DOUBLE_EQUAL(sv_compute_pim_attn_seq_ns(&p, &a, &m, 1, 1000), 16010.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(sv_compute_pim_attn_seq_ns(&p, &a, &m, 1, 0), 0.0, 0);
    /* A compute rate of 1 GFLOP/s (1 FLOP/ns) binds: 4 x 1000 x 4 heads x 64 = 1,024,000 FLOPs
     * = 1,024,000 ns > 16,000 ns of bytes; plus 10 ns. */
    a.compute_flops_per_s = 1e9;
    CU_ASSERT_DOUBLE_EQUAL(sv_compute_pim_attn_seq_ns(&p, &a, &m, 1, 1000), 1024010.0, 1e-6);
    /* A fast one does not: back to the bytes. */
    a.compute_flops_per_s = 1e12;
    CU_ASSERT_DOUBLE_EQUAL(sv_compute_pim_attn_seq_ns(&p, &a, &m, 1, 1000), 16010.0, 1e-9);
    a.compute_flops_per_s = 0;

    /* The batch 5000, 4000, 3000, 3000, 1000 tokens on 2 channels packs as 5,4,3,3,1 does:
     * c0 = {5000, 3000}, c1 = {4000, 3000, 1000}, 8000 tokens each = 2,048,000 B = 128,000 ns.
     * c0 pays two read latencies (128,020 ns), c1 three (128,030 ns): c1 is the slowest. */
    const int64_t kv[] = {5000, 4000, 3000, 3000, 1000};
    int ch[5];
    double ch_ns[2];
    int slowest = -2;
    sv_time t = sv_compute_pim_iter_time(&p, &a, &m, 1, kv, 5, 1, 2, sv_compute_pim_pack_greedy,
                                         NULL, ch, ch_ns, &slowest);
    CU_ASSERT_DOUBLE_EQUAL(ch_ns[0], 128020.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(ch_ns[1], 128030.0, 1e-6);
    SV_ASSERT_EQ_I64(slowest, 1);
    SV_ASSERT_EQ_I64(t, 128030);
    SV_ASSERT_EQ_I64(ch[0], 0);
    SV_ASSERT_EQ_I64(ch[4], 1);

    /* One channel: everything in a row, 16000 tokens = 256,000 ns + 5 x 10. */
    int ch1[5];
    t = sv_compute_pim_iter_time(&p, &a, &m, 1, kv, 5, 1, 1, sv_compute_pim_pack_greedy, NULL, ch1,
                                 NULL, NULL);
    SV_ASSERT_EQ_I64(t, 256050);
    /* Split in 2 (heads over two channels): ten half pieces 5000, 5000, 4000, 4000, 3000 x 4,
     * 1000, 1000 alternate c0, c1 (ties to the lower channel): each channel 5 pieces of 16000
     * tokens in all at half the bytes, 16000 x 256 / 2 / 16 = 128,000 ns + 5 x 10 = 128,050 ns:
     * the same bytes as unsplit, now balanced to the token, and one more read latency. */
    int ch2[10];
    t = sv_compute_pim_iter_time(&p, &a, &m, 1, kv, 5, 2, 2, sv_compute_pim_pack_greedy, NULL, ch2,
                                 ch_ns, NULL);
    SV_ASSERT_EQ_I64(t, 128050);
    CU_ASSERT_DOUBLE_EQUAL(ch_ns[0], 128050.0, 1e-6);
    SV_ASSERT_EQ_I64(ch2[0], 0);
    SV_ASSERT_EQ_I64(ch2[1], 1);
    /* The linear model divides a sequence's time by the split (pim_model.py). */
    {
        struct sv_compute_pim_attn lin = {
            .kind = SV_COMPUTE_PIM_ATTN_LINEAR, .slope_ns = 100, .intercept_ns = 1000};
        CU_ASSERT_DOUBLE_EQUAL(sv_compute_pim_piece_ns(&p, &lin, &m, 1, 1000, 4),
                               sv_compute_pim_attn_seq_ns(&p, &lin, &m, 1, 1000) / 4, 1e-9);
    }
    /* No sequences: no time, no slowest channel. */
    t = sv_compute_pim_iter_time(&p, &a, &m, 1, NULL, 0, 1, 2, sv_compute_pim_pack_greedy, NULL,
                                 NULL, NULL, &slowest);
    SV_ASSERT_EQ_I64(t, 0);
    SV_ASSERT_EQ_I64(slowest, -1);
}

/* LLMServingSim's linear fit (pim-config.md): DDR4_8GB_3200_pim slope 333.2538, intercept
 * 30675.2739. At the Llama-3.1-8B shape (32 heads, 8 KV heads, 128): gqa_ratio = kv_scale = 1,
 * 1000 tokens: 333253.8 + 30675.2739 = 363929.0739 ns. With 64 heads: gqa_ratio = (64 / 8) / 4 =
 * 2, kv_scale = 64 x 128 / 4096 = 2: 727858.1478 ns. */
static void test_pim_linear(void)
{
    struct sv_compute_pim_cfg p;
    struct sv_compute_pim_attn a;
    GError *err = NULL;
    CU_ASSERT_FATAL(own("16", "DDR4_8GB_3200_pim", &p, &err));
    CU_ASSERT_FATAL(sv_compute_pim_attn_init(&a, &p, SV_COMPUTE_PIM_ATTN_LINEAR, &err));
    struct sv_compute_model_cfg m = small_model();
    m.num_heads = 32;
    m.num_kv_heads = 8;
    m.head_dim = 128;
    CU_ASSERT_DOUBLE_EQUAL(sv_compute_pim_attn_seq_ns(&p, &a, &m, 1, 1000), 363929.0739, 1e-6);
    m.num_heads = 64;
    CU_ASSERT_DOUBLE_EQUAL(sv_compute_pim_attn_seq_ns(&p, &a, &m, 1, 1000), 727858.1478, 1e-6);
    /* TP 2 halves both head counts: back to gqa_ratio 2, kv_scale 1: 666507.6 + 30675.2739. */
    CU_ASSERT_DOUBLE_EQUAL(sv_compute_pim_attn_seq_ns(&p, &a, &m, 2, 1000), 697182.8739, 1e-6);

    CU_ASSERT_FATAL(own("16", "own", &p, &err));
    CU_ASSERT_FALSE(sv_compute_pim_attn_init(&a, &p, SV_COMPUTE_PIM_ATTN_LINEAR, &err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err->message, "PIM device own has no calibrated"));
    g_clear_error(&err);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"shipped INI files", test_pim_shipped},
        {"own INI file", test_pim_own_ini},
        {"errors name file:line and key", test_pim_errors},
        {"greedy packing", test_pim_pack},
        {"bandwidth model and slowest channel", test_pim_bandwidth},
        {"LLMServingSim linear fit", test_pim_linear},
        {NULL, NULL},
    };
    sv_test_add_suite("compute_pim", cases);
    return sv_test_run();
}
