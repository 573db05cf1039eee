/* One event as `go tool trace -d` prints it (Go's Event.String):
 *   <ts> <Name> p=<p> g=<g> off=<off>[ <arg>=<value>...][ <sarg>=<string>...]
 * Written by hand: ctrace dump prints millions of these, and printf was
 * most of its time. */
#include <string.h>

#include "../out.h"
#include "../reader.h"


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

/* ---- the fast path: room for the longest line, no checks ------------- */

static char *fast_u(char *p, uint64_t v) {
  char d[20];
  int n = 0;
  do d[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  while (n) *p++ = d[--n];
  return p;
}

static char *fast_i(char *p, int64_t v) {
  if (v < 0) {
    *p++ = '-';
    return fast_u(p, (uint64_t)0 - (uint64_t)v);
  }
  return fast_u(p, (uint64_t)v);
}

/* " name=" for each name in the space-separated list, then its value. */
static char *fast_names(char *p, const char *list, const uint64_t *v, const char *const *s,
                        const uint64_t *slen) {
  for (int i = 0; *list; i++) {
    while (*list == ' ') list++;
    if (!*list) break;
    *p++ = ' ';
    while (*list && *list != ' ') *p++ = *list++;
    *p++ = '=';
    if (v) {
      p = fast_u(p, v[i]);
    } else if (s[i]) {
      size_t n = slen[i] ? slen[i] : strlen(s[i]);
      memcpy(p, s[i], n);
      p += n;
    }
  }
  return p;
}

/* Bytes a line needs at most besides its strings: five numbers and three
 * arguments of 20 digits and the names, well under this. */
#define FIXED_MAX 256

int ctrace_event_format(const ctrace_event *ev, char *buf, size_t size) {
  return ctrace_event_format_go(ev, 1023, buf, size);
}

int ctrace_event_format_go(const ctrace_event *ev, int go, char *buf, size_t size) {
  if (ev->format == 1) return ctrace__g2_format(ev, go, buf, size);
  const ctrace_event_desc *d = &ctrace_event_descs[ev->type < CTRACE_EV_COUNT ? ev->type : 0];
  size_t s0 = ev->sargs[0] ? (ev->sargs_len[0] ? ev->sargs_len[0] : strlen(ev->sargs[0])) : 0;
  size_t s1 = ev->sargs[1] ? (ev->sargs_len[1] ? ev->sargs_len[1] : strlen(ev->sargs[1])) : 0;
  if (size > FIXED_MAX + s0 + s1) {
    char *p = fast_i(buf, ev->ts);
    *p++ = ' ';
    for (const char *n = d->name; *n;) *p++ = *n++;
    memcpy(p, " p=", 3);
    p = fast_i(p + 3, ev->p);
    memcpy(p, " g=", 3);
    p = fast_u(p + 3, ev->g);
    memcpy(p, " off=", 5);
    p = fast_u(p + 5, ev->off);
    p = fast_names(p, d->args, ev->args, NULL, NULL);
    p = fast_names(p, d->sargs, NULL, ev->sargs, ev->sargs_len);
    *p = 0;
    return (int)(p - buf);
  }
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
