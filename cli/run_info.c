/* run.json (docs/outputs.md): the command line, the servesim version, the seed and the cluster
 * as resolved. The planner has no writer for its resolved config, so the file records the cluster
 * config's path, SHA-256 and content (the JSON as given), the identity the planner resolved for
 * every instance (model, hardware, role, node, parallelism, latency source) and, for the quick
 * form, the flags that built the cluster (in argv). Nothing in it depends on the clock, the host or
 * the working directory: identical runs write identical bytes. */
#include <errno.h>
#include <string.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "cli/run_info.h"

#ifndef SV_VERSION
#define SV_VERSION "unknown"
#endif

static const char *role_name(sv_msg_role r)
{
    switch (r) {
    case SV_MSG_ROLE_PREFILL:
        return "prefill";
    case SV_MSG_ROLE_DECODE:
        return "decode";
    default:
        return "both";
    }
}

static void put_str(JsonBuilder *b, const char *k, const char *v)
{
    json_builder_set_member_name(b, k);
    if (v)
        json_builder_add_string_value(b, v);
    else
        json_builder_add_null_value(b);
}

static void put_int(JsonBuilder *b, const char *k, int64_t v)
{
    json_builder_set_member_name(b, k);
    json_builder_add_int_value(b, v);
}

/* {"path", "bytes", "sha256", "content"}: the file as given (content only for JSON). */
static gboolean put_file(JsonBuilder *b, const char *key, const char *path, gboolean content,
                         GError **error)
{
    json_builder_set_member_name(b, key);
    if (!path) {
        json_builder_add_null_value(b);
        return TRUE;
    }
    json_builder_begin_object(b);
    put_str(b, "path", path);
    if (content) {
        g_autofree char *text = NULL;
        gsize len = 0;
        if (!g_file_get_contents(path, &text, &len, error)) {
            g_prefix_error(error, "run.json: ");
            return FALSE;
        }
        g_autofree char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (guchar *)text, len);
        put_int(b, "bytes", (int64_t)len);
        put_str(b, "sha256", sum);
        g_autoptr(JsonParser) p = json_parser_new();
        if (!json_parser_load_from_data(p, text, (gssize)len, error)) {
            g_prefix_error(error, "run.json: %s: ", path);
            return FALSE;
        }
        json_builder_set_member_name(b, "content");
        json_builder_add_value(b, json_node_copy(json_parser_get_root(p)));
    } else {
        /* A trace can be gigabytes: its size, not a hash of it (hashing would cost more than
         * reading it for the run). */
        GStatBuf st;
        if (g_stat(path, &st) == 0)
            put_int(b, "bytes", (int64_t)st.st_size);
    }
    json_builder_end_object(b);
    return TRUE;
}

char *sv_cli_run_info_json(const struct sv_cli_run_info *ri, GError **error)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "argv");
    json_builder_begin_array(b);
    json_builder_add_string_value(b, "servesim");
    json_builder_add_string_value(b, "run");
    for (int i = 1; i < ri->argc; i++)
        json_builder_add_string_value(b, ri->argv[i]);
    json_builder_end_array(b);
    put_str(b, "servesim_version", SV_VERSION);
    put_str(b, "git_describe", sv_cli_git_describe[0] ? sv_cli_git_describe : NULL);
    json_builder_set_member_name(b, "seed");
    json_builder_add_int_value(b, (gint64)ri->seed);
    put_str(b, "cluster_source", ri->cluster_path ? "file" : "flags");
    if (!put_file(b, "cluster_file", ri->cluster_path, TRUE, error) ||
        !put_file(b, "workload_file", ri->workload_path, FALSE, error))
        return NULL;
    const struct sv_planner_cluster_cfg *c = ri->cluster;
    json_builder_set_member_name(b, "instances");
    json_builder_begin_array(b);
    for (int32_t i = 0; c && i < c->n_instances; i++) {
        const struct sv_planner_instance_cfg *ic = &c->instances[i];
        json_builder_begin_object(b);
        put_int(b, "id", i);
        put_int(b, "node", ic->node);
        put_str(b, "model", ic->model_name);
        put_str(b, "hardware", ic->hardware);
        put_str(b, "role", role_name(ic->role));
        put_int(b, "num_npus", ic->num_npus);
        put_int(b, "tp", ic->tp_size);
        put_int(b, "pp", ic->pp_size);
        put_int(b, "ep", ic->ep_size);
        put_str(b, "latency_source", ri->latency_sources ? ri->latency_sources[i] : NULL);
        if (ic->afd.micro_batches > 0) { /* attention/FFN disaggregation (docs/afd.md) */
            json_builder_set_member_name(b, "afd");
            json_builder_begin_object(b);
            put_str(b, "attention_hardware", ic->hardware);
            put_int(b, "attention_npus", ic->num_npus);
            put_str(b, "ffn_hardware", ic->afd.ffn_hardware);
            put_int(b, "ffn_npus", ic->afd.ffn_npus);
            put_int(b, "micro_batches", ic->afd.micro_batches);
            struct sv_metrics_instance_info afd_in;
            if (ri->metrics && sv_metrics_get_instance(ri->metrics, i, &afd_in))
                put_str(b, "ffn_parallel", afd_in.ffn_ep ? "ep" : "tp");
            if (ic->afd_group_size > 0) { /* a shared FFN group: its devices are the owner's */
                put_str(b, "ffn_group", ic->afd.ffn_group);
                put_int(b, "ffn_owner", ic->afd_group_owner);
            }
            json_builder_end_object(b);
        }
        struct sv_metrics_instance_info in;
        if (ri->metrics && sv_metrics_get_instance(ri->metrics, i, &in) && in.has_limits) {
            /* What the planner resolved: flags over the config over vLLM's defaults. */
            json_builder_set_member_name(b, "resolved");
            json_builder_begin_object(b);
            put_str(b, "engine", in.engine);
            put_int(b, "max_num_seqs", in.max_num_seqs);
            put_int(b, "max_num_batched_tokens", in.max_num_batched_tokens);
            put_int(b, "long_prefill_token_threshold", in.long_prefill_token_threshold);
            put_int(b, "max_model_len", in.max_model_len);
            put_int(b, "block_size", (int64_t)in.kv_block_size);
            json_builder_set_member_name(b, "enable_chunked_prefill");
            json_builder_add_boolean_value(b, in.enable_chunked_prefill);
            json_builder_set_member_name(b, "enable_prefix_caching");
            json_builder_add_boolean_value(b, in.enable_prefix_caching);
            put_int(b, "kv_blocks", (int64_t)in.kv_blocks);
            json_builder_end_object(b);
        }
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    json_generator_set_root(gen, root);
    json_generator_set_pretty(gen, TRUE);
    json_generator_set_indent(gen, 2);
    g_autofree char *text = json_generator_to_data(gen, NULL);
    return g_strconcat(text, "\n", NULL);
}
