/* One event as `go tool trace -d` prints it (Go's Event.String). */
#include <stdio.h>
#include <string.h>

#include "reader.h"

/* Appends " name=value" for each space-separated name in names. */
static size_t names(char *buf, size_t size, size_t at, const char *names_, const uint64_t *v,
                    const char *const *s) {
  const char *c = names_;
  for (int i = 0; *c; i++) {
    while (*c == ' ') c++;
    if (!*c) break;
    const char *e = strchr(c, ' ');
    int len = e ? (int)(e - c) : (int)strlen(c);
    int n = v ? snprintf(buf + (at < size ? at : size), at < size ? size - at : 0, " %.*s=%llu", len,
                         c, (unsigned long long)v[i])
              : snprintf(buf + (at < size ? at : size), at < size ? size - at : 0, " %.*s=%s", len, c,
                         s[i] ? s[i] : "");
    at += (size_t)(n > 0 ? n : 0);
    c += len;
  }
  return at;
}

int ctrace_event_format(const ctrace_event *ev, char *buf, size_t size) {
  const ctrace_event_desc *d = &ctrace_event_descs[ev->type < CTRACE_EV_COUNT ? ev->type : 0];
  int n = snprintf(buf, size, "%lld %s p=%lld g=%llu off=%llu", (long long)ev->ts, d->name,
                   (long long)ev->p, (unsigned long long)ev->g, (unsigned long long)ev->off);
  size_t at = (size_t)(n > 0 ? n : 0);
  at = names(buf, size, at, d->args, ev->args, NULL);
  at = names(buf, size, at, d->sargs, NULL, ev->sargs);
  return (int)at;
}
