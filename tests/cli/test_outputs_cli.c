/* Output files of the commands that write them (issue 13, docs/reliability.md "Interrupted runs"
 * and "Output files"), through the built program:
 *   - SIGINT, SIGTERM and SIGHUP during `servesim run` and `servesim convert`: a clean exit with
 *     128 + the signal, no temporary file, no output of the interrupted command;
 *   - an output that is a device (a symbolic link to /dev/null) is written into, not replaced;
 *   - output modes follow the umask (0666 less it) for convert, validate --json and run;
 *   - one run per output folder: a second one is refused before it touches the folder.
 * Every input is generated here; nothing from ../shared is needed. */
#include "proto/proto.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A child starts with the default action for the three signals (a test runner started in the
 * background of a non-interactive shell passes SIGINT on as ignored, which servesim keeps). */
static void child_default_signals(gpointer data)
{
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
}

/* Start `argv` (NULL-terminated) in the background, its stderr to *err_fd. */
static GPid spawn_bg(const char *const *argv, int *err_fd)
{
    GPid pid = 0;
    GError *e = NULL;
    if (!g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                  G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL,
                                  child_default_signals, NULL, &pid, NULL, NULL, err_fd, &e)) {
        fprintf(stderr, "spawn %s: %s\n", argv[0], e->message);
        g_error_free(e);
        return 0;
    }
    return pid;
}

/* The wait status of `pid`, or -1 when it did not end within timeout_s (it is then killed). */
static int wait_child(GPid pid, double timeout_s)
{
    gint64 end = g_get_monotonic_time() + (gint64)(timeout_s * G_USEC_PER_SEC);
    int status = 0;
    while (g_get_monotonic_time() < end) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        g_usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

static char *read_all(int fd)
{
    GString *s = g_string_new(NULL);
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        g_string_append_len(s, buf, n);
    close(fd);
    return g_string_free(s, FALSE);
}

/* Entries of `dir` whose names start with `prefix` ("" for all). */
static int count_prefixed(const char *dir, const char *prefix)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    if (!d)
        return -1;
    int n = 0;
    for (const char *name; (name = g_dir_read_name(d)) != NULL;)
        n += g_str_has_prefix(name, prefix);
    g_dir_close(d);
    return n;
}

/* Wait until `dir` holds an entry starting with `prefix`. */
static gboolean wait_for_entry(const char *dir, const char *prefix, double timeout_s)
{
    gint64 end = g_get_monotonic_time() + (gint64)(timeout_s * G_USEC_PER_SEC);
    while (g_get_monotonic_time() < end) {
        GDir *d = g_dir_open(dir, 0, NULL);
        if (d) {
            for (const char *name; (name = g_dir_read_name(d)) != NULL;)
                if (g_str_has_prefix(name, prefix)) {
                    g_dir_close(d);
                    return TRUE;
                }
            g_dir_close(d);
        }
        g_usleep(5000);
    }
    return FALSE;
}

static int run_sync(const char *const *argv, char **err)
{
    char *out = NULL;
    int status = -1;
    if (!sv_test_spawn(argv, &out, err, &status))
        return -1;
    g_free(out);
    return status;
}

/* An ET file of n compute nodes; with `noisy`, node names that do not compress (so that its .gz
 * form is large). */
static void write_et(const char *path, int n, gboolean noisy)
{
    g_autoptr(GError) e = NULL;
    sv_proto_writer *w = sv_proto_writer_open(path, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    ChakraProtoMsg__GlobalMetadata *md = sv_proto_metadata_new("0.0.4");
    CU_ASSERT(sv_proto_writer_put_metadata(w, md, &e));
    sv_proto_metadata_free(md);
    GRand *rng = g_rand_new_with_seed(13);
    for (int i = 0; i < n; i++) {
        char name[80];
        if (noisy)
            g_snprintf(name, sizeof name, "op.%08x%08x%08x%08x", g_rand_int(rng), g_rand_int(rng),
                       g_rand_int(rng), g_rand_int(rng));
        else
            g_snprintf(name, sizeof name, "op.%d", i);
        ChakraProtoMsg__Node *node =
            sv_proto_node_new((uint64_t)i, name, CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE);
        node->duration_micros = (uint64_t)(i % 97 + 1);
        CU_ASSERT(sv_proto_writer_put_node(w, node, &e));
        sv_proto_node_free(node);
    }
    g_rand_free(rng);
    CU_ASSERT_FATAL(sv_proto_writer_close(w, &e));
}

/* ---- signals -------------------------------------------------------------------------------- */

/* A long run (10^6 requests; it would take minutes) stopped once its temporary outputs exist:
 * exit status 128 + signal, a message naming the signal, and an empty output folder (no
 * temporaries, no summary.json). */
static void run_interrupted(int sig, const char *name)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *dir = g_build_filename(tmp, "out", NULL);
    const char *argv[] = {
        SV_SERVESIM_BIN, "run",     "--model",      "Llama-2-7B", "--hardware",  "A100-80GB",
        "--requests",    "1000000", "--qps",        "1000",       "--input-len", "512",
        "--output-len",  "128",     "--output-dir", dir,          "--quiet",     NULL};
    int err_fd = -1;
    GPid pid = spawn_bg(argv, &err_fd);
    CU_ASSERT_FATAL(pid > 0);
    gboolean started = wait_for_entry(dir, ".requests.csv.", 120);
    CU_ASSERT(started);
    g_usleep(100000); /* well inside the simulation */
    kill(pid, sig);
    int status = wait_child(pid, 120);
    g_autofree char *err = read_all(err_fd);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 128 + sig))
        fprintf(stderr, "%s: wait status %d, stderr:\n%s", name, status, err);
    CU_ASSERT(status >= 0 && WIFEXITED(status)); /* it exited: it was not killed */
    CU_ASSERT(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 128 + sig);
    g_autofree char *said = g_strdup_printf("interrupted by %s", name);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, said));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no outputs written"));
    CU_ASSERT_EQUAL(count_prefixed(dir, ""), 0); /* no temporaries, no summary.json */
    sv_test_rmtree(tmp);
}

static void test_run_sigint(void)
{
    run_interrupted(SIGINT, "SIGINT");
}

static void test_run_sigterm(void)
{
    run_interrupted(SIGTERM, "SIGTERM");
}

static void test_run_sighup(void)
{
    run_interrupted(SIGHUP, "SIGHUP");
}

/* --emit-et (docs/chakra.md "Emitted sets"): a run stopped by a signal leaves no ET temporaries
 * and no manifest.json, the file that says a set of ET output is complete. Run scope: the
 * per-NPU files are open from the start (run.<npu>.et.tmp-XXXXXX) and are removed; iteration
 * scope: the sets written so far stay, each a complete file, but without the manifest. */
static void et_interrupted(const char *scope)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *dir = g_build_filename(tmp, "out", NULL);
    g_autofree char *et = g_build_filename(tmp, "et", NULL);
    const char *argv[] = {
        SV_SERVESIM_BIN, "run",     "--model",      "Llama-2-7B", "--hardware",  "A100-80GB",
        "--requests",    "1000000", "--qps",        "1000",       "--input-len", "512",
        "--output-len",  "128",     "--output-dir", dir,          "--emit-et",   et,
        "--et-scope",    scope,     "--quiet",      NULL};
    int err_fd = -1;
    GPid pid = spawn_bg(argv, &err_fd);
    CU_ASSERT_FATAL(pid > 0);
    CU_ASSERT(wait_for_entry(dir, ".requests.csv.", 120));
    CU_ASSERT(
        wait_for_entry(et, strcmp(scope, "run") == 0 ? "run.0.et.tmp-" : "inst0_iter0.", 120));
    g_usleep(100000);
    kill(pid, SIGTERM);
    int status = wait_child(pid, 120);
    g_autofree char *err = read_all(err_fd);
    CU_ASSERT(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM);
    g_autofree char *manifest = g_build_filename(et, "manifest.json", NULL);
    CU_ASSERT_FALSE(g_file_test(manifest, G_FILE_TEST_EXISTS));
    /* no temporary file left: every entry is a finished .et or a config written at the start */
    GDir *d = g_dir_open(et, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    for (const char *name; (name = g_dir_read_name(d)) != NULL;) {
        if (strstr(name, ".tmp-"))
            fprintf(stderr, "left behind: %s\n", name);
        CU_ASSERT_PTR_NULL(strstr(name, ".tmp-"));
        if (strcmp(scope, "run") == 0)
            CU_ASSERT_FALSE(g_str_has_prefix(name, "run.0.et"));
    }
    g_dir_close(d);
    sv_test_rmtree(tmp);
}

static void test_et_sigterm_run_scope(void)
{
    et_interrupted("run");
}

static void test_et_sigterm_iteration_scope(void)
{
    et_interrupted("iteration");
}

/* `convert` reading a gzip ET from a FIFO: the test writes the first 256 KiB of a larger file and
 * keeps the FIFO open, so that the conversion is certainly under way (its temporary output
 * exists) and waits for input when the signal comes. It must stop, remove its temporary file and
 * exit with 128 + SIGTERM, leaving no OUT. */
static void test_convert_sigterm(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *gz = g_build_filename(tmp, "big.et.gz", NULL);
    write_et(gz, 40000, TRUE);
    g_autofree char *bytes = NULL;
    gsize len = 0;
    CU_ASSERT_FATAL(g_file_get_contents(gz, &bytes, &len, NULL));
    CU_ASSERT_FATAL(len > 512 * 1024); /* the prefix below is not the whole file */
    g_autofree char *fifo = g_build_filename(tmp, "in.fifo", NULL);
    CU_ASSERT_FATAL(mkfifo(fifo, 0600) == 0);
    g_autofree char *dir = g_build_filename(tmp, "out", NULL);
    CU_ASSERT_FATAL(g_mkdir(dir, 0755) == 0);
    g_autofree char *out = g_build_filename(dir, "big.json", NULL);
    const char *argv[] = {SV_SERVESIM_BIN, "convert", fifo, out, NULL};
    int err_fd = -1;
    GPid pid = spawn_bg(argv, &err_fd);
    CU_ASSERT_FATAL(pid > 0);
    int wfd = open(fifo, O_WRONLY); /* waits for the reader */
    CU_ASSERT_FATAL(wfd >= 0);
    size_t want = 256 * 1024, done = 0;
    while (done < want) {
        ssize_t n = write(wfd, bytes + done, want - done);
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    CU_ASSERT(done == want);
    CU_ASSERT(wait_for_entry(dir, "big.json.tmp-", 60));
    g_usleep(200000); /* it converts what it has, then waits for more */
    kill(pid, SIGTERM);
    int status = wait_child(pid, 60);
    close(wfd);
    g_autofree char *err = read_all(err_fd);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM))
        fprintf(stderr, "wait status %d, stderr:\n%s", status, err);
    CU_ASSERT(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "interrupted by SIGTERM"));
    CU_ASSERT_EQUAL(count_prefixed(dir, ""), 0); /* neither big.json nor its temporary */
    sv_test_rmtree(tmp);
}

/* ---- devices and modes ---------------------------------------------------------------------- */

/* A symbolic link to /dev/null as OUT: the output goes into the device; the link stays a link
 * (renaming a temporary file over it would replace it with a regular file) and /dev/null stays a
 * character device. */
static void check_still_device_link(const char *link)
{
    struct stat st;
    CU_ASSERT_FATAL(lstat(link, &st) == 0);
    CU_ASSERT(S_ISLNK(st.st_mode));
    CU_ASSERT_FATAL(stat("/dev/null", &st) == 0);
    CU_ASSERT(S_ISCHR(st.st_mode));
}

/* A tiny measured run and a simulated one (as tests/metrics' tiny_pair) for `validate`. */
static void write_validate_pair(const char *tmp, char **mdir, char **sdir)
{
    *mdir = g_build_filename(tmp, "measured", NULL);
    *sdir = g_build_filename(tmp, "simulated", NULL);
    CU_ASSERT_FATAL(g_mkdir(*mdir, 0755) == 0 && g_mkdir(*sdir, 0755) == 0);
    const char *ts = "t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct\n"
                     "1.0,100.0,10.0,2,0,0.0\n2.0,50.0,6.0,1,0,0.0\n";
    struct {
        const char *dir, *name, *text;
    } files[] = {
        {*mdir, "requests.jsonl",
         "{\"request_id\": \"bench-0\", \"output_toks\": 11, \"arrival_time\": 1777142838.0, "
         "\"queued_ts\": 100.0, \"first_token_ts\": 100.2, \"last_token_ts\": 101.2}\n"},
        {*mdir, "timeseries.csv", ts},
        {*sdir, "requests.csv",
         "request_id,ttft_ns,e2e_ns,output_tokens\n0,220000000,1320000000,11\n"},
        {*sdir, "timeseries.csv", ts},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
        g_autofree char *path = g_build_filename(files[i].dir, files[i].name, NULL);
        CU_ASSERT_FATAL(g_file_set_contents(path, files[i].text, -1, NULL));
    }
}

static void test_device_outputs(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *in = g_build_filename(tmp, "in.et", NULL);
    write_et(in, 50, FALSE);
    const char *names[] = {"null.et", "null.et.gz", "null.json"};
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autofree char *link = g_build_filename(tmp, names[i], NULL);
        CU_ASSERT_FATAL(symlink("/dev/null", link) == 0);
        const char *argv[] = {SV_SERVESIM_BIN, "convert", in, link, NULL};
        g_autofree char *err = NULL;
        int rc = run_sync(argv, &err);
        if (rc != 0)
            fprintf(stderr, "%s", err);
        CU_ASSERT_EQUAL(rc, 0);
        check_still_device_link(link);
    }
    g_autofree char *mdir = NULL, *sdir = NULL;
    write_validate_pair(tmp, &mdir, &sdir);
    g_autofree char *link = g_build_filename(tmp, "validation-null.json", NULL);
    CU_ASSERT_FATAL(symlink("/dev/null", link) == 0);
    const char *argv[] = {SV_SERVESIM_BIN, "validate", "--measured", mdir, "--simulated", sdir,
                          "--json",        link,       NULL};
    g_autofree char *err = NULL;
    CU_ASSERT_EQUAL(run_sync(argv, &err), 0);
    check_still_device_link(link);
    /* No temporary file next to any of them. */
    CU_ASSERT_EQUAL(count_prefixed(tmp, "null."), 3);
    CU_ASSERT_EQUAL(count_prefixed(tmp, "validation-null.json"), 1);
    sv_test_rmtree(tmp);
}

/* Run a command under umask 027 (through sh, which sets it for the exec'd program). */
static int run_umask027(const char *const *args, char **err)
{
    GPtrArray *a = g_ptr_array_new();
    g_ptr_array_add(a, (char *)"/bin/sh");
    g_ptr_array_add(a, (char *)"-c");
    g_ptr_array_add(a, (char *)"umask 027 && exec \"$0\" \"$@\"");
    for (int i = 0; args[i]; i++)
        g_ptr_array_add(a, (char *)args[i]);
    g_ptr_array_add(a, NULL);
    int rc = run_sync((const char *const *)a->pdata, err);
    g_ptr_array_free(a, TRUE);
    return rc;
}

static void check_mode(const char *path, mode_t want)
{
    struct stat st;
    CU_ASSERT_FATAL(stat(path, &st) == 0);
    if ((st.st_mode & 0777) != want)
        fprintf(stderr, "%s: mode %o, want %o\n", path, st.st_mode & 0777, want);
    CU_ASSERT_EQUAL(st.st_mode & 0777, want);
}

/* 0666 less the umask (here 0640), as a plain open(2) would create the file: not mkstemp's 0600
 * and not a fixed 0644. */
static void test_modes_follow_umask(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *in = g_build_filename(tmp, "in.et", NULL);
    write_et(in, 50, FALSE);
    const char *names[] = {"out.et", "out.et.gz", "out.json"};
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autofree char *out = g_build_filename(tmp, names[i], NULL);
        const char *argv[] = {SV_SERVESIM_BIN, "convert", in, out, NULL};
        g_autofree char *err = NULL;
        CU_ASSERT_EQUAL(run_umask027(argv, &err), 0);
        check_mode(out, 0640);
    }
    g_autofree char *mdir = NULL, *sdir = NULL;
    write_validate_pair(tmp, &mdir, &sdir);
    g_autofree char *vj = g_build_filename(tmp, "validation.json", NULL);
    const char *va[] = {SV_SERVESIM_BIN, "validate", "--measured", mdir, "--simulated", sdir,
                        "--json",        vj,         NULL};
    g_autofree char *verr = NULL;
    CU_ASSERT_EQUAL(run_umask027(va, &verr), 0);
    check_mode(vj, 0640);
    g_autofree char *dir = g_build_filename(tmp, "run", NULL);
    const char *ra[] = {SV_SERVESIM_BIN, "run",          "--model",    "Llama-2-7B",
                        "--hardware",    "A100-80GB",    "--requests", "5",
                        "--quiet",       "--output-dir", dir,          NULL};
    g_autofree char *rerr = NULL;
    CU_ASSERT_EQUAL(run_umask027(ra, &rerr), 0);
    check_mode(dir, 0750);
    const char *outs[] = {"requests.csv", "timeseries.csv", "summary.json", "run.json"};
    for (size_t i = 0; i < G_N_ELEMENTS(outs); i++) {
        g_autofree char *p = g_build_filename(dir, outs[i], NULL);
        check_mode(p, 0640);
    }
    sv_test_rmtree(tmp);
}

/* ---- one run per output folder -------------------------------------------------------------- */

static const char *quick_args(const char *dir, const char **argv)
{
    const char *a[] = {SV_SERVESIM_BIN, "run", "--model", "Llama-2-7B",   "--hardware", "A100-80GB",
                       "--requests",    "5",   "--quiet", "--output-dir", dir,          NULL};
    memcpy(argv, a, sizeof a);
    return dir;
}

/* While another process holds the folder's lock (flock on the folder, as a running servesim
 * does), a run there is refused with a message naming the folder, and writes nothing there; once
 * the lock is released the same run succeeds. */
static void test_lock_refuses_second_run(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *dir = g_build_filename(tmp, "out", NULL);
    CU_ASSERT_FATAL(g_mkdir(dir, 0755) == 0);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_FATAL(flock(fd, LOCK_EX | LOCK_NB) == 0);
    const char *argv[12];
    quick_args(dir, argv);
    g_autofree char *err = NULL;
    int rc = run_sync(argv, &err);
    CU_ASSERT_EQUAL(rc, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, dir));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "in use by another servesim run"));
    CU_ASSERT_EQUAL(count_prefixed(dir, ""), 0); /* nothing written, not even a temporary */
    close(fd);
    g_autofree char *err2 = NULL;
    CU_ASSERT_EQUAL(run_sync(argv, &err2), 0);
    CU_ASSERT_EQUAL(count_prefixed(dir, ""), 4); /* with run.json (issue 14) */
    sv_test_rmtree(tmp);
}

/* Two servesim runs: the second, started while the first writes the folder, is refused; the
 * first is then stopped (SIGTERM) and leaves the folder empty. */
static void test_two_runs_one_folder(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *dir = g_build_filename(tmp, "out", NULL);
    const char *longa[] = {SV_SERVESIM_BIN, "run",        "--model", "Llama-2-7B", "--hardware",
                           "A100-80GB",     "--requests", "1000000", "--qps",      "1000",
                           "--output-dir",  dir,          "--quiet", NULL};
    int err_fd = -1;
    GPid pid = spawn_bg(longa, &err_fd);
    CU_ASSERT_FATAL(pid > 0);
    CU_ASSERT(wait_for_entry(dir, ".requests.csv.", 120));
    const char *argv[12];
    quick_args(dir, argv);
    g_autofree char *err = NULL;
    CU_ASSERT_EQUAL(run_sync(argv, &err), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "in use by another servesim run"));
    kill(pid, SIGTERM);
    int status = wait_child(pid, 120);
    g_autofree char *err1 = read_all(err_fd);
    CU_ASSERT(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM);
    CU_ASSERT_EQUAL(count_prefixed(dir, ""), 0);
    sv_test_rmtree(tmp);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"run_sigint", test_run_sigint},
        {"run_sigterm", test_run_sigterm},
        {"run_sighup", test_run_sighup},
        {"--emit-et, run scope: SIGTERM leaves no temporary and no manifest",
         test_et_sigterm_run_scope},
        {"--emit-et, iteration scope: SIGTERM leaves complete sets and no manifest",
         test_et_sigterm_iteration_scope},
        {"convert_sigterm", test_convert_sigterm},
        {"device_outputs", test_device_outputs},
        {"modes_follow_umask", test_modes_follow_umask},
        {"lock_refuses_second_run", test_lock_refuses_second_run},
        {"two_runs_one_folder", test_two_runs_one_folder},
        {NULL, NULL},
    };
    sv_test_add_suite("outputs_cli", cases);
    return sv_test_run();
}
