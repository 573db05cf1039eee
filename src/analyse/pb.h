/* A minimal protobuf writer: varints and length-delimited fields into a
 * growable buffer. Shared by the profile encoder (src/analyse/profile.c)
 * and the Perfetto writer (src/export/perfetto.c). Internal. */
#ifndef CTRACE_ANALYSE_PB_H
#define CTRACE_ANALYSE_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct pbuf {
  unsigned char *b;
  size_t len, cap;
  bool oom;
} pbuf;

enum { PB_VARINT = 0, PB_FIXED64 = 1, PB_BYTES = 2 };

/* Room for n more bytes: false (w->oom set) when memory runs out. */
static inline bool pb_room(pbuf *w, size_t n) {
  if (w->oom) return false;
  if (w->len + n > w->cap) {
    size_t cap = w->cap ? w->cap * 2 : 256;
    while (cap < w->len + n) cap *= 2;
    unsigned char *b = realloc(w->b, cap);
    if (!b) {
      w->oom = true;
      return false;
    }
    w->b = b;
    w->cap = cap;
  }
  return true;
}

static inline void pb_put(pbuf *w, const void *d, size_t n) {
  if (!pb_room(w, n)) return;
  if (n) memcpy(w->b + w->len, d, n);
  w->len += n;
}

/* Room for the longest varint (10 bytes) first, then the bytes written in
 * place: no copy of each through a memcpy of its length, which the
 * Perfetto export, a few varints an event, spent 4% of its time in. */
static inline void pb_varint(pbuf *w, uint64_t v) {
  if (!pb_room(w, 10)) return;
  unsigned char *p = w->b + w->len;
  while (v > 0x7f) {
    *p++ = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  *p++ = (unsigned char)v;
  w->len = (size_t)(p - w->b);
}

/* A varint field, written even when 0 (proto2 presence). */
static inline void pb_uint(pbuf *w, int field, uint64_t v) {
  pb_varint(w, (uint64_t)field << 3 | PB_VARINT);
  pb_varint(w, v);
}

/* A varint field left out when 0, the proto3 default. */
static inline void pb_uint_nz(pbuf *w, int field, uint64_t v) {
  if (v) pb_uint(w, field, v);
}

static inline void pb_fixed64(pbuf *w, int field, uint64_t v) {
  unsigned char t[8];
  for (int i = 0; i < 8; i++) t[i] = (unsigned char)(v >> (8 * i));
  pb_varint(w, (uint64_t)field << 3 | PB_FIXED64);
  pb_put(w, t, 8);
}

static inline void pb_bytes(pbuf *w, int field, const void *d, size_t n) {
  pb_varint(w, (uint64_t)field << 3 | PB_BYTES);
  pb_varint(w, n);
  pb_put(w, d, n);
}

static inline void pb_str(pbuf *w, int field, const char *s) { pb_bytes(w, field, s, strlen(s)); }

/* A submessage written in place, for the short ones written most: open
 * writes its tag and a byte for its length and says where that byte is;
 * close sets it, and makes room for a longer length when the message
 * grew past 127 bytes. Building it in a buffer of its own and copying it
 * cost the Perfetto export a stall each: the copy's wide loads read what
 * the varints' byte stores had just written. */
static inline size_t pb_open(pbuf *w, int field) {
  pb_varint(w, (uint64_t)field << 3 | PB_BYTES);
  size_t at = w->len;
  if (pb_room(w, 1)) w->len++;
  return at;
}

static inline void pb_close(pbuf *w, size_t at) {
  if (w->oom) return;
  size_t n = w->len - at - 1, k = 1;
  if (n < 0x80) {
    w->b[at] = (unsigned char)n;
    return;
  }
  for (size_t v = n >> 7; v; v >>= 7) k++;
  if (!pb_room(w, k - 1)) return;
  memmove(w->b + at + k, w->b + at + 1, n);
  w->len = at;
  pb_varint(w, n);
  w->len += n;
}

/* A submessage built in sub (then emptied for reuse), framed into w. */
static inline void pb_msg(pbuf *w, int field, pbuf *sub) {
  if (sub->oom) w->oom = true;
  pb_bytes(w, field, sub->b, sub->len);
  sub->len = 0;
}

#endif
