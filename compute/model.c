/* Model catalog (Hugging Face config.json facts), decoder layer sequences, parameter counts. */
#include "compute/compute_internal.h"

#include <math.h>
#include <string.h>

GQuark sv_compute_error_quark(void)
{
    return g_quark_from_static_string("servesim-compute-error-quark");
}

/* ---- built-in models ---------------------------------------------------------------------
 * Values are the public config.json files. Where LLMServingSim ships the file it is the
 * source: ../shared/reference/llmservingsim/configs/model/<org>/<name>.json. Llama-2-7B is not
 * there; its numbers are meta-llama/Llama-2-7b-hf config.json (hidden 4096, 32 layers, 32 heads,
 * 32 KV heads, intermediate 11008, vocab 32000, torch_dtype float16). */
struct builtin_model {
    const char *name;  /* org/name */
    const char *alias; /* extra short name (NULL: none) */
    struct sv_compute_model_cfg cfg;
    int64_t max_position_embeddings; /* config.json's (the same sources) */
};

#define DENSE(t, a, h, nh, nkv, hd, l, i, v, tie, bias)                                            \
    {                                                                                              \
        .model_type = t, .arch = a, .hidden_size = h, .num_heads = nh, .num_kv_heads = nkv,        \
        .head_dim = hd, .num_layers = l, .intermediate_size = i, .vocab_size = v,                  \
        .tie_embeddings = tie, .attention_bias = bias, .dtype_bytes = 2                            \
    }
#define MOE(t, a, h, nh, nkv, hd, l, i, v, e, k, mi, bias)                                         \
    {                                                                                              \
        .model_type = t, .arch = a, .hidden_size = h, .num_heads = nh, .num_kv_heads = nkv,        \
        .head_dim = hd, .num_layers = l, .intermediate_size = i, .vocab_size = v,                  \
        .num_experts = e, .experts_per_tok = k, .moe_intermediate_size = mi,                       \
        .attention_bias = bias, .dtype_bytes = 2                                                   \
    }

static const struct builtin_model builtin_models[] = {
    /* meta-llama/Llama-2-7b-hf config.json */
    {"meta-llama/Llama-2-7B", "Llama-2-7b-hf",
     DENSE("llama", SV_COMPUTE_ARCH_LLAMA, 4096, 32, 32, 128, 32, 11008, 32000, FALSE, FALSE),
     4096},
    /* configs/model/meta-llama/Llama-3.1-8B.json */
    {"meta-llama/Llama-3.1-8B", NULL,
     DENSE("llama", SV_COMPUTE_ARCH_LLAMA, 4096, 32, 8, 128, 32, 14336, 128256, FALSE, FALSE),
     131072},
    /* configs/model/meta-llama/Llama-3.1-70B.json */
    {"meta-llama/Llama-3.1-70B", NULL,
     DENSE("llama", SV_COMPUTE_ARCH_LLAMA, 8192, 64, 8, 128, 80, 28672, 128256, FALSE, FALSE),
     131072},
    /* configs/model/Qwen/Qwen3-32B.json (head_dim 128 given explicitly) */
    {"Qwen/Qwen3-32B", NULL,
     DENSE("qwen3", SV_COMPUTE_ARCH_QWEN3, 5120, 64, 8, 128, 64, 25600, 151936, FALSE, FALSE),
     40960},
    /* configs/model/Qwen/Qwen3-30B-A3B-Instruct-2507.json: 128 experts, top-8, 768 wide */
    {"Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen3-30B-A3B",
     MOE("qwen3_moe", SV_COMPUTE_ARCH_QWEN3_MOE, 2048, 32, 4, 128, 48, 6144, 151936, 128, 8, 768,
         FALSE),
     262144},
    /* configs/model/mistralai/Mixtral-8x7B-v0.1.json: 8 local experts, top-2, each
     * intermediate_size wide */
    {"mistralai/Mixtral-8x7B-v0.1", "Mixtral-8x7B",
     MOE("mixtral", SV_COMPUTE_ARCH_MIXTRAL, 4096, 32, 8, 128, 32, 14336, 32000, 8, 2, 14336,
         FALSE),
     32768},
    /* configs/model/microsoft/Phi-mini-MoE-instruct.json: 16 local experts, top-2, experts
     * intermediate_size (960) wide, attention_bias true */
    {"microsoft/Phi-mini-MoE-instruct", "Phi-mini-MoE",
     MOE("phimoe", SV_COMPUTE_ARCH_PHIMOE, 4096, 32, 8, 128, 32, 960, 32064, 16, 2, 960, TRUE),
     4096},
};

static const char *const builtin_model_names[] = {
    "meta-llama/Llama-2-7B",
    "meta-llama/Llama-3.1-8B",
    "meta-llama/Llama-3.1-70B",
    "Qwen/Qwen3-32B",
    "Qwen/Qwen3-30B-A3B-Instruct-2507",
    "mistralai/Mixtral-8x7B-v0.1",
    "microsoft/Phi-mini-MoE-instruct",
    NULL,
};

static const char *base_name(const char *name)
{
    const char *s = strrchr(name, '/');
    return s ? s + 1 : name;
}

static const struct {
    const char *model_type;
    sv_compute_model_arch arch;
} arch_by_type[] = {
    {"llama", SV_COMPUTE_ARCH_LLAMA},         {"qwen3", SV_COMPUTE_ARCH_QWEN3},
    {"qwen3_moe", SV_COMPUTE_ARCH_QWEN3_MOE}, {"mixtral", SV_COMPUTE_ARCH_MIXTRAL},
    {"phimoe", SV_COMPUTE_ARCH_PHIMOE},
};

const char *sv_compute_arch_name(sv_compute_model_arch arch)
{
    for (size_t i = 0; i < G_N_ELEMENTS(arch_by_type); i++)
        if (arch_by_type[i].arch == arch)
            return arch_by_type[i].model_type;
    return "unknown";
}

/* Ranges of a model's dimensions (docs/compute.md, docs/reliability.md "Numeric ranges"), above
 * every published model and small enough that weights (layers x experts x 3 x hidden x expert
 * width x 4 bytes <= 2^61.6) and KV bytes per token (2 x KV heads x head_dim x 4 x layers <= 2^33,
 * times SV_RANGE_TOKENS_MAX tokens) stay in uint64. */
#define R_HIDDEN SV_RANGE_I(1, 1 << 16, NULL)
#define R_HEADS SV_RANGE_I(1, 1 << 10, NULL)
#define R_LAYERS SV_RANGE_I(1, 1 << 10, NULL)
#define R_WIDTH SV_RANGE_I(1, 1 << 20, NULL)
#define R_VOCAB SV_RANGE_I(1, 1 << 22, NULL)
#define R_EXPERTS SV_RANGE_I(0, 1 << 12, NULL)

static gboolean get_int_any(JsonObject *obj, const char *const *keys, const char *where,
                            gboolean required, int64_t dflt, struct sv_range_int r, int64_t *out,
                            GError **error)
{
    for (int i = 0; keys[i]; i++)
        if (json_object_has_member(obj, keys[i]))
            return sv_cfg_get_int_range(obj, keys[i], where, TRUE, dflt, r, out, error);
    if (required) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING, "missing %s in %s", keys[0],
                    where);
        return FALSE;
    }
    *out = dflt;
    return TRUE;
}

gboolean sv_compute_model_from_json(JsonObject *obj, const char *name, const char *where,
                                    struct sv_compute_model_cfg *out, GError **error)
{
    struct sv_compute_model_cfg m = {0};
    g_strlcpy(m.name, name, sizeof m.name);
    const char *mt = NULL;
    if (!sv_cfg_get_string(obj, "model_type", where, TRUE, NULL, &mt, error))
        return FALSE;
    size_t a;
    for (a = 0; a < G_N_ELEMENTS(arch_by_type); a++)
        if (g_ascii_strcasecmp(mt, arch_by_type[a].model_type) == 0)
            break;
    if (a == G_N_ELEMENTS(arch_by_type)) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_UNKNOWN,
                    "unknown model_type \"%s\" (known: llama, qwen3, qwen3_moe, mixtral, "
                    "phimoe) in %s",
                    mt, where);
        return FALSE;
    }
    g_strlcpy(m.model_type, arch_by_type[a].model_type, sizeof m.model_type);
    m.arch = arch_by_type[a].arch;
    static const char *const k_hidden[] = {"hidden_size", NULL};
    static const char *const k_heads[] = {"num_attention_heads", NULL};
    static const char *const k_kv[] = {"num_key_value_heads", NULL};
    static const char *const k_hd[] = {"head_dim", NULL};
    static const char *const k_layers[] = {"num_hidden_layers", NULL};
    static const char *const k_inter[] = {"intermediate_size", NULL};
    static const char *const k_vocab[] = {"vocab_size", NULL};
    static const char *const k_exp[] = {"num_local_experts", "num_experts", NULL};
    static const char *const k_topk[] = {"num_experts_per_tok", NULL};
    static const char *const k_moei[] = {"moe_intermediate_size", NULL};
    static const char *const k_maxpos[] = {"max_position_embeddings", NULL};
    if (!get_int_any(obj, k_hidden, where, TRUE, 0, R_HIDDEN, &m.hidden_size, error) ||
        !get_int_any(obj, k_heads, where, TRUE, 0, R_HEADS, &m.num_heads, error) ||
        !get_int_any(obj, k_kv, where, FALSE, m.num_heads, R_HEADS, &m.num_kv_heads, error) ||
        !get_int_any(obj, k_layers, where, TRUE, 0, R_LAYERS, &m.num_layers, error) ||
        !get_int_any(obj, k_inter, where, TRUE, 0, R_WIDTH, &m.intermediate_size, error) ||
        !get_int_any(obj, k_vocab, where, TRUE, 0, R_VOCAB, &m.vocab_size, error) ||
        !get_int_any(obj, k_exp, where, FALSE, 0, R_EXPERTS, &m.num_experts, error) ||
        !get_int_any(obj, k_topk, where, FALSE, 0, R_EXPERTS, &m.experts_per_tok, error) ||
        !get_int_any(obj, k_maxpos, where, FALSE, 0, SV_RANGE_I(0, SV_RANGE_TOKENS_MAX, "tokens"),
                     &m.max_position_embeddings, error))
        return FALSE;
    if (m.max_position_embeddings < 0) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "negative max_position_embeddings in %s", where);
        return FALSE;
    }
    if (m.hidden_size <= 0 || m.num_heads <= 0 || m.num_kv_heads <= 0 || m.num_layers <= 0 ||
        m.vocab_size <= 0 || m.intermediate_size <= 0) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "non-positive dimension in %s", where);
        return FALSE;
    }
    if (!get_int_any(obj, k_hd, where, FALSE, m.hidden_size / m.num_heads, R_HEADS, &m.head_dim,
                     error))
        return FALSE;
    /* Mixtral and PhiMoE configs have no moe_intermediate_size: each expert is
     * intermediate_size wide. */
    if (!get_int_any(obj, k_moei, where, FALSE, m.num_experts > 0 ? m.intermediate_size : 0,
                     R_WIDTH, &m.moe_intermediate_size, error))
        return FALSE;
    if (json_object_has_member(obj, "tie_word_embeddings"))
        m.tie_embeddings = json_object_get_boolean_member(obj, "tie_word_embeddings");
    if (json_object_has_member(obj, "attention_bias"))
        m.attention_bias = json_object_get_boolean_member(obj, "attention_bias");
    const char *dt = "bfloat16";
    if (!sv_cfg_get_string(obj, "torch_dtype", where, FALSE, "bfloat16", &dt, error))
        return FALSE;
    if (!strcmp(dt, "float32"))
        m.dtype_bytes = 4;
    else if (g_str_has_prefix(dt, "float8") || !strcmp(dt, "fp8"))
        m.dtype_bytes = 1;
    else
        m.dtype_bytes = 2;
    gboolean moe_arch = m.arch == SV_COMPUTE_ARCH_QWEN3_MOE || m.arch == SV_COMPUTE_ARCH_MIXTRAL ||
                        m.arch == SV_COMPUTE_ARCH_PHIMOE;
    if (moe_arch && (m.num_experts <= 0 || m.experts_per_tok <= 0)) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING,
                    "%s: MoE model_type %s without num_experts / num_experts_per_tok", where,
                    m.model_type);
        return FALSE;
    }
    *out = m;
    return TRUE;
}

static gboolean load_model_file(const char *path, const char *name,
                                struct sv_compute_model_cfg *out, GError **error)
{
    g_autoptr(JsonNode) root = sv_cfg_load_json(path, error);
    if (!root)
        return FALSE;
    if (!JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_PARSE,
                    "model config is not a JSON object: %s", path);
        return FALSE;
    }
    return sv_compute_model_from_json(json_node_get_object(root), name, path, out, error);
}

static gint str_ptr_cmp(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Look for <dir>/<org>/<name>.json; without an org, try every org folder in sorted order. */
static char *find_model_file(const char *dir, const char *name, char **full_name)
{
    if (strchr(name, '/')) {
        g_autofree char *p = g_strdup_printf("%s/%s.json", dir, name);
        if (g_file_test(p, G_FILE_TEST_IS_REGULAR)) {
            *full_name = g_strdup(name);
            return g_steal_pointer(&p);
        }
        return NULL;
    }
    GDir *d = g_dir_open(dir, 0, NULL);
    if (!d)
        return NULL;
    g_autoptr(GPtrArray) orgs = g_ptr_array_new_with_free_func(g_free);
    const char *e;
    while ((e = g_dir_read_name(d)))
        g_ptr_array_add(orgs, g_strdup(e));
    g_dir_close(d);
    g_ptr_array_sort(orgs, str_ptr_cmp);
    for (guint i = 0; i < orgs->len; i++) {
        const char *org = orgs->pdata[i];
        g_autofree char *p = g_strdup_printf("%s/%s/%s.json", dir, org, name);
        if (g_file_test(p, G_FILE_TEST_IS_REGULAR)) {
            *full_name = g_strdup_printf("%s/%s", org, name);
            return g_steal_pointer(&p);
        }
    }
    return NULL;
}

gboolean sv_compute_model_lookup(const char *name, const char *model_dir,
                                 struct sv_compute_model_cfg *out, GError **error)
{
    if (model_dir) {
        g_autofree char *full = NULL;
        g_autofree char *path = find_model_file(model_dir, name, &full);
        if (path)
            return load_model_file(path, full, out, error);
    }
    const char *want = base_name(name);
    gboolean has_org = strchr(name, '/') != NULL;
    for (size_t i = 0; i < G_N_ELEMENTS(builtin_models); i++) {
        const struct builtin_model *b = &builtin_models[i];
        gboolean hit = g_ascii_strcasecmp(want, base_name(b->name)) == 0 ||
                       (b->alias && g_ascii_strcasecmp(want, b->alias) == 0);
        if (hit && has_org) {
            /* The org must agree when one is given. */
            size_t ol = (size_t)(strchr(name, '/') - name);
            hit = g_ascii_strncasecmp(name, b->name, ol) == 0 && b->name[ol] == '/';
        }
        if (hit) {
            *out = b->cfg;
            g_strlcpy(out->name, b->name, sizeof out->name);
            out->max_position_embeddings = b->max_position_embeddings;
            return TRUE;
        }
    }
    GString *known = g_string_new(NULL);
    for (int i = 0; builtin_model_names[i]; i++)
        g_string_append_printf(known, "%s%s", i ? ", " : "", builtin_model_names[i]);
    g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_UNKNOWN,
                "unknown model \"%s\" (built in: %s%s%s)", name, known->str,
                model_dir ? "; not found under --model-dir " : "", model_dir ? model_dir : "");
    g_string_free(known, TRUE);
    return FALSE;
}

gboolean sv_compute_model_is_moe(const struct sv_compute_model_cfg *m)
{
    return m->num_experts > 0 && m->experts_per_tok > 0;
}

/* Per-layer parameter groups; `tp` divides the sharded ones as vLLM does. */
static double layer_params(const struct sv_compute_model_cfg *m, int tp, gboolean *has_qk_norm)
{
    double H = (double)m->hidden_size, hd = (double)m->head_dim;
    double nh = (double)m->num_heads / tp;
    double nkv = (double)sv_compute__kv_heads_per_rank(m, tp);
    double p = H * nh * hd + 2.0 * H * nkv * hd + nh * hd * H; /* q, k, v, o */
    if (m->attention_bias)
        p += nh * hd + 2.0 * nkv * hd + H;
    p += 2.0 * H; /* input and post-attention RMSNorm (replicated) */
    *has_qk_norm = m->arch == SV_COMPUTE_ARCH_QWEN3 || m->arch == SV_COMPUTE_ARCH_QWEN3_MOE;
    if (*has_qk_norm)
        p += 2.0 * hd;
    if (sv_compute_model_is_moe(m))
        p += (double)m->num_experts * 3.0 * H * (double)m->moe_intermediate_size / tp +
             H * (double)m->num_experts; /* experts (gate, up, down) + router */
    else
        p += 3.0 * H * (double)m->intermediate_size / tp; /* gate, up, down */
    return p;
}

int64_t sv_compute__kv_heads_per_rank(const struct sv_compute_model_cfg *m, int tp)
{
    /* vLLM replicates KV heads when tp exceeds their number (one head per rank). */
    if (tp >= m->num_kv_heads)
        return 1;
    return m->num_kv_heads / tp;
}

double sv_compute_model_params(const struct sv_compute_model_cfg *m)
{
    gboolean qk;
    double emb = (double)m->vocab_size * (double)m->hidden_size;
    return emb * (m->tie_embeddings ? 1.0 : 2.0) + (double)m->num_layers * layer_params(m, 1, &qk) +
           (double)m->hidden_size;
}

uint64_t sv_compute_model_weight_bytes(const struct sv_compute_model_cfg *m, int tp)
{
    if (tp < 1)
        tp = 1;
    gboolean qk;
    double emb = (double)m->vocab_size * (double)m->hidden_size / tp;
    double wb = sv_compute_model_weight_param_bytes(m), b = (double)m->dtype_bytes;
    if (wb != b) /* quantised decoder blocks; embedding, lm_head, final norm at dtype_bytes */
        return (uint64_t)llround((emb * (m->tie_embeddings ? 1.0 : 2.0) + (double)m->hidden_size) *
                                     b +
                                 (double)m->num_layers * layer_params(m, tp, &qk) * wb);
    double p = emb * (m->tie_embeddings ? 1.0 : 2.0) +
               (double)m->num_layers * layer_params(m, tp, &qk) + (double)m->hidden_size;
    return (uint64_t)llround(p * b);
}

/* The MLP (dense gate, up, down) or MoE part (experts and router) of one decoder layer's
 * parameters on one rank: the terms of layer_params that attention/FFN disaggregation moves to the
 * FFN devices (docs/afd.md). */
static double mlp_params(const struct sv_compute_model_cfg *m, int tp)
{
    double H = (double)m->hidden_size;
    if (sv_compute_model_is_moe(m))
        return (double)m->num_experts * 3.0 * H * (double)m->moe_intermediate_size / tp +
               H * (double)m->num_experts;
    return 3.0 * H * (double)m->intermediate_size / tp;
}

uint64_t sv_compute_model_mlp_weight_bytes(const struct sv_compute_model_cfg *m, int tp)
{
    return (uint64_t)llround((double)m->num_layers * mlp_params(m, MAX(tp, 1)) *
                             sv_compute_model_weight_param_bytes(m));
}

/* Parts of sv_compute_model_weight_bytes, for weight placement (docs/memory-tiers.md). Each is
 * rounded on its own, so their sum may differ from the total by a byte or so per part. */
uint64_t sv_compute_model_layer_weight_bytes(const struct sv_compute_model_cfg *m, int tp)
{
    gboolean qk;
    return (uint64_t)llround(layer_params(m, MAX(tp, 1), &qk) *
                             sv_compute_model_weight_param_bytes(m));
}

uint64_t sv_compute_model_embedding_bytes(const struct sv_compute_model_cfg *m, int tp)
{
    return (uint64_t)llround((double)m->vocab_size * (double)m->hidden_size / MAX(tp, 1) *
                             (double)m->dtype_bytes);
}

uint64_t sv_compute_model_head_bytes(const struct sv_compute_model_cfg *m, int tp)
{
    return m->tie_embeddings ? 0 : sv_compute_model_embedding_bytes(m, tp);
}

uint64_t sv_compute_model_final_norm_bytes(const struct sv_compute_model_cfg *m)
{
    return (uint64_t)m->hidden_size * (uint64_t)m->dtype_bytes;
}

uint64_t sv_compute_model_kv_bytes_per_token_layer(const struct sv_compute_model_cfg *m, int tp)
{
    return (uint64_t)(2 * sv_compute__kv_heads_per_rank(m, tp) * m->head_dim *
                      sv_compute_model_kv_elem_bytes(m));
}

/* ---- operators ---------------------------------------------------------------------------- */

static const struct {
    const char *name;
    sv_compute_op_category_kind cat;
} op_info[SV_COMPUTE_OP_COUNT] = {
    [SV_COMPUTE_OP_EMBEDDING] = {"embedding", SV_COMPUTE_OP_CAT_DENSE},
    [SV_COMPUTE_OP_LAYERNORM] = {"layernorm", SV_COMPUTE_OP_CAT_DENSE},
    [SV_COMPUTE_OP_QKV_PROJ] = {"qkv_proj", SV_COMPUTE_OP_CAT_DENSE},
    [SV_COMPUTE_OP_QK_NORM] = {"qk_norm", SV_COMPUTE_OP_CAT_DENSE},
    [SV_COMPUTE_OP_ROTARY_EMB] = {"rotary_emb", SV_COMPUTE_OP_CAT_DENSE},
    [SV_COMPUTE_OP_ATTENTION] = {"attention", SV_COMPUTE_OP_CAT_ATTENTION},
    [SV_COMPUTE_OP_O_PROJ] = {"o_proj", SV_COMPUTE_OP_CAT_DENSE},
    [SV_COMPUTE_OP_GATE_UP_PROJ] = {"gate_up_proj", SV_COMPUTE_OP_CAT_DENSE},
    [SV_COMPUTE_OP_ACT_FN] = {"act_fn", SV_COMPUTE_OP_CAT_DENSE},
    [SV_COMPUTE_OP_DOWN_PROJ] = {"down_proj", SV_COMPUTE_OP_CAT_DENSE},
    [SV_COMPUTE_OP_MOE] = {"moe", SV_COMPUTE_OP_CAT_MOE},
    [SV_COMPUTE_OP_FINAL_LAYERNORM] = {"final_layernorm", SV_COMPUTE_OP_CAT_DENSE},
    [SV_COMPUTE_OP_LM_HEAD] = {"lm_head", SV_COMPUTE_OP_CAT_PER_SEQUENCE},
    [SV_COMPUTE_OP_SAMPLER] = {"sampler", SV_COMPUTE_OP_CAT_PER_SEQUENCE},
};

const char *sv_compute_op_name(sv_compute_op_kind op)
{
    SV_ASSERT(op >= 0 && op < SV_COMPUTE_OP_COUNT);
    return op_info[op].name;
}

sv_compute_op_category_kind sv_compute_op_category(sv_compute_op_kind op)
{
    SV_ASSERT(op >= 0 && op < SV_COMPUTE_OP_COUNT);
    return op_info[op].cat;
}

/* ---- layer sequences ---------------------------------------------------------------------
 * Encoded from the `sequence:` blocks of ../shared/reference/llmservingsim/models/<type>.yaml
 * (LLMServingSim's profiler catalogs) so that the catalog works without ../shared; the test
 * suite compares these with the yaml files. tp_stable per the same files' `catalog:`
 * (layernorm, qk_norm, final_layernorm, sampler). */
#define OPS(...)                                                                                   \
    {__VA_ARGS__}, (int)(sizeof((sv_compute_op_kind[]){__VA_ARGS__}) / sizeof(sv_compute_op_kind))
#define TP_STABLE_QK                                                                               \
    {                                                                                              \
        [SV_COMPUTE_OP_LAYERNORM] = TRUE, [SV_COMPUTE_OP_QK_NORM] = TRUE,                          \
        [SV_COMPUTE_OP_FINAL_LAYERNORM] = TRUE, [SV_COMPUTE_OP_SAMPLER] = TRUE                     \
    }
#define TP_STABLE                                                                                  \
    {                                                                                              \
        [SV_COMPUTE_OP_LAYERNORM] = TRUE, [SV_COMPUTE_OP_FINAL_LAYERNORM] = TRUE,                  \
        [SV_COMPUTE_OP_SAMPLER] = TRUE                                                             \
    }

static const struct sv_compute_layer_seq layer_seqs[SV_COMPUTE_ARCH_COUNT] = {
    /* llama.yaml */
    [SV_COMPUTE_ARCH_LLAMA] =
        {OPS(SV_COMPUTE_OP_EMBEDDING),
         OPS(SV_COMPUTE_OP_LAYERNORM, SV_COMPUTE_OP_QKV_PROJ, SV_COMPUTE_OP_ROTARY_EMB,
             SV_COMPUTE_OP_ATTENTION),
         OPS(SV_COMPUTE_OP_O_PROJ, SV_COMPUTE_OP_LAYERNORM),
         OPS(SV_COMPUTE_OP_GATE_UP_PROJ, SV_COMPUTE_OP_ACT_FN, SV_COMPUTE_OP_DOWN_PROJ), FALSE,
         OPS(SV_COMPUTE_OP_FINAL_LAYERNORM, SV_COMPUTE_OP_LM_HEAD, SV_COMPUTE_OP_SAMPLER),
         TP_STABLE},
    /* qwen3.yaml */
    [SV_COMPUTE_ARCH_QWEN3] =
        {OPS(SV_COMPUTE_OP_EMBEDDING),
         OPS(SV_COMPUTE_OP_LAYERNORM, SV_COMPUTE_OP_QKV_PROJ, SV_COMPUTE_OP_QK_NORM,
             SV_COMPUTE_OP_ROTARY_EMB, SV_COMPUTE_OP_ATTENTION),
         OPS(SV_COMPUTE_OP_O_PROJ, SV_COMPUTE_OP_LAYERNORM),
         OPS(SV_COMPUTE_OP_GATE_UP_PROJ, SV_COMPUTE_OP_ACT_FN, SV_COMPUTE_OP_DOWN_PROJ), FALSE,
         OPS(SV_COMPUTE_OP_FINAL_LAYERNORM, SV_COMPUTE_OP_LM_HEAD, SV_COMPUTE_OP_SAMPLER),
         TP_STABLE_QK},
    /* qwen3_moe.yaml */
    [SV_COMPUTE_ARCH_QWEN3_MOE] =
        {OPS(SV_COMPUTE_OP_EMBEDDING),
         OPS(SV_COMPUTE_OP_LAYERNORM, SV_COMPUTE_OP_QKV_PROJ, SV_COMPUTE_OP_QK_NORM,
             SV_COMPUTE_OP_ROTARY_EMB, SV_COMPUTE_OP_ATTENTION),
         OPS(SV_COMPUTE_OP_O_PROJ, SV_COMPUTE_OP_LAYERNORM), OPS(SV_COMPUTE_OP_MOE), TRUE,
         OPS(SV_COMPUTE_OP_FINAL_LAYERNORM, SV_COMPUTE_OP_LM_HEAD, SV_COMPUTE_OP_SAMPLER),
         TP_STABLE_QK},
    /* mixtral.yaml */
    [SV_COMPUTE_ARCH_MIXTRAL] = {OPS(SV_COMPUTE_OP_EMBEDDING),
                                 OPS(SV_COMPUTE_OP_LAYERNORM, SV_COMPUTE_OP_QKV_PROJ,
                                     SV_COMPUTE_OP_ROTARY_EMB, SV_COMPUTE_OP_ATTENTION),
                                 OPS(SV_COMPUTE_OP_O_PROJ, SV_COMPUTE_OP_LAYERNORM),
                                 OPS(SV_COMPUTE_OP_MOE), TRUE,
                                 OPS(SV_COMPUTE_OP_FINAL_LAYERNORM, SV_COMPUTE_OP_LM_HEAD,
                                     SV_COMPUTE_OP_SAMPLER),
                                 TP_STABLE},
    /* phimoe.yaml */
    [SV_COMPUTE_ARCH_PHIMOE] = {OPS(SV_COMPUTE_OP_EMBEDDING),
                                OPS(SV_COMPUTE_OP_LAYERNORM, SV_COMPUTE_OP_QKV_PROJ,
                                    SV_COMPUTE_OP_ROTARY_EMB, SV_COMPUTE_OP_ATTENTION),
                                OPS(SV_COMPUTE_OP_O_PROJ, SV_COMPUTE_OP_LAYERNORM),
                                OPS(SV_COMPUTE_OP_MOE), TRUE,
                                OPS(SV_COMPUTE_OP_FINAL_LAYERNORM, SV_COMPUTE_OP_LM_HEAD,
                                    SV_COMPUTE_OP_SAMPLER),
                                TP_STABLE},
};

const struct sv_compute_layer_seq *sv_compute_layer_seq(sv_compute_model_arch arch)
{
    SV_ASSERT(arch >= 0 && arch < SV_COMPUTE_ARCH_COUNT);
    return &layer_seqs[arch];
}
