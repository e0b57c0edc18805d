/* servesim command-line subcommands. Each returns the process exit status; errors are printed to
 * stderr as "servesim <cmd>: <message>". */
#ifndef SV_CLI_H
#define SV_CLI_H

int sv_cli_replay(int argc, char **argv);
int sv_cli_convert(int argc, char **argv);
int sv_cli_inspect(int argc, char **argv);
int sv_cli_run(int argc, char **argv);
int sv_cli_validate(int argc, char **argv);

#endif
