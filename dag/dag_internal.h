/* dag module internals shared by dag.c (graph), exec.c (executor) and et.c (Chakra ET). */
#ifndef SV_DAG_INTERNAL_H
#define SV_DAG_INTERNAL_H

#include "dag/dag.h"

/* "No index" for node and edge links. */
#define SV_DAG_NONE UINT32_MAX

/* Nodes live in pages of 2^SV_DAG_PAGE_SHIFT so that node pointers stay valid as the DAG grows. */
#define SV_DAG_PAGE_SHIFT 10
#define SV_DAG_PAGE_SIZE (1u << SV_DAG_PAGE_SHIFT)

/* An edge; in-lists and out-lists are doubly linked through the edge array, so adding or
 * detaching an edge is O(1) and allocates nothing beyond the array's amortized growth. Free slots
 * are chained through next_out. */
struct sv_dag_edge {
    uint32_t parent;
    uint32_t child;
    uint32_t next_out, prev_out;
    uint32_t next_in, prev_in;
    uint8_t kind; /* sv_dag_edge_kind */
    uint8_t live;
};

/* Per-node adjacency, run state and ET extras, by node index (parallel to the node pages). */
struct sv_dag_nrt {
    uint32_t out_head, out_tail, in_head, in_tail;
    uint32_t n_out, n_in;
    /* In-edges, per edge kind, whose parent has not finished. */
    uint32_t pend[2];
    uint8_t state;    /* sv_dag_node_state */
    uint8_t in_ready; /* listed in the executor's ready array */
    uint16_t et_has;  /* SV_DAG_HAS_* bits parsed from the node's original ET attributes */
    uint32_t extra_len;
    const uint8_t *extra; /* packed ChakraProtoMsg.Node holding the kept ET fields, or NULL */
    sv_time start_ns, end_ns;
};

struct sv_dag {
    GPtrArray *pages; /* sv_dag_node[SV_DAG_PAGE_SIZE] each */
    GArray *nrt;      /* struct sv_dag_nrt */
    GArray *edges;    /* struct sv_dag_edge */
    uint32_t edge_free;
    size_t n_edges[2];
    size_t n_nodes;
    uint64_t next_id;
    GStringChunk *strings; /* names, pg names, ET extras */
    /* id -> index. While every node was added with the id after the previous one's (the
     * iteration DAGs of msg/, ids from sv_dag_next_id) the map is not built (ids.cap == 0) and
     * index = id - dense_base; the first other id builds it (keys sv_hash_mix64(id)). */
    uint64_t dense_base;
    sv_u64map ids;
    /* GlobalMetadata of the loaded ET file (serialized), or NULL. */
    uint8_t *et_metadata;
    size_t et_metadata_len;
    sv_dag_exec *exec; /* attached executor, or NULL */
};

/* TRUE while node ids are dense (no id map, see sv_dag.ids). */
static inline gboolean sv_dag__dense(const sv_dag *dag)
{
    return dag->ids.cap == 0;
}

static inline sv_dag_node *sv_dag__node(const sv_dag *dag, uint32_t idx)
{
    sv_dag_node *page = g_ptr_array_index(dag->pages, idx >> SV_DAG_PAGE_SHIFT);
    return &page[idx & (SV_DAG_PAGE_SIZE - 1)];
}

static inline struct sv_dag_nrt *sv_dag__nrt(const sv_dag *dag, uint32_t idx)
{
    return &g_array_index(dag->nrt, struct sv_dag_nrt, idx);
}

static inline struct sv_dag_edge *sv_dag__edge(const sv_dag *dag, uint32_t e)
{
    return &g_array_index(dag->edges, struct sv_dag_edge, e);
}

/* Index of an id, or SV_DAG_NONE. */
uint32_t sv_dag__lookup(const sv_dag *dag, uint64_t id);

/* Graph edits that bypass the run-state checks (ET loading: no executor). */
void sv_dag__edge_link(sv_dag *dag, uint32_t parent, uint32_t child, sv_dag_edge_kind kind);

/* Executor hooks called by the graph. refresh: node idx's pending counts may have changed. */
void sv_dag__exec_refresh(sv_dag_exec *ex, uint32_t idx);
void sv_dag__exec_detach(sv_dag_exec *ex);

/* The longest-found cycle walk used by sv_dag_check_acyclic and the diagnosis: among nodes with
 * `alive[i]` set, follow edges (ctrl ones too unless data_only). Appends one cycle to `out` as
 * "a -> b -> ... -> a" (node ids) and returns TRUE, or returns FALSE when there is none. */
gboolean sv_dag__find_cycle(const sv_dag *dag, const guint8 *alive, gboolean data_only,
                            GString *out);

/* ET attribute of one modelled parameter (bit of SV_DAG_HAS_*), with the kind CHAKRA_ET.md 1.3
 * recommends (et.c); servesim's own attribute names. */
ChakraProtoMsg__AttributeProto *sv_dag__et_param_new(int bit, const struct sv_dag_params *p);
#define SV_DAG_ATTR_KIND "sv_kind"
#define SV_DAG_ATTR_DURATION_NS "sv_duration_ns"

#endif
