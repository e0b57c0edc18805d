/* servesim afd: one decode iteration under attention/FFN disaggregation (msg/afd.c, docs/afd.md).
 * The layer's attention side is timed on the attention hardware, its MLP on the FFN hardware
 * (roofline backend, committed calibration), and the ping-pong of micro-batches is run by dag/'s
 * executor. Prints one JSON object. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "compute/compute.h"
#include "msg/msg.h"

static const char afd_usage[] =
    "usage: servesim afd --model NAME --hardware HW --afd JSON --decode N --kv-len K\n"
    "                    --net-gbps BW --net-latency-ns NS [--npus N]\n"
    "\n"
    "Time one decode iteration of N requests of K KV tokens each under attention/FFN\n"
    "disaggregation (MegaScale-Infer's ping-pong pipeline; docs/afd.md) and print one JSON "
    "object.\n"
    "\n"
    "  --model NAME          model (built-in catalog)\n"
    "  --hardware HW         attention devices (hardware catalog)\n"
    "  --npus N              attention devices, tensor parallel (default 1)\n"
    "  --afd JSON            the instance's afd object: {\"ffn_hardware\": HW, \"ffn_npus\": N,\n"
    "                        \"micro_batches\": m}\n"
    "  --decode N            decode requests in the batch (one token each)\n"
    "  --kv-len K            KV tokens of each request\n"
    "  --net-gbps BW         attention <-> FFN link, GB/s per direction\n"
    "  --net-latency-ns NS   per transfer\n";

static int afd_fail(const char *msg)
{
    fprintf(stderr, "servesim afd: %s\n", msg);
    return 1;
}

int sv_cli_afd(int argc, char **argv)
{
    g_autofree char *model = NULL, *hardware = NULL, *afd = NULL;
    gint64 npus = 1, decode = 0, kv_len = 0, net_lat = -1;
    double net_gbps = 0;
    const GOptionEntry entries[] = {
        {"model", 0, 0, G_OPTION_ARG_STRING, &model, NULL, NULL},
        {"hardware", 0, 0, G_OPTION_ARG_STRING, &hardware, NULL, NULL},
        {"npus", 0, 0, G_OPTION_ARG_INT64, &npus, NULL, NULL},
        {"afd", 0, 0, G_OPTION_ARG_STRING, &afd, NULL, NULL},
        {"decode", 0, 0, G_OPTION_ARG_INT64, &decode, NULL, NULL},
        {"kv-len", 0, 0, G_OPTION_ARG_INT64, &kv_len, NULL, NULL},
        {"net-gbps", 0, 0, G_OPTION_ARG_DOUBLE, &net_gbps, NULL, NULL},
        {"net-latency-ns", 0, 0, G_OPTION_ARG_INT64, &net_lat, NULL, NULL},
        G_OPTION_ENTRY_NULL,
    };
    int status = sv_cli_parse_options("afd", afd_usage, entries, &argc, &argv);
    if (status >= 0)
        return status;
    if (argc != 1 || !model || !hardware || !afd) {
        fprintf(stderr, "servesim afd: %s\n\n%s",
                argc != 1 ? "unexpected argument" : "--model, --hardware and --afd are required",
                afd_usage);
        return 2;
    }
    if (npus < 1 || npus > 4096)
        return afd_fail("--npus: must be in [1, 4096]");
    if (decode < 1 || kv_len < 1)
        return afd_fail("--decode and --kv-len: must be at least 1");
    if (!(net_gbps > 0) || net_lat < 0)
        return afd_fail("--net-gbps must be > 0 and --net-latency-ns given (>= 0)");
    g_autoptr(GError) e = NULL;
    g_autoptr(JsonParser) p = json_parser_new();
    if (!json_parser_load_from_data(p, afd, -1, &e))
        return afd_fail(e->message);
    JsonNode *root = json_parser_get_root(p);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root))
        return afd_fail("--afd: must be a JSON object");
    struct sv_msg_afd_cfg cfg;
    struct sv_compute_model_cfg m;
    struct sv_compute_hw_cfg ahw, fhw;
    if (!sv_msg_afd_parse(json_node_get_object(root), "--afd", NULL, 1, &cfg, &e) ||
        !sv_compute_model_lookup(model, NULL, &m, &e) ||
        !sv_compute_hw_lookup(hardware, &ahw, &e) ||
        !sv_compute_hw_lookup(cfg.ffn_hardware, &fhw, &e))
        return afd_fail(e->message);
    if (cfg.ffn_ep == 1) /* the one-iteration model has one FFN TP group (docs/afd.md) */
        return afd_fail("--afd.ffn_ep: expert parallelism in the FFN group is modelled by servesim "
                        "run only (docs/afd.md \"MoE: expert parallelism\")");
    if (cfg.ffn_group[0]) /* one instance here: a shared FFN group is servesim run's */
        return afd_fail("--afd.ffn_group: several attention instances sharing an FFN group are "
                        "modelled by servesim run only (docs/afd.md)");
    if (decode < cfg.micro_batches)
        return afd_fail("--decode: fewer requests than --afd micro_batches");
    g_autoptr(sv_compute_latency) la =
        sv_compute_latency_new_roofline(&m, &ahw, (int)npus, NULL, &e);
    g_autoptr(sv_compute_latency) lf =
        la ? sv_compute_latency_new_roofline(&m, &fhw, cfg.ffn_npus, NULL, &e) : NULL;
    if (!lf)
        return afd_fail(e->message);
    struct sv_msg_afd_iter_req q = {.n_layers = m.num_layers,
                                    .micro_batches = cfg.micro_batches,
                                    .tokens = decode,
                                    .hidden_size = m.hidden_size,
                                    .net_gbps = net_gbps,
                                    .net_latency_ns = net_lat};
    int64_t mb[SV_MSG_AFD_MAX_MB];
    sv_msg_afd_split(decode, cfg.micro_batches, mb);
    for (int32_t i = 0; i < cfg.micro_batches; i++) {
        int64_t *kv = g_new(int64_t, mb[i]);
        for (int64_t j = 0; j < mb[i]; j++)
            kv[j] = kv_len;
        struct sv_compute_batch_shape s;
        sv_compute_batch_shape_init(&s, NULL, NULL, 0, kv, mb[i]);
        sv_msg_afd_op_times(la, lf, &s, &q.attn_ns[i], &q.ffn_ns[i]);
        g_free(kv);
    }
    struct sv_msg_afd_iter r;
    if (!sv_msg_afd_iter_run(&q, &r, &e))
        return afd_fail(e->message);
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "model");
    json_builder_add_string_value(b, m.name);
    json_builder_set_member_name(b, "attention_hardware");
    json_builder_add_string_value(b, ahw.name);
    json_builder_set_member_name(b, "ffn_hardware");
    json_builder_add_string_value(b, fhw.name);
    json_builder_set_member_name(b, "layers");
    json_builder_add_int_value(b, m.num_layers);
    json_builder_set_member_name(b, "micro_batches");
    json_builder_begin_array(b);
    for (int32_t i = 0; i < cfg.micro_batches; i++) {
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "tokens");
        json_builder_add_int_value(b, r.mb_tokens[i]);
        json_builder_set_member_name(b, "attn_ns_per_layer");
        json_builder_add_int_value(b, q.attn_ns[i]);
        json_builder_set_member_name(b, "ffn_ns_per_layer");
        json_builder_add_int_value(b, q.ffn_ns[i]);
        json_builder_set_member_name(b, "transfer_bytes_per_layer");
        json_builder_add_int_value(b, r.mb_tokens[i] * m.hidden_size * 2);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "a2f_bytes");
    json_builder_add_int_value(b, (gint64)r.a2f_bytes);
    json_builder_set_member_name(b, "f2a_bytes");
    json_builder_add_int_value(b, (gint64)r.f2a_bytes);
    json_builder_set_member_name(b, "iteration_ns");
    json_builder_add_int_value(b, r.end_ns);
    json_builder_set_member_name(b, "serial_ns");
    json_builder_add_int_value(b, r.serial_ns);
    json_builder_end_object(b);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) node = json_builder_get_root(b);
    json_generator_set_root(gen, node);
    json_generator_set_pretty(gen, TRUE);
    g_autofree char *text = json_generator_to_data(gen, NULL);
    printf("%s\n", text);
    return 0;
}
