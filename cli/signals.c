/* SIGINT, SIGTERM and SIGHUP while a command writes files (docs/outputs.md, "Interrupted runs").
 *
 * The handler only records the signal in a flag (async-signal-safe); the command reads it where it
 * can stop cleanly: `run` before every simulated event (sv_engine_set_interrupt), `convert` before
 * every message. It then takes its ordinary error path, which removes its temporary files and
 * frees what it built, and exits with 128 + the signal's number, as a shell reports a process the
 * signal killed. The flag is the process's one global: signals are delivered to the process, not
 * to one simulation. No SA_RESTART: a read blocked on a FIFO or a terminal returns EINTR, so the
 * command fails there and, seeing the flag, reports the signal instead of waiting for input
 * (reads and writes of regular files are not interrupted). SA_RESETHAND: a second signal finds
 * the default action and ends the process at once (the way out of a command stuck where it never
 * reads the flag; its temporary files then stay). A signal ignored when the program started
 * (nohup) stays ignored. */
#include "cli/cli.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t caught;

static void on_signal(int sig)
{
    caught = sig;
}

const volatile sig_atomic_t *sv_cli_signals_catch(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < G_N_ELEMENTS(sigs); i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(sigs[i], &sa, NULL);
    }
    return &caught;
}

const char *sv_cli_signal_name(int sig)
{
    switch (sig) {
    case SIGINT:
        return "SIGINT";
    case SIGTERM:
        return "SIGTERM";
    case SIGHUP:
        return "SIGHUP";
    default:
        return "a signal";
    }
}
