/* Rust's v0 symbol mangling (_R...), read by the grammar of RFC 2603
 * ("Rust Symbol Mangling (v0)"), for ctrace__demangle (demangle.c).
 *
 * A name is a path: crate roots (C), nested paths (N, with a namespace:
 * closures and shims in upper case, the compiler's own in lower), inherent
 * and trait impls (M, X, Y), generic arguments (I ... E: lifetimes, types,
 * constants) and back-references (B: an offset from just after "_R" to a
 * part met before). What is printed is what rustc's own demangler prints
 * in its short form: crate disambiguators (hashes) and the instantiating
 * crate left out, closures as {closure#N}, generic arguments of a value
 * path after "::<", of a type after "<". Punycode identifiers (u...) and
 * constants other than integers, bools and chars are not read: such a
 * name stays as it is, as does anything this does not follow.
 *
 * Runs once per distinct function name while a trace's stack table is
 * written, on the writer's thread, never in an event's path: it may
 * recurse (bounded by DEPTH) and allocates nothing. */
#include "runtime/symbolize.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Nesting of paths and types, back-references included: a name deeper
 * than this (none rustc makes) is left as it is. So is one that takes
 * more than STEPS parts to read: back-references may repeat a part many
 * times over, and what is not printed (an impl's own path) is not bounded
 * by the output's size. */
#define DEPTH 200
#define STEPS 100000

typedef struct v0 {
  const char *s; /* the name after "_R" */
  size_t n, i;   /* its length, the position read */
  char *out;
  size_t cap, len;
  bool ok;
  int depth;
  long steps;
  uint64_t bound; /* lifetimes bound by the binders around (for<'a, ...>) */
  int mute;       /* read, not printed: an impl's own path, the instantiating crate */
} v0;

static void put(v0 *d, const char *s, size_t n) {
  if (!d->ok || d->mute) return;
  if (d->len + n >= d->cap) {
    d->ok = false;
    return;
  }
  memcpy(d->out + d->len, s, n);
  d->len += n;
  d->out[d->len] = '\0';
}

static void puts0(v0 *d, const char *s) { put(d, s, strlen(s)); }

static void put_u64(v0 *d, uint64_t v) {
  char b[24];
  int k = 0;
  do b[sizeof b - 1 - k++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  put(d, b + sizeof b - k, (size_t)k);
}

static char peek(const v0 *d) { return d->i < d->n ? d->s[d->i] : '\0'; }

static bool eat(v0 *d, char c) {
  if (peek(d) != c) return false;
  d->i++;
  return true;
}

/* <base-62-number>: "_" is 0, digits then "_" their value plus 1. */
static uint64_t base62(v0 *d) {
  if (eat(d, '_')) return 0;
  uint64_t x = 0;
  for (;;) {
    char c = peek(d);
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10 : c >= 'A' && c <= 'Z' ? c - 'A' + 36 : -1;
    if (c == '_') break;
    if (v < 0 || x > (UINT64_MAX - 61) / 62) {
      d->ok = false;
      return 0;
    }
    x = x * 62 + (uint64_t)v;
    d->i++;
  }
  d->i++;
  return x + 1;
}

/* [TAG <base-62-number>]: 0 without, else the number plus 1. */
static uint64_t opt62(v0 *d, char tag) { return eat(d, tag) ? base62(d) + 1 : 0; }

/* <decimal-number>: 0, or digits without a leading zero. */
static uint64_t decimal(v0 *d) {
  if (eat(d, '0')) return 0;
  uint64_t x = 0;
  if (peek(d) < '1' || peek(d) > '9') d->ok = false;
  while (d->ok && peek(d) >= '0' && peek(d) <= '9') {
    if (x > UINT64_MAX / 10 - 1) d->ok = false;
    x = x * 10 + (uint64_t)(d->s[d->i++] - '0');
  }
  return x;
}

/* <undisambiguated-identifier>: its bytes, at *id, *len. */
static void ident_raw(v0 *d, const char **id, size_t *len) {
  *id = "";
  *len = 0;
  if (eat(d, 'u')) { /* punycode: not read */
    d->ok = false;
    return;
  }
  uint64_t k = decimal(d);
  eat(d, '_'); /* a separator before bytes that begin with a digit or "_" */
  if (!d->ok || k > d->n - d->i) {
    d->ok = false;
    return;
  }
  *id = d->s + d->i;
  *len = (size_t)k;
  d->i += (size_t)k;
}

static void path(v0 *d, bool value);
static void type(v0 *d);

/* Enters a part of the name: false, and the name not read, past DEPTH. */
static bool enter(v0 *d) {
  if (!d->ok || ++d->depth > DEPTH || ++d->steps > STEPS) {
    d->ok = false;
    return false;
  }
  return true;
}

/* <backref>: the part at its offset, read there, printed by fn; the
 * offset must lie before the back-reference itself. */
static void backref(v0 *d, void (*fn)(v0 *, bool), bool value) {
  size_t at = d->i - 1;
  uint64_t to = base62(d);
  if (!d->ok || to >= at) {
    d->ok = false;
    return;
  }
  size_t back = d->i;
  d->i = (size_t)to;
  fn(d, value);
  d->i = back;
}

static void lifetime_name(v0 *d, uint64_t lt) {
  if (lt == 0) {
    puts0(d, "'_");
    return;
  }
  if (lt > d->bound) {
    d->ok = false;
    return;
  }
  uint64_t depth = d->bound - lt;
  char name[3] = {'\'', (char)('a' + depth % 26), 0};
  puts0(d, name);
  if (depth >= 26) put_u64(d, depth / 26);
}

/* [<binder>]: "for<'a, 'b> ", its lifetimes bound while the rest is read. */
static uint64_t binder(v0 *d) {
  uint64_t n = opt62(d, 'G');
  if (!n) return 0;
  puts0(d, "for<");
  for (uint64_t k = 0; k < n && d->ok; k++) {
    if (k) puts0(d, ", ");
    d->bound++;
    lifetime_name(d, 1);
  }
  puts0(d, "> ");
  return n;
}

/* <const>: an integer, a bool, a char, "_" (a placeholder), or a back-reference. */
static void constant(v0 *d, bool unused) {
  (void)unused;
  if (!enter(d)) return;
  if (eat(d, 'p')) {
    puts0(d, "_");
  } else if (eat(d, 'B')) {
    backref(d, constant, false);
  } else {
    char t = peek(d);
    if (!t) {
      d->ok = false;
      d->depth--;
      return;
    }
    d->i++;
    bool neg = eat(d, 'n');
    uint64_t v = 0;
    int digits = 0;
    while (d->ok && peek(d) != '_') {
      char c = peek(d);
      int h = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (h < 0 || ++digits > 16) d->ok = false;
      v = v << 4 | (uint64_t)(h < 0 ? 0 : h);
      d->i++;
    }
    if (!eat(d, '_')) d->ok = false;
    if (t && strchr("ahijlmnostxy", t)) { /* the integer types */
      if (neg) puts0(d, "-");
      put_u64(d, v);
    } else if (t == 'b' && !neg && v <= 1) {
      puts0(d, v ? "true" : "false");
    } else if (t == 'c' && !neg && v >= 0x20 && v < 0x7f && v != '\'' && v != '\\') {
      char c[4] = {'\'', (char)v, '\'', 0};
      puts0(d, c);
    } else {
      d->ok = false;
    }
  }
  d->depth--;
}

/* {<generic-arg>} "E", after the opening "<" the caller printed. */
static void generic_args(v0 *d) {
  for (int k = 0; d->ok && !eat(d, 'E'); k++) {
    if (d->i >= d->n) {
      d->ok = false;
      return;
    }
    if (k) puts0(d, ", ");
    if (eat(d, 'L'))
      lifetime_name(d, base62(d));
    else if (eat(d, 'K'))
      constant(d, false);
    else
      type(d);
  }
}

static void type_fn(v0 *d, bool unused) {
  (void)unused;
  type(d);
}

static const char *basic(char c) {
  switch (c) {
  case 'a': return "i8";
  case 'b': return "bool";
  case 'c': return "char";
  case 'd': return "f64";
  case 'e': return "str";
  case 'f': return "f32";
  case 'h': return "u8";
  case 'i': return "isize";
  case 'j': return "usize";
  case 'l': return "i32";
  case 'm': return "u32";
  case 'n': return "i128";
  case 'o': return "u128";
  case 's': return "i16";
  case 't': return "u16";
  case 'u': return "()";
  case 'v': return "...";
  case 'x': return "i64";
  case 'y': return "u64";
  case 'z': return "!";
  case 'p': return "_";
  default: return NULL;
  }
}

/* A dyn trait's path with its associated types: the path's own generic
 * arguments and the bindings share one "<...>". */
static void dyn_trait(v0 *d) {
  bool open = false;
  size_t back = 0;
  bool jumped = false;
  /* A back-reference to the trait is followed to see its arguments. */
  while (d->ok && peek(d) == 'B') {
    size_t at = d->i;
    d->i++;
    uint64_t to = base62(d);
    if (!d->ok || to >= at) {
      d->ok = false;
      return;
    }
    if (!jumped) back = d->i, jumped = true;
    d->i = (size_t)to;
  }
  if (eat(d, 'I')) {
    path(d, false);
    puts0(d, "<");
    generic_args(d);
    open = true;
  } else {
    path(d, false);
  }
  if (jumped) d->i = back;
  while (d->ok && eat(d, 'p')) {
    const char *id;
    size_t len;
    puts0(d, open ? ", " : "<");
    open = true;
    ident_raw(d, &id, &len);
    put(d, id, len);
    puts0(d, " = ");
    type(d);
  }
  if (open) puts0(d, ">");
}

static void type(v0 *d) {
  if (!enter(d)) return;
  char c = peek(d);
  const char *b = basic(c);
  if (b) {
    d->i++;
    puts0(d, b);
  } else if (eat(d, 'R') || eat(d, 'Q')) {
    puts0(d, "&");
    if (eat(d, 'L')) {
      uint64_t lt = base62(d);
      if (lt) { /* an erased one ('_) is not shown */
        lifetime_name(d, lt);
        puts0(d, " ");
      }
    }
    if (c == 'Q') puts0(d, "mut ");
    type(d);
  } else if (eat(d, 'P') || eat(d, 'O')) {
    puts0(d, d->s[d->i - 1] == 'P' ? "*const " : "*mut ");
    type(d);
  } else if (eat(d, 'A') || eat(d, 'S')) {
    bool array = d->s[d->i - 1] == 'A';
    puts0(d, "[");
    type(d);
    if (array) {
      puts0(d, "; ");
      constant(d, false);
    }
    puts0(d, "]");
  } else if (eat(d, 'T')) {
    puts0(d, "(");
    int k = 0;
    for (; d->ok && !eat(d, 'E'); k++) {
      if (d->i >= d->n) d->ok = false;
      if (k) puts0(d, ", ");
      type(d);
    }
    if (k == 1) puts0(d, ",");
    puts0(d, ")");
  } else if (eat(d, 'F')) {
    uint64_t bound = binder(d);
    if (eat(d, 'U')) puts0(d, "unsafe ");
    if (eat(d, 'K')) {
      puts0(d, "extern \"");
      if (eat(d, 'C')) {
        puts0(d, "C");
      } else {
        const char *id;
        size_t len;
        ident_raw(d, &id, &len);
        for (size_t k = 0; k < len; k++) put(d, id[k] == '_' ? "-" : id + k, 1);
      }
      puts0(d, "\" ");
    }
    puts0(d, "fn(");
    for (int k = 0; d->ok && !eat(d, 'E'); k++) {
      if (d->i >= d->n) d->ok = false;
      if (k) puts0(d, ", ");
      type(d);
    }
    puts0(d, ")");
    if (eat(d, 'u')) {
      /* returns (): not said */
    } else {
      puts0(d, " -> ");
      type(d);
    }
    d->bound -= bound;
  } else if (eat(d, 'D')) {
    puts0(d, "dyn ");
    uint64_t bound = binder(d);
    for (int k = 0; d->ok && !eat(d, 'E'); k++) {
      if (d->i >= d->n) d->ok = false;
      if (k) puts0(d, " + ");
      dyn_trait(d);
    }
    d->bound -= bound;
    if (!eat(d, 'L')) d->ok = false;
    uint64_t lt = base62(d);
    if (lt) {
      puts0(d, " + ");
      lifetime_name(d, lt);
    }
  } else if (eat(d, 'B')) {
    backref(d, type_fn, false);
  } else {
    path(d, false);
  }
  d->depth--;
}

static void path_fn(v0 *d, bool value) { path(d, value); }

/* <path>; value: a function's or a static's (generic arguments after
 * "::<"), not a type's. */
static void path(v0 *d, bool value) {
  if (!enter(d)) return;
  const char *id;
  size_t len;
  if (eat(d, 'C')) {
    opt62(d, 's');
    ident_raw(d, &id, &len);
    put(d, id, len);
  } else if (eat(d, 'M') || eat(d, 'X') || eat(d, 'Y')) {
    char k = d->s[d->i - 1];
    if (k != 'Y') { /* the impl's own path: where it is, not shown */
      opt62(d, 's');
      d->mute++;
      path(d, false);
      d->mute--;
    }
    puts0(d, "<");
    type(d);
    if (k != 'M') {
      puts0(d, " as ");
      path(d, false);
    }
    puts0(d, ">");
  } else if (eat(d, 'N')) {
    char ns = peek(d);
    if (!((ns >= 'a' && ns <= 'z') || (ns >= 'A' && ns <= 'Z'))) {
      d->ok = false;
      d->depth--;
      return;
    }
    d->i++;
    path(d, value);
    uint64_t dis = opt62(d, 's');
    ident_raw(d, &id, &len);
    if (ns >= 'A' && ns <= 'Z') {
      puts0(d, "::{");
      puts0(d, ns == 'C' ? "closure" : ns == 'S' ? "shim" : (char[2]){ns, 0});
      if (len) {
        puts0(d, ":");
        put(d, id, len);
      }
      puts0(d, "#");
      put_u64(d, dis);
      puts0(d, "}");
    } else if (len) {
      puts0(d, "::");
      put(d, id, len);
    }
  } else if (eat(d, 'I')) {
    path(d, value);
    puts0(d, value ? "::<" : "<");
    generic_args(d);
    puts0(d, ">");
  } else if (eat(d, 'B')) {
    backref(d, path_fn, value);
  } else {
    d->ok = false;
  }
  d->depth--;
}

bool ctrace__demangle_rust_v0(const char *name, char *out, size_t cap) {
  if (strncmp(name, "_R", 2) != 0 || cap == 0) return false;
  const char *s = name + 2;
  /* A vendor suffix (".llvm.123", "$...") is dropped. */
  size_t n = strcspn(s, ".$");
  v0 d = {.s = s, .n = n, .out = out, .cap = cap, .ok = true};
  out[0] = '\0';
  /* An encoding version: only the first (none written) is known. */
  if (peek(&d) >= '0' && peek(&d) <= '9') return false;
  path(&d, true);
  /* What may follow: the instantiating crate, a path not shown. */
  if (d.ok && d.i < d.n) {
    d.mute++;
    path(&d, false);
  }
  return d.ok && d.i == d.n;
}
