/* servesim fuzz targets (docs/reliability.md "Fuzzing"): shared helpers.
 *
 * Every target is one LLVMFuzzerTestOneInput built twice: with libFuzzer (clang, -DSV_FUZZ=ON:
 * fuzz_<name>) and with a plain main that runs files and folders through it (fuzz_<name>_run,
 * always built; ctest runs the generated seeds and tests/fuzz/regressions/<name>/ with it). The
 * readers under test take a path, so each input is written to a file in a private temporary
 * folder first. */
#ifndef SV_FUZZ_H
#define SV_FUZZ_H

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Write the input to <private tmpdir>/<name> and return that path (owned by the helper, valid
 * until the next call). The first call sets up the process: warnings are silenced (loaders
 * g_warning unknown keys: noise at 10^5 inputs per minute), criticals abort (a g_return_if_fail
 * reached from input is a bug), and the folder is removed at exit. */
const char *sv_fuzz_input_file(const uint8_t *data, size_t size, const char *name);

/* Write a fixed companion file `name` (no '/') of the input into the same private folder (an
 * input file of the same name is the target's to avoid) and return its path (owned by the helper,
 * valid until exit); writing it again replaces it. Removed at exit. */
const char *sv_fuzz_aux_file(const char *name, const void *data, size_t size);

/* A path in the same private folder, for a target's own outputs (g_free; the target removes the
 * file). */
char *sv_fuzz_tmp_path(const char *name);

/* The oracle on a reader's answer: success without an error, or failure with one error whose
 * message is non-empty and names the file (its base name). Anything else aborts with the
 * details, which libFuzzer reports as a crash. With SV_FUZZ_VERBOSE set in the environment,
 * prints "fuzz: ok" or the error (to see what a seed or a regression input ends in). */
void sv_fuzz_check(gboolean ok, const GError *error, const char *path);

#endif
