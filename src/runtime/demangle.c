/* Function names as people read them: C++ (Itanium ABI) and Rust symbol
 * names demangled before they go into the trace's stack table, so that
 * Go's tools show them as ctrace's own outputs do.
 *
 * C++ goes through the process's own __cxa_demangle: a process holding a
 * mangled C++ name has libstdc++ (or libc++) loaded, and the demangler
 * that compiled its names is the one that reads them back. Nothing is
 * loaded for it: without one in the process, a name stays as it is.
 *
 * Rust's legacy mangling is Itanium-shaped (_ZN...E) but is not C++: its
 * last element is a hash (h + 16 hex digits) and its identifiers hold
 * escapes ($LT$, $u7b$, ..), so it is read here, by its own rules, as is
 * Rust's v0 mangling (_R...: demangle_v0.c). */
#include "runtime/symbolize.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef char *cxa_demangle_fn(const char *, char *, size_t *, int *);

/* Appends s[0, n) to out (cap bytes), NUL-terminated; false once full. */
static bool put(char *out, size_t cap, size_t *len, const char *s, size_t n) {
  if (*len + n >= cap) return false;
  memcpy(out + *len, s, n);
  *len += n;
  out[*len] = '\0';
  return true;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/* One identifier of a legacy Rust path, its escapes decoded. */
static bool rust_ident(const char *s, size_t n, char *out, size_t cap, size_t *len) {
  static const struct {
    const char *code, *text;
  } esc[] = {{"SP", "@"}, {"BP", "*"}, {"RF", "&"}, {"LT", "<"}, {"GT", ">"},
             {"LP", "("}, {"RP", ")"}, {"C", ","}};
  /* A leading "_$" stands for "$": an identifier may not begin with one. */
  if (n >= 2 && s[0] == '_' && s[1] == '$') s++, n--;
  for (size_t i = 0; i < n;) {
    if (s[i] == '$') {
      const char *end = memchr(s + i + 1, '$', n - i - 1);
      if (!end) return false;
      size_t k = (size_t)(end - (s + i + 1));
      const char *code = s + i + 1, *text = NULL;
      char ch;
      for (size_t e = 0; e < sizeof esc / sizeof esc[0]; e++)
        if (strlen(esc[e].code) == k && memcmp(esc[e].code, code, k) == 0) text = esc[e].text;
      if (!text && k >= 2 && k <= 3 && code[0] == 'u' && hexval(code[1]) >= 0 &&
          (k == 2 || hexval(code[2]) >= 0)) {
        ch = (char)(k == 2 ? hexval(code[1]) : hexval(code[1]) * 16 + hexval(code[2]));
        if (ch < 0x20 || ch == 0x7f) return false;
        text = &ch;
        if (!put(out, cap, len, text, 1)) return false;
      } else if (!text || !put(out, cap, len, text, strlen(text))) {
        return false;
      }
      i += k + 2;
    } else if (s[i] == '.' && i + 1 < n && s[i + 1] == '.') {
      if (!put(out, cap, len, "::", 2)) return false;
      i += 2;
    } else {
      if (!put(out, cap, len, s + i, 1)) return false;
      i++;
    }
  }
  return true;
}

/* A legacy Rust name: _ZN, length-prefixed identifiers, a last one that is
 * the hash h + 16 hex digits, E, then perhaps a suffix (.llvm.N), which is
 * dropped. The path without its hash, joined by "::"; false if name is not
 * one. */
static bool rust_legacy(const char *name, char *out, size_t cap) {
  const char *p = name + 3;
  const char *ids[64];
  size_t lens[64], n = 0;
  while (*p != 'E') {
    if (*p < '0' || *p > '9' || n == 64) return false;
    char *end;
    unsigned long k = strtoul(p, &end, 10);
    if (k == 0 || strnlen(end, k) < k) return false;
    ids[n] = end;
    lens[n++] = k;
    p = end + k;
  }
  if (n < 2 || lens[n - 1] != 17 || ids[n - 1][0] != 'h') return false;
  for (size_t i = 1; i < 17; i++)
    if (hexval(ids[n - 1][i]) < 0) return false;
  if (p[1] != '\0' && p[1] != '.') return false;
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i + 1 < n; i++)
    if ((i && !put(out, cap, &len, "::", 2)) || !rust_ident(ids[i], lens[i], out, cap, &len)) return false;
  return true;
}

const char *ctrace__demangle(const char *name, char *out, size_t cap) {
  if (name && name[0] == '_' && name[1] == 'R') return ctrace__demangle_rust_v0(name, out, cap) ? out : name;
  if (!name || name[0] != '_' || name[1] != 'Z' || cap == 0) return name;
  if (strncmp(name, "_ZN", 3) == 0 && rust_legacy(name, out, cap)) return out;
  static cxa_demangle_fn *cxa;
  static bool looked;
  if (!looked) {
    cxa = (cxa_demangle_fn *)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    looked = true;
  }
  if (!cxa) return name;
  int status = -1;
  char *d = cxa(name, NULL, NULL, &status);
  if (status != 0 || !d) {
    free(d);
    return name;
  }
  size_t n = strlen(d);
  const char *r = name;
  if (n < cap) {
    memcpy(out, d, n + 1);
    r = out;
  }
  free(d);
  return r;
}
