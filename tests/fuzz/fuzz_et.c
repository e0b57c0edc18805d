/* Fuzz target: Chakra ET files (proto/ reader and JSON view, dag/ loader, saver and executor).
 *
 * One input is one .et file (gzip or not). It goes through what `servesim inspect`, `convert`
 * and `replay` do with a file: the streaming reader with dependency checks, the JSON view of
 * every node, the summary, sv_dag_load_et, and, when it loads, a save and reload (same nodes and
 * edges) and a run of the DAG with the built-in replay handlers (a stall is an error with a
 * diagnosis; nothing may abort). */
#include "fuzz.h"

#include "core/core.h"
#include "dag/dag.h"
#include "proto/proto.h"

#include <stdio.h>
#include <stdlib.h>

static void read_stream(const char *path)
{
    GError *e = NULL;
    sv_proto_reader *r = sv_proto_reader_open(path, &e);
    if (r) {
        sv_proto_reader_set_dep_check(r, SV_PROTO_DEP_CHECK_ALL);
        JsonNode *mj = sv_proto_metadata_to_json(sv_proto_reader_metadata(r));
        g_free(sv_proto_json_to_text(mj));
        json_node_unref(mj);
        ChakraProtoMsg__Node *n = NULL;
        while (sv_proto_reader_next(r, &n, &e)) {
            JsonNode *j = sv_proto_node_to_json(n);
            g_free(sv_proto_json_to_text(j));
            json_node_unref(j);
            sv_proto_node_free(n);
        }
        sv_proto_reader_close(r);
    }
    sv_fuzz_check(e == NULL, e, path);
    g_clear_error(&e);

    struct sv_proto_summary *s = sv_proto_summary_new(path, &e);
    sv_fuzz_check(s != NULL, e, path);
    if (s) {
        JsonNode *j = sv_proto_summary_to_json(s);
        json_node_unref(j);
        g_free(sv_proto_summary_to_text(s));
    }
    sv_proto_summary_free(s);
    g_clear_error(&e);
}

static void run_dag(sv_dag *dag)
{
    sv_engine *eng = sv_engine_new(1);
    GError *e = NULL;
    sv_dag_exec *ex = sv_dag_exec_new(dag, eng, NULL, &e);
    if (!ex) {
        fprintf(stderr, "fuzz: sv_dag_exec_new: %s\n", e->message);
        abort();
    }
    if (!sv_dag_exec_run(ex, &e)) {
        if (!e || !e->message[0]) {
            fprintf(stderr, "fuzz: a DAG that did not finish without a diagnosis\n");
            abort();
        }
        g_clear_error(&e);
    }
    sv_engine_free(eng);
    sv_dag_exec_free(ex);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = sv_fuzz_input_file(data, size, "fuzz.0.et");
    read_stream(path);

    GError *e = NULL;
    sv_dag *dag = sv_dag_load_et(path, NULL, &e);
    sv_fuzz_check(dag != NULL, e, path);
    g_clear_error(&e);
    if (!dag)
        return 0;
    /* Save and reload: what loaded is written back whole and reads the same. */
    g_autofree char *copy = sv_fuzz_tmp_path("fuzz.copy.et");
    if (!sv_dag_save_et(dag, copy, &e)) {
        fprintf(stderr, "fuzz: a loaded DAG does not save: %s\n", e->message);
        abort();
    }
    sv_dag *again = sv_dag_load_et(copy, NULL, &e);
    if (!again || sv_dag_node_count(again) != sv_dag_node_count(dag) ||
        sv_dag_edge_count(again) != sv_dag_edge_count(dag)) {
        fprintf(stderr, "fuzz: save and reload differ: %s\n", e ? e->message : "counts");
        abort();
    }
    sv_dag_free(again);
    remove(copy);
    run_dag(dag);
    sv_dag_free(dag);
    return 0;
}
