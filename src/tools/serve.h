/* A tiny HTTP/1.1 server of documents held in memory, for ctrace view:
 * just enough for a browser page of another origin (ui.perfetto.dev) to
 * fetch a trace. */
#ifndef CTRACE_TOOLS_SERVE_H
#define CTRACE_TOOLS_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A document served: its bytes, valid until the next lookup, and its
 * Content-Type. trace: a trace (what --once waits to have sent whole),
 * not a page. */
typedef struct ctrace__serve_doc {
  const void *body;
  size_t len;
  const char *type;
  bool trace;
} ctrace__serve_doc;

/* What is served: get looks up path (no query): 1 with *doc set, 0 for
 * none (404), -1 if it could not be made (500, said by get). */
typedef struct ctrace__serve_site {
  int (*get)(void *arg, const char *path, ctrace__serve_doc *doc);
  void *arg;
  const char *origin; /* the page allowed to read it (Access-Control-Allow-Origin) */
} ctrace__serve_site;

/* Listens on 127.0.0.1:*port only (never another interface: the document
 * is for this machine's browser). *port 0 takes a free port and sets
 * *port to it. The socket, or -1 with the reason in err (a port in use is
 * said as such). */
int ctrace__serve_listen(uint16_t *port, char *err, size_t errlen);

/* Serves site on the listening socket fd, one connection at a time, until
 * SIGINT or SIGTERM or, when once, until a trace has been sent whole
 * once. GET and HEAD of its paths, an OPTIONS preflight of any path; 404
 * for other paths. Each request is logged on stderr when log. Closes fd.
 * 0, or -1 with the reason in err. */
int ctrace__serve(int fd, const ctrace__serve_site *site, bool once, bool log, char *err, size_t errlen);

#endif
