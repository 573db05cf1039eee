/* A tiny HTTP/1.1 server of one document held in memory, for ctrace view:
 * just enough for a browser page of another origin (ui.perfetto.dev) to
 * fetch it. */
#ifndef CTRACE_TOOLS_SERVE_H
#define CTRACE_TOOLS_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ctrace__serve_doc {
  const char *path;   /* the one path served, "/NAME" (no query) */
  const void *body;   /* its bytes */
  size_t len;
  const char *origin; /* the page allowed to read it (Access-Control-Allow-Origin) */
} ctrace__serve_doc;

/* Listens on 127.0.0.1:*port only (never another interface: the document
 * is for this machine's browser). *port 0 takes a free port and sets
 * *port to it. The socket, or -1 with the reason in err (a port in use is
 * said as such). */
int ctrace__serve_listen(uint16_t *port, char *err, size_t errlen);

/* Serves doc on the listening socket fd, one connection at a time, until
 * SIGINT or SIGTERM or, when once, until the document has been sent whole
 * once. GET and HEAD of doc->path, an OPTIONS preflight of any path; 404
 * for other paths. Each request is logged on stderr when log. Closes fd.
 * 0, or -1 with the reason in err. */
int ctrace__serve(int fd, const ctrace__serve_doc *doc, bool once, bool log, char *err, size_t errlen);

#endif
