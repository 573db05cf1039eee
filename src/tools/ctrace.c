/* The ctrace command. */
#include <stdio.h>
#include <string.h>

#include "ctrace/ctrace.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: ctrace <command> [arguments]\n"
          "\n"
          "ctrace records Go execution traces of C programs; go tool trace opens them.\n"
          "\n"
          "commands:\n"
          "  version    print the version\n"
          "  help       print this help\n");
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
    printf("ctrace %s\n", CTRACE_VERSION_STRING);
    return 0;
  }
  fprintf(stderr, "ctrace: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
