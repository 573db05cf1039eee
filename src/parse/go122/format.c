/* A Go 1.22+ event as Go's Event.String writes it, which is what `go tool
 * trace -d=1` (Go 1.23) and `-d=parsed` (Go 1.27) print (then a newline):
 *   M=<m> P=<p> G=<g> <Kind> Time=<ns>[ kind-specific fields]
 * and, where the event has them, "\nTransitionStack=\n" and "\nStack=\n",
 * each followed by two lines a frame ("\t<func> @ 0x<pc>\n\t\t<file>:<line>\n").
 * Strings are quoted as Go's %q quotes them (strconv.Quote). Go 1.27 words
 * a few kinds otherwise (its event.go and value.go): a value is
 * "Value{Uint64(n)}" where 1.23 wrote "Uint64(n)", a transition gives its
 * states before its reason and no longer its resource, a Sync its number
 * and clock snapshot, an experimental event its arguments by name. Written
 * with snprintf's contract: returns the length needed, writes at most
 * size. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../out.h"
#include "go122.h"

static void puts_(out *o, const char *s) { put(o, s, strlen(s)); }

static void put_hex(out *o, uint64_t v) {
  char d[16];
  int n = 0;
  do d[sizeof d - 1 - n++] = "0123456789abcdef"[v & 15];
  while ((v >>= 4) != 0);
  put(o, d + sizeof d - n, (size_t)n);
}

/* Decodes one UTF-8 sequence as Go's utf8.DecodeRuneInString: the rune and
 * its length, or -1 and length 1 for an invalid byte. */
static int32_t decode(const uint8_t *s, size_t n, size_t *len) {
  *len = 1;
  uint8_t c = s[0];
  if (c < 0x80) return c;
  int need;
  int32_t r, min;
  if (c >= 0xc2 && c <= 0xdf) need = 1, r = c & 0x1f, min = 0x80;
  else if (c >= 0xe0 && c <= 0xef) need = 2, r = c & 0x0f, min = 0x800;
  else if (c >= 0xf0 && c <= 0xf4) need = 3, r = c & 0x07, min = 0x10000;
  else return -1;
  if ((size_t)need >= n) return -1;
  for (int i = 1; i <= need; i++) {
    if ((s[i] & 0xc0) != 0x80) return -1;
    r = r << 6 | (s[i] & 0x3f);
  }
  if (r < min || r > 0x10ffff || (r >= 0xd800 && r <= 0xdfff)) return -1;
  *len = (size_t)need + 1;
  return r;
}

/* Go's unicode.IsPrint, approximately: ASCII exactly; beyond it, the
 * controls, separators, surrogates, private use, unassigned planes and
 * noncharacters are not printable, the rest is taken as printable (Go
 * also excludes the code points Unicode leaves unassigned inside
 * assigned blocks; trace strings are Go identifiers, paths and user
 * text, where those do not occur). */
static int printable(int32_t r) {
  if (r < 0x80) return r >= 0x20 && r < 0x7f;
  if (r < 0xa0) return 0;
  if (r == 0xad) return 0; /* soft hyphen: a format character */
  if (r == 0x2028 || r == 0x2029 || (r >= 0x2000 && r <= 0x200f) || (r >= 0x202a && r <= 0x202f) ||
      (r >= 0x205f && r <= 0x206f) || r == 0x3000 || r == 0x1680 || r == 0xfeff || r == 0x85 || r == 0xa0)
    return 0;
  if (r >= 0xe000 && r <= 0xf8ff) return 0;
  if ((r & 0xfffe) == 0xfffe || (r >= 0xfdd0 && r <= 0xfdef)) return 0;
  if (r >= 0xfff9 && r <= 0xfffb) return 0;
  if (r >= 0x30000 && r < 0xe0100) return r < 0x3134b; /* CJK extension G, then unassigned */
  if (r >= 0xe0000 && r <= 0xe00ff) return 0;
  if (r >= 0xf0000) return 0;
  return 1;
}

/* Go's strconv.Quote. */
static void quote(out *o, const char *str, size_t n) {
  const uint8_t *s = (const uint8_t *)str;
  put(o, "\"", 1);
  size_t i = 0;
  while (i < n) {
    /* A run of plain ASCII in one copy. */
    size_t j = i;
    while (j < n && s[j] >= 0x20 && s[j] < 0x7f && s[j] != '"' && s[j] != '\\') j++;
    if (j > i) {
      put(o, (const char *)s + i, j - i);
      i = j;
      continue;
    }
    size_t len;
    int32_t r = decode(s + i, n - i, &len);
    char esc[12];
    if (r < 0) {
      esc[0] = '\\', esc[1] = 'x', esc[2] = "0123456789abcdef"[s[i] >> 4], esc[3] = "0123456789abcdef"[s[i] & 15];
      put(o, esc, 4);
    } else if (r == '"' || r == '\\') {
      esc[0] = '\\', esc[1] = (char)r;
      put(o, esc, 2);
    } else if (printable(r)) {
      put(o, (const char *)s + i, len);
    } else {
      switch (r) {
      case '\a': put(o, "\\a", 2); break;
      case '\b': put(o, "\\b", 2); break;
      case '\f': put(o, "\\f", 2); break;
      case '\n': put(o, "\\n", 2); break;
      case '\r': put(o, "\\r", 2); break;
      case '\t': put(o, "\\t", 2); break;
      case '\v': put(o, "\\v", 2); break;
      default: {
        static const char hx[] = "0123456789abcdef";
        int k = 0;
        esc[k++] = '\\';
        if (r < ' ' || r == 0x7f) {
          esc[k++] = 'x', esc[k++] = hx[(r >> 4) & 15], esc[k++] = hx[r & 15];
        } else if (r < 0x10000) {
          esc[k++] = 'u';
          for (int sh = 12; sh >= 0; sh -= 4) esc[k++] = hx[(r >> sh) & 15];
        } else {
          esc[k++] = 'U';
          for (int sh = 28; sh >= 0; sh -= 4) esc[k++] = hx[(r >> sh) & 15];
        }
        put(o, esc, (size_t)k);
      }
      }
    }
    i += len;
  }
  put(o, "\"", 1);
}

static void frames(out *o, const ctrace_frame *f, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    put(o, "\t", 1);
    put(o, f[i].func, f[i].func_len ? f[i].func_len : strlen(f[i].func));
    put(o, " @ 0x", 5);
    put_hex(o, f[i].pc);
    put(o, "\n\t\t", 3);
    put(o, f[i].file, f[i].file_len ? f[i].file_len : strlen(f[i].file));
    put(o, ":", 1);
    put_u(o, f[i].line);
    put(o, "\n", 1);
  }
}

static const char *const kind_names[] = {
#define CTRACE__KIND_NAME(n) #n,
    CTRACE_KINDS(CTRACE__KIND_NAME)
#undef CTRACE__KIND_NAME
};

static const char *go_state(uint64_t s) {
  static const char *const n[] = {"Undetermined", "NotExist", "Runnable", "Running", "Waiting", "Syscall"};
  return s < 6 ? n[s] : "Bad";
}
static const char *proc_state(uint64_t s) {
  static const char *const n[] = {"Undetermined", "NotExist", "Running", "Idle"};
  return s < 4 ? n[s] : "Bad";
}
/* Wire status to Go's state (go122GoStatus2GoState, go122ProcStatus2ProcState). */
static uint64_t go_state_of(uint64_t s) {
  static const uint8_t m[5] = {0, 2, 3, 5, 4};
  return s < 5 ? m[s] : 99;
}
static uint64_t proc_state_of(uint64_t s) {
  static const uint8_t m[5] = {0, 2, 3, 2, 3};
  return s < 5 ? m[s] : 99;
}

static void resource(out *o, const char *kind, int64_t id) {
  puts_(o, kind);
  put(o, "(", 1);
  put_i(o, id);
  put(o, ")", 1);
}

/* A Value of kind Uint64: Go 1.23's valueAsString, Go 1.27's Value.String. */
static void uint_value(out *o, uint64_t v, int go) {
  if (go >= 1027) put(o, "Value{", 6);
  put(o, "Uint64(", 7);
  put_u(o, v);
  put(o, go >= 1027 ? ")}" : ")", go >= 1027 ? 2 : 1);
}

/* Go's appendInt(b, x, width): zero-padded to width, a minus sign before. */
static void put_padded(out *o, int64_t x, int width) {
  char d[24];
  uint64_t u = x < 0 ? -(uint64_t)x : (uint64_t)x;
  int n = 0;
  do d[sizeof d - 1 - n++] = (char)('0' + u % 10);
  while ((u /= 10) != 0);
  if (x < 0) put(o, "-", 1);
  for (int i = n; i < width; i++) put(o, "0", 1);
  put(o, d + sizeof d - n, (size_t)n);
}

/* Go's time.Unix(sec, nsec).Format(time.RFC3339Nano), in the local zone
 * (TZ, else /etc/localtime: where Go and the C library both look):
 * 2006-01-02T15:04:05.999999999Z07:00, the fraction without its trailing
 * zeros, "Z" for UTC. */
static void wall(out *o, int64_t sec, int64_t nsec) {
  if (nsec < 0 || nsec >= 1000000000) { /* time.Unix's normalization */
    int64_t n = nsec / 1000000000;
    sec += n;
    nsec -= n * 1000000000;
    if (nsec < 0) nsec += 1000000000, sec--;
  }
  time_t t = (time_t)sec;
  struct tm tm;
  if (!localtime_r(&t, &tm)) {
    put(o, "?", 1);
    return;
  }
  put_padded(o, (int64_t)tm.tm_year + 1900, 4);
  put(o, "-", 1);
  put_padded(o, tm.tm_mon + 1, 2);
  put(o, "-", 1);
  put_padded(o, tm.tm_mday, 2);
  put(o, "T", 1);
  put_padded(o, tm.tm_hour, 2);
  put(o, ":", 1);
  put_padded(o, tm.tm_min, 2);
  put(o, ":", 1);
  put_padded(o, tm.tm_sec, 2);
  if (nsec) {
    char f[24];
    snprintf(f, sizeof f, "%09lld", (long long)nsec);
    int n = 9;
    while (f[n - 1] == '0') n--;
    put(o, ".", 1);
    put(o, f, (size_t)n);
  }
  long off = tm.tm_gmtoff;
  if (off == 0) {
    put(o, "Z", 1);
    return;
  }
  put(o, off < 0 ? "-" : "+", 1);
  if (off < 0) off = -off;
  put_padded(o, off / 3600, 2);
  put(o, ":", 1);
  put_padded(o, off / 60 % 60, 2);
}

/* The transition: resource, reason, old and new state, and its stack. */
static void transition(out *o, const ctrace_event *ev, int go) {
  const uint64_t *a = ev->args;
  int64_t g = (int64_t)ev->g;
  int is_proc = 0;
  int64_t id = 0;
  uint64_t from = 0, to = 0;
  const char *reason = "";
  uint64_t rlen = 0;
  switch (ev->type) {
  case CTRACE_EV122_ProcStart: is_proc = 1, id = (int64_t)a[0], from = 3, to = 2; break;
  case CTRACE_EV122_ProcStop: is_proc = 1, id = ev->p, from = 2, to = 3; break;
  case CTRACE_EV122_ProcSteal:
    is_proc = 1, id = (int64_t)a[0], from = a[3] == CTRACE_PS_SYSCALL_ABANDONED ? 3 : 2, to = 3;
    break;
  case CTRACE_EV122_ProcStatus: is_proc = 1, id = (int64_t)a[0], from = a[2], to = proc_state_of(a[1]); break;
  case CTRACE_EV122_GoCreate: id = (int64_t)a[0], from = 1, to = 2; break;
  case CTRACE_EV122_GoCreateBlocked: id = (int64_t)a[0], from = 1, to = 4; break;
  case CTRACE_EV122_GoCreateSyscall: id = (int64_t)a[0], from = 1, to = 5; break;
  case CTRACE_EV122_GoStart: id = (int64_t)a[0], from = 2, to = 3; break;
  case CTRACE_EV122_GoDestroy: id = g, from = 3, to = 1; break;
  case CTRACE_EV122_GoDestroySyscall: id = g, from = 5, to = 1; break;
  case CTRACE_EV122_GoStop: id = g, from = 3, to = 2, reason = ev->sargs[0], rlen = ev->sargs_len[0]; break;
  case CTRACE_EV122_GoBlock: id = g, from = 3, to = 4, reason = ev->sargs[0], rlen = ev->sargs_len[0]; break;
  case CTRACE_EV122_GoUnblock: case CTRACE_EV122_GoSwitch: case CTRACE_EV122_GoSwitchDestroy:
    id = (int64_t)a[0], from = 4, to = 2;
    break;
  case CTRACE_EV122_GoSyscallBegin: id = g, from = 3, to = 5; break;
  case CTRACE_EV122_GoSyscallEnd: id = g, from = 5, to = 3; break;
  case CTRACE_EV122_GoSyscallEndBlocked: id = g, from = 5, to = 2; break;
  case CTRACE_EV122_GoStatus: id = (int64_t)a[0], from = a[3], to = go_state_of(a[2]); break;
  case CTRACE_EV122_GoStatusStack: id = (int64_t)a[0], from = a[4], to = go_state_of(a[2]); break;
  }
  if (go < 1027) {
    put(o, " Resource=", 10);
    resource(o, is_proc ? "Proc" : "Goroutine", id);
    put(o, " Reason=", 8);
    quote(o, reason ? reason : "", rlen);
  }
  if (is_proc) {
    put(o, " ProcID=", 8);
    put_i(o, id);
    put(o, " ", 1);
    puts_(o, proc_state(from));
    put(o, "->", 2);
    puts_(o, proc_state(to));
  } else {
    put(o, " GoID=", 6);
    put_i(o, id);
    put(o, " ", 1);
    puts_(o, go_state(from));
    put(o, "->", 2);
    puts_(o, go_state(to));
  }
  if (go >= 1027) {
    put(o, " Reason=", 8);
    quote(o, reason ? reason : "", rlen);
  }
  if (ev->has_tstack) {
    put(o, "\nTransitionStack=\n", 18);
    frames(o, ev->tframes, ev->ntframes);
  }
}

int ctrace__g2_format(const ctrace_event *ev, int go, char *buf, size_t size) {
  out o = {buf, size, 0};
  const uint64_t *a = ev->args;
  put(&o, "M=", 2);
  put_i(&o, ev->m);
  put(&o, " P=", 3);
  put_i(&o, ev->p);
  put(&o, " G=", 3);
  put_i(&o, (int64_t)ev->g);
  put(&o, " ", 1);
  puts_(&o, ev->kind < CTRACE_KIND_COUNT ? kind_names[ev->kind] : "Bad");
  put(&o, " Time=", 6);
  put_i(&o, ev->ts);
  switch (ev->kind) {
  case CTRACE_KIND_Metric:
    put(&o, " Name=", 6);
    puts_(&o, ev->type == CTRACE_EV122_ProcsChange ? "\"/sched/gomaxprocs:threads\""
              : ev->type == CTRACE_EV122_HeapAlloc ? "\"/memory/classes/heap/objects:bytes\""
                                                   : "\"/gc/heap/goal:bytes\"");
    put(&o, " Value=", 7);
    uint_value(&o, a[0], go);
    break;
  case CTRACE_KIND_Label:
    put(&o, " Label=", 7);
    quote(&o, ev->sargs[0], ev->sargs_len[0]);
    put(&o, " Resource=", 10);
    resource(&o, "Goroutine", (int64_t)ev->g);
    break;
  case CTRACE_KIND_RangeBegin: case CTRACE_KIND_RangeActive: case CTRACE_KIND_RangeEnd: {
    put(&o, " Name=", 6);
    switch (ev->type) {
    case CTRACE_EV122_STWBegin: case CTRACE_EV122_STWEnd: {
      /* "stop-the-world (" kind ")", quoted as one string */
      char tmp[CTRACE_GO122_MAX_STRING + 32];
      size_t n = ev->sargs_len[0] < CTRACE_GO122_MAX_STRING ? ev->sargs_len[0] : CTRACE_GO122_MAX_STRING;
      memcpy(tmp, "stop-the-world (", 16);
      memcpy(tmp + 16, ev->sargs[0] ? ev->sargs[0] : "", n);
      tmp[16 + n] = ')';
      quote(&o, tmp, 17 + n);
      put(&o, " Scope=", 7);
      resource(&o, "Goroutine", (int64_t)ev->g);
      break;
    }
    case CTRACE_EV122_GCBegin: case CTRACE_EV122_GCActive: case CTRACE_EV122_GCEnd:
      puts_(&o, "\"GC concurrent mark phase\" Scope=None");
      break;
    case CTRACE_EV122_GCSweepBegin: case CTRACE_EV122_GCSweepActive: case CTRACE_EV122_GCSweepEnd:
      puts_(&o, "\"GC incremental sweep\" Scope=");
      resource(&o, "Proc", ev->p);
      break;
    default:
      puts_(&o, "\"GC mark assist\" Scope=");
      resource(&o, "Goroutine", ev->type == CTRACE_EV122_GCMarkAssistActive ? (int64_t)a[0] : (int64_t)ev->g);
    }
    if (ev->kind == CTRACE_KIND_RangeEnd) {
      put(&o, " Attributes=[", 13);
      if (ev->type == CTRACE_EV122_GCSweepEnd) {
        put(&o, "\"bytes swept\"=", 14);
        uint_value(&o, a[0], go);
        put(&o, " \"bytes reclaimed\"=", 19);
        uint_value(&o, a[1], go);
      }
      put(&o, "]", 1);
    }
    break;
  }
  case CTRACE_KIND_TaskBegin: case CTRACE_KIND_TaskEnd:
    put(&o, " ID=", 4);
    put_u(&o, a[0]);
    put(&o, " Parent=", 8);
    put_u(&o, ev->type == CTRACE_EV122_UserTaskBegin ? a[1] : a[2]);
    put(&o, " Type=", 6);
    quote(&o, ev->sargs[0] ? ev->sargs[0] : "", ev->sargs_len[0]);
    break;
  case CTRACE_KIND_RegionBegin: case CTRACE_KIND_RegionEnd:
    put(&o, " Task=", 6);
    put_u(&o, a[0]);
    put(&o, " Type=", 6);
    quote(&o, ev->sargs[0], ev->sargs_len[0]);
    break;
  case CTRACE_KIND_Log:
    put(&o, " Task=", 6);
    put_u(&o, a[0]);
    put(&o, " Category=", 10);
    quote(&o, ev->sargs[0], ev->sargs_len[0]);
    put(&o, " Message=", 9);
    quote(&o, ev->sargs[1], ev->sargs_len[1]);
    break;
  case CTRACE_KIND_StateTransition:
    transition(&o, ev, go);
    break;
  case CTRACE_KIND_Sync:
    if (go < 1027) break;
    put(&o, " N=", 3);
    put_u(&o, a[0]);
    if (a[5]) {
      put(&o, " Trace=", 7);
      put_i(&o, (int64_t)a[1]);
      put(&o, " Mono=", 6);
      put_u(&o, a[2]);
      put(&o, " Wall=", 6);
      wall(&o, (int64_t)a[3], (int64_t)a[4]);
    }
    break;
  case CTRACE_KIND_Experimental: {
    const ctrace_event122_desc *d = &ctrace_event122_descs[ev->type];
    put(&o, " Name=", 6);
    puts_(&o, d->name);
    if (go >= 1027) { /* [name=Value{Uint64(n)}, ...]: none of them is a string's */
      put(&o, " Args=[", 7);
      const char *n = d->args;
      for (int i = 0; i < d->nargs; i++) {
        if (i) put(&o, ", ", 2);
        const char *e = strchr(n, ' ');
        size_t len = e ? (size_t)(e - n) : strlen(n);
        put(&o, n, len);
        put(&o, "=", 1);
        uint_value(&o, a[i], go);
        n += len + (e ? 1 : 0);
      }
      put(&o, "]", 1);
      break;
    }
    put(&o, " ArgNames=[", 11);
    puts_(&o, d->args);
    put(&o, "] Args=[", 8);
    for (int i = 0; i < d->nargs; i++) {
      if (i) put(&o, " ", 1);
      put_u(&o, a[i]);
    }
    put(&o, "]", 1);
    break;
  }
  }
  if (ev->has_stack) {
    put(&o, "\nStack=\n", 8);
    frames(&o, ev->frames, ev->nframes);
  }
  if (size) buf[o.at < size ? o.at : size - 1] = 0;
  return (int)o.at;
}
