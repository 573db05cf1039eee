#include "map.h"

#include <stdlib.h>
#include <string.h>

static size_t slot(uint64_t key, size_t cap) { return ctrace__map_slot_of(key, cap); }

static bool grow(u64map *m) {
  size_t cap = m->cap ? m->cap * 2 : 16;
  u64map n = {calloc(cap, 8), calloc(cap, 8), calloc(cap, 1), cap, 0};
  if (!n.keys || !n.vals || !n.used) {
    free(n.keys), free(n.vals), free(n.used);
    return false;
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->used[i]) continue;
    size_t j = slot(m->keys[i], cap);
    while (n.used[j]) j = (j + 1) & (cap - 1);
    n.used[j] = 1;
    n.keys[j] = m->keys[i];
    n.vals[j] = m->vals[i];
    n.len++;
  }
  ctrace__map_free(m);
  *m = n;
  return true;
}

uint64_t *ctrace__map_put_grow(u64map *m, uint64_t key, bool *fresh) {
  /* Doubled, the map has room: the put probes at once. */
  return grow(m) ? ctrace__map_put(m, key, fresh) : NULL;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
bool ctrace__map_del(u64map *m, uint64_t key) {
  if (!m->cap) return false;
  size_t i = slot(key, m->cap);
  for (;; i = (i + 1) & (m->cap - 1)) {
    if (!m->used[i]) return false;
    if (m->keys[i] == key) break;
  }
  for (size_t j = i;;) {
    j = (j + 1) & (m->cap - 1);
    if (!m->used[j]) break;
    size_t k = slot(m->keys[j], m->cap);
    /* Move j back to i unless its home k lies cyclically in (i, j]. */
    if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
      m->keys[i] = m->keys[j];
      m->vals[i] = m->vals[j];
      i = j;
    }
  }
  m->used[i] = 0;
  m->len--;
  return true;
}

void ctrace__map_free(u64map *m) {
  free(m->keys);
  free(m->vals);
  free(m->used);
  m->keys = m->vals = NULL;
  m->used = NULL;
  m->cap = m->len = 0;
}

/* The one growth of the reader's arrays: room for need records, the room
 * doubled (first: the first room) until it holds them. */
static bool grow_to(void *arrp, uint64_t *cap, uint64_t need, size_t size, uint64_t first) {
  if (need <= *cap) return true;
  if (need > SIZE_MAX / 2 / size) return false;
  uint64_t c = *cap ? *cap * 2 : first;
  while (c < need) c *= 2;
  char *arr;
  memcpy(&arr, arrp, sizeof arr); /* the caller's pointer, whatever it points to */
  char *a = realloc(arr, c * size);
  if (!a) return false;
  memcpy(arrp, &a, sizeof a);
  *cap = c;
  return true;
}

bool ctrace__room(void *arrp, size_t n, size_t *cap, size_t size, size_t first) {
  uint64_t c = *cap;
  if (!grow_to(arrp, &c, (uint64_t)n + 1, size, first)) return false;
  *cap = (size_t)c;
  return true;
}

bool ctrace__grow(void *arrp, uint64_t *cap, uint64_t need, size_t size) {
  return grow_to(arrp, cap, need, size, 16);
}

void *ctrace__map_slot(u64map *m, u64free *f, uint64_t key, void *arrp, size_t *n, size_t *cap, size_t size,
                       bool *fresh) {
  char *arr;
  memcpy(&arr, arrp, sizeof arr); /* the caller's pointer, whatever it points to */
  uint64_t *ix = ctrace__map_put(m, key, fresh);
  if (!ix) return NULL;
  if (*fresh) {
    if (f && f->n) { /* zeroed when taken out */
      *ix = f->ix[--f->n] + 1;
      return arr + (*ix - 1) * size;
    }
    if (!ctrace__room(arrp, *n, cap, size, 256)) {
      ctrace__map_del(m, key);
      return NULL;
    }
    memcpy(&arr, arrp, sizeof arr);
    memset(arr + *n * size, 0, size);
    *ix = ++*n;
  }
  return arr + (*ix - 1) * size;
}

bool ctrace__map_slot_drop(u64map *m, u64cache *c, u64free *f, uint64_t key, void *arr, size_t size) {
  const uint64_t *ix = ctrace__map_get(m, key);
  if (!ix) return false;
  size_t i = (size_t)*ix - 1;
  ctrace__map_del(m, key);
  if (c) ctrace__cache_del(c, key);
  memset((char *)arr + i * size, 0, size);
  if (!ctrace__room(&f->ix, f->n, &f->cap, sizeof *f->ix, 64)) return false;
  f->ix[f->n++] = i;
  return true;
}

void ctrace__free_free(u64free *f) {
  free(f->ix);
  *f = (u64free){0};
}

/* w, a word of id's chunk, just became all ones: the chunk may be full. */
static void word_full(u64set *s, uint64_t id, const uint64_t *w) {
  const uint64_t *c = w - ((id >> 6) & 63);
  for (int i = 0; i < 64; i++)
    if (c[i] != ~0ull) return;
  /* Out of memory for the full map: the chunk keeps its bits. */
  bool fresh;
  uint64_t *v = ctrace__map_put(&s->full, id >> 12, &fresh);
  if (!v) return;
  *v = 1;
  /* Should no room be had to note the free slot, it stays unused. */
  ctrace__map_slot_drop(&s->chunks, NULL, &s->freed, id >> 12, s->bits, 64 * sizeof *s->bits);
}

bool ctrace__set_add(u64set *s, uint64_t id) {
  const uint64_t *ix = ctrace__map_get(&s->chunks, id >> 12);
  uint64_t *w;
  if (ix) {
    w = &s->bits[(*ix - 1) * 64];
  } else {
    if (s->full.len && ctrace__map_get(&s->full, id >> 12)) return true;
    bool fresh;
    w = ctrace__map_slot(&s->chunks, &s->freed, id >> 12, &s->bits, &s->nchunks, &s->cap, 64 * sizeof *w, &fresh);
    if (!w) return false;
  }
  uint64_t bit = 1ull << (id & 63);
  w += (id >> 6) & 63;
  if (!(*w & bit)) {
    *w |= bit;
    s->len++;
    if (*w == ~0ull) word_full(s, id, w);
  }
  return true;
}

void ctrace__set_free(u64set *s) {
  ctrace__map_free(&s->chunks);
  ctrace__map_free(&s->full);
  ctrace__free_free(&s->freed);
  free(s->bits);
  *s = (u64set){0};
}
