/* servesim command-line subcommands. Each returns the process exit status; errors are printed to
 * stderr as "servesim <cmd>: <message>". */
#ifndef SV_CLI_H
#define SV_CLI_H

#include <glib.h>
#include <signal.h>

int sv_cli_replay(int argc, char **argv);
int sv_cli_convert(int argc, char **argv);
int sv_cli_inspect(int argc, char **argv);
int sv_cli_run(int argc, char **argv);
int sv_cli_validate(int argc, char **argv);
int sv_cli_report(int argc, char **argv);
int sv_cli_sweep(int argc, char **argv);
int sv_cli_afd(int argc, char **argv);

/* Parse the options of `servesim CMD` (`entries`, may be NULL, plus --help/-h, which prints
 * `usage` to stdout) with GOptionContext; GLib's own help is off, `usage` is the documented text.
 * Parsed options leave argc/argv, the other arguments stay in order. Returns -1 to go on, or the
 * exit status: 0 after --help, 2 after a bad option (its message names the option, then usage
 * on stderr). */
int sv_cli_parse_options(const char *cmd, const char *usage, const GOptionEntry *entries, int *argc,
                         char ***argv);

/* Catch SIGINT, SIGTERM and SIGHUP (cli/signals.c): returns the flag the handler sets to the
 * signal's number (0 until one arrives), for the command to read where it can stop cleanly; it
 * then exits with 128 + that number. */
const volatile sig_atomic_t *sv_cli_signals_catch(void);
const char *sv_cli_signal_name(int sig); /* "SIGINT", "SIGTERM", "SIGHUP" */

#endif
