/* Subcommands of the ctrace command, one file each. Each takes the
 * arguments after its own name (argv[0] is the subcommand's name) and
 * returns the process exit status. */
#ifndef CTRACE_TOOLS_CMD_H
#define CTRACE_TOOLS_CMD_H

typedef struct ctrace__cmd {
  const char *name;
  int (*main)(int argc, char **argv);
  const char *summary;
} ctrace__cmd;

/* ctrace run (run.c). */
int ctrace__cmd_run(int argc, char **argv);

/* The table, in src/tools/ctrace.c. */
extern const ctrace__cmd ctrace__cmds[];

#endif
