/* One event as `go tool trace -d` prints it (Go's Event.String):
 *   <ts> <Name> p=<p> g=<g> off=<off>[ <arg>=<value>...][ <sarg>=<string>...]
 * Written by hand: ctrace dump prints millions of these, and printf was
 * most of its time. */
#include <string.h>

#include "reader.h"

typedef struct out {
  char *buf;
  size_t size, at; /* at counts what would be written, like snprintf */
} out;

static void put(out *o, const char *s, size_t n) {
  if (o->at < o->size) memcpy(o->buf + o->at, s, o->at + n <= o->size ? n : o->size - o->at);
  o->at += n;
}

static void put_u(out *o, uint64_t v) {
  char d[20];
  int n = 0;
  do d[sizeof d - 1 - n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  put(o, d + sizeof d - n, (size_t)n);
}

static void put_i(out *o, int64_t v) {
  if (v < 0) {
    put(o, "-", 1);
    put_u(o, (uint64_t)0 - (uint64_t)v);
  } else {
    put_u(o, (uint64_t)v);
  }
}

/* " name=" for each space-separated name, then the value. */
static void names(out *o, const char *list, const uint64_t *v, const char *const *s,
                  const uint64_t *slen) {
  const char *c = list;
  for (int i = 0; *c; i++) {
    while (*c == ' ') c++;
    if (!*c) break;
    const char *e = strchr(c, ' ');
    size_t len = e ? (size_t)(e - c) : strlen(c);
    put(o, " ", 1);
    put(o, c, len);
    put(o, "=", 1);
    if (v)
      put_u(o, v[i]);
    else if (s[i])
      put(o, s[i], slen[i] ? slen[i] : strlen(s[i]));
    c += len;
  }
}

int ctrace_event_format(const ctrace_event *ev, char *buf, size_t size) {
  const ctrace_event_desc *d = &ctrace_event_descs[ev->type < CTRACE_EV_COUNT ? ev->type : 0];
  out o = {buf, size, 0};
  put_i(&o, ev->ts);
  put(&o, " ", 1);
  put(&o, d->name, strlen(d->name));
  put(&o, " p=", 3);
  put_i(&o, ev->p);
  put(&o, " g=", 3);
  put_u(&o, ev->g);
  put(&o, " off=", 5);
  put_u(&o, ev->off);
  names(&o, d->args, ev->args, NULL, NULL);
  names(&o, d->sargs, NULL, ev->sargs, ev->sargs_len);
  if (size) buf[o.at < size ? o.at : size - 1] = 0;
  return (int)o.at;
}
