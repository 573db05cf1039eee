/* A tiny HTTP/1.1 server of in-memory documents (serve.h).
 *
 * One connection at a time and one response per connection (Connection:
 * close): the client is one browser tab fetching one file, so neither
 * threads nor keep-alive would buy anything, and a stalled client is cut
 * off by the socket timeouts below instead. The headers are those of
 * Perfetto's own ways of serving a trace to ui.perfetto.dev
 * (tools/open_trace_in_ui: Access-Control-Allow-Origin and Cache-Control:
 * no-cache; src/base/http/http_server.cc: its answer to a CORS
 * preflight, Private Network Access included, since a public page is
 * reading from the loopback). */
#include "serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* A request's head larger than this is refused (431): ours are a line and
 * a dozen headers. */
#define HEAD_MAX 8192
/* How long a client may keep the server waiting for a read or a write:
 * with one connection at a time, a stalled one must not hold it forever. */
#define IO_TIMEOUT_S 30
/* How long a client may take to close once it has the response. */
#define CLOSE_WAIT_S 5

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

int ctrace__serve_listen(uint16_t *port, char *err, size_t errlen) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(err, errlen, "socket: %s", strerror(errno));
    return -1;
  }
  /* Lets a new server take the port at once after the last one's
   * connections (TIME_WAIT); on Linux it does not let two listen on it. */
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(*port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    int e = errno;
    if (e == EADDRINUSE)
      snprintf(err, errlen, "127.0.0.1:%u is in use (another ctrace view, or trace_processor --httpd?)",
               (unsigned)*port);
    else
      snprintf(err, errlen, "127.0.0.1:%u: %s", (unsigned)*port, strerror(e));
    close(fd);
    return -1;
  }
  socklen_t alen = sizeof a;
  if (listen(fd, 16) != 0 || getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
    snprintf(err, errlen, "127.0.0.1:%u: %s", (unsigned)*port, strerror(errno));
    close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

/* Writes all of buf, through short writes and signals (a signal that asks
 * to stop ends it). MSG_NOSIGNAL: a client gone is EPIPE here, not a
 * SIGPIPE that would kill the server. */
static bool send_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len) {
    ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR && !stop) continue;
      return false;
    }
    p += w;
    len -= (size_t)w;
  }
  return true;
}

/* Reads the request's head (up to the blank line) into buf, NUL-ended:
 * its length, 0 if the client went away or stalled, -1 if too long. */
static ssize_t read_head(int fd, char *buf, size_t cap) {
  size_t n = 0;
  for (;;) {
    if (n + 1 >= cap) return -1;
    ssize_t r = recv(fd, buf + n, cap - 1 - n, 0);
    if (r < 0 && errno == EINTR && !stop) continue;
    if (r <= 0) return 0;
    n += (size_t)r;
    buf[n] = 0;
    if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n")) return (ssize_t)n;
  }
}

/* The value of header name in head, copied into out (empty if absent). */
static void header(const char *head, const char *name, char *out, size_t cap) {
  size_t nl = strlen(name);
  out[0] = 0;
  for (const char *l = strchr(head, '\n'); l; l = strchr(l, '\n')) {
    l++;
    if (strncasecmp(l, name, nl) != 0 || l[nl] != ':') continue;
    const char *v = l + nl + 1, *e;
    while (*v == ' ' || *v == '\t') v++;
    for (e = v; *e && *e != '\r' && *e != '\n'; e++) {}
    while (e > v && (e[-1] == ' ' || e[-1] == '\t')) e--;
    size_t len = (size_t)(e - v) < cap - 1 ? (size_t)(e - v) : cap - 1;
    memcpy(out, v, len);
    out[len] = 0;
    return;
  }
}

/* Sends a response: status line, our headers, extra (lines each ending in
 * CRLF, or ""), then body unless head_only. True if it was all sent. */
static bool respond(int fd, const ctrace__serve_site *site, const char *status, const char *extra,
                    const char *type, const void *body, size_t len, bool head_only) {
  char date[64], h[1024];
  time_t now = time(NULL);
  struct tm tm;
  strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&now, &tm));
  /* The origin on every answer, 404 too: else the page sees only an opaque
   * CORS failure instead of the status. */
  int n = snprintf(h, sizeof h,
                   "HTTP/1.1 %s\r\n"
                   "Date: %s\r\n"
                   "Server: ctrace\r\n"
                   "Access-Control-Allow-Origin: %s\r\n"
                   "Vary: Origin\r\n"
                   "Cache-Control: no-cache\r\n"
                   "%s%s%s%s"
                   "Content-Length: %zu\r\n"
                   "Connection: close\r\n"
                   "\r\n",
                   status, date, site->origin, extra, type ? "Content-Type: " : "", type ? type : "",
                   type ? "\r\n" : "", len);
  if (n < 0 || (size_t)n >= sizeof h) return false;
  return send_all(fd, h, (size_t)n) && (head_only || send_all(fd, body, len));
}

/* Answers one request on fd. True when a trace was written whole (a GET
 * of it) into the socket; finish says if the client had it. */
static bool handle(int fd, const ctrace__serve_site *site, bool log) {
  char head[HEAD_MAX];
  ssize_t hn = read_head(fd, head, sizeof head);
  static const char notfound[] = "not found\n";
  if (hn == 0) return false;
  if (hn < 0) {
    static const char big[] = "request header too large\n";
    respond(fd, site, "431 Request Header Fields Too Large", "", "text/plain", big, sizeof big - 1, false);
    return false;
  }
  /* The request line: METHOD SP TARGET SP HTTP/1.x. */
  char method[16], target[2048], version[16];
  if (sscanf(head, "%15s %2047s %15s", method, target, version) != 3 || strncmp(version, "HTTP/1.", 7) != 0) {
    static const char bad[] = "bad request\n";
    respond(fd, site, "400 Bad Request", "", "text/plain", bad, sizeof bad - 1, false);
    return false;
  }
  /* Perfetto fetches the URL as given; a query string or fragment is not
   * part of the document's name. */
  target[strcspn(target, "?#")] = 0;
  bool get = strcmp(method, "GET") == 0, head_only = strcmp(method, "HEAD") == 0;
  const char *status;
  bool sent = false;
  if (strcmp(method, "OPTIONS") == 0) {
    /* A CORS preflight: answered for any path, as Perfetto's server does;
     * the request that follows gets its 404 if the path is wrong. */
    char want[256], extra[512];
    header(head, "Access-Control-Request-Headers", want, sizeof want);
    snprintf(extra, sizeof extra,
             "Access-Control-Allow-Methods: GET, HEAD, OPTIONS\r\n"
             "Access-Control-Allow-Headers: %s\r\n"
             "Access-Control-Max-Age: 86400\r\n"
             "Access-Control-Allow-Private-Network: true\r\n",
             want[0] ? want : "*");
    status = "204 No Content";
    respond(fd, site, status, extra, NULL, NULL, 0, true);
  } else if (!get && !head_only) {
    status = "405 Method Not Allowed";
    respond(fd, site, status, "Allow: GET, HEAD, OPTIONS\r\n", "text/plain", "", 0, false);
  } else {
    ctrace__serve_doc doc;
    int found = site->get(site->arg, target, &doc);
    if (found == 0) {
      status = "404 Not Found";
      respond(fd, site, status, "", "text/plain", notfound, sizeof notfound - 1, head_only);
    } else if (found < 0) {
      static const char failed[] = "the export failed (said where ctrace view runs)\n";
      status = "500 Internal Server Error";
      respond(fd, site, status, "", "text/plain", failed, sizeof failed - 1, head_only);
    } else {
      status = "200 OK";
      sent = respond(fd, site, status, "", doc.type, doc.body, doc.len, head_only) && get && doc.trace;
    }
  }
  if (log) fprintf(stderr, "ctrace view: %s %s: %s\n", method, target, status);
  return sent;
}

/* Ends a connection and says whether the client had it all: true when
 * the client closed it cleanly (end of file, no reset) and acknowledged
 * every byte we sent. A client that reads the response and closes does
 * that; one that closes with the response unread resets the connection
 * (ECONNRESET here), and one that closed before the response came resets
 * it on our data (the pending error below). Having sent it all into the
 * socket proves nothing: the kernel's buffers take a whole trace.
 *
 * The write side is shut first and the client's input read until it
 * closes, rather than closing at once: a close with unread input resets
 * the connection, and a reset can discard what the client has not read. */
static bool finish(int fd, bool sent) {
  shutdown(fd, SHUT_WR);
  struct timeval tv = {.tv_sec = CLOSE_WAIT_S};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[1024];
  bool eof = false;
  for (int i = 0; i < 64; i++) {
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR && !stop) continue;
    if (r <= 0) {
      eof = r == 0;
      break;
    }
  }
  int e = 0, q = 1;
  socklen_t elen = sizeof e;
  /* Our bytes and FIN acknowledged, or the connection reset: on the
   * loopback a matter of microseconds, so a short bounded wait. */
  for (int i = 0; sent && eof && i < 200 && !stop; i++) {
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) != 0 || e) break;
    if (ioctl(fd, SIOCOUTQ, &q) != 0 || q == 0) break;
    usleep(10000);
  }
  close(fd);
  return sent && eof && !e && q == 0;
}

int ctrace__serve(int fd, const ctrace__serve_site *site, bool once, bool log, char *err, size_t errlen) {
  /* No SA_RESTART: the signal must interrupt accept and the I/O so the
   * loop sees stop. */
  struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
  sigemptyset(&sa.sa_mask);
  stop = 0;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  int rc = 0;
  while (!stop) {
    int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) {
      /* A connection that failed before we took it is its client's
       * problem, not the server's. */
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO || errno == ENETDOWN ||
          errno == EHOSTUNREACH || errno == ENETUNREACH)
        continue;
      snprintf(err, errlen, "accept: %s", strerror(errno));
      rc = -1;
      break;
    }
    struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    bool sent = handle(c, site, log);
    bool had = finish(c, sent);
    if (log && sent)
      fprintf(stderr, "ctrace view: %s\n", had ? "the trace was sent"
                                               : "the client went away before it had the whole trace");
    if (once && had) break;
  }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  close(fd);
  return rc;
}
