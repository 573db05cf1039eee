/* u64map: an open-addressing hash map from uint64 keys to uint64 values,
 * the reader's one associative structure (goroutines, Ps, strings, stacks,
 * tasks). Grows by doubling; memory is 16 bytes a slot at most twice the
 * entries. */
#ifndef CTRACE_PARSE_MAP_H
#define CTRACE_PARSE_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct u64map {
  uint64_t *keys, *vals;
  uint8_t *used;
  size_t cap, len;
} u64map;

static inline size_t ctrace__map_slot_of(uint64_t key, size_t cap) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdu;
  key ^= key >> 33;
  return (size_t)key & (cap - 1);
}

/* Pointer to the value of key, or NULL. Inline: the reader looks up a
 * goroutine, P, stack or string several times per event. */
static inline uint64_t *ctrace__map_get(const u64map *m, uint64_t key) {
  if (!m->cap) return NULL;
  for (size_t i = ctrace__map_slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (!m->used[i]) return NULL;
    if (m->keys[i] == key) return &m->vals[i];
  }
}
/* ctrace__map_put when the map must grow first (map.c). */
uint64_t *ctrace__map_put_grow(u64map *m, uint64_t key, bool *fresh);
/* Pointer to the value of key, inserted as 0 if absent (*fresh says so);
 * NULL if out of memory. The pointer is valid until the next put.
 * Inline but for the growth: most puts find their key (the analyses put
 * once an event or more), and a call cost more than the probe. The map
 * grows before the probe, whether the key is there or not, as it always
 * has: when it grows decides where keys go, and so the order in which
 * those who walk the slots meet them. */
static inline uint64_t *ctrace__map_put(u64map *m, uint64_t key, bool *fresh) {
  if ((m->len + 1) * 2 > m->cap) return ctrace__map_put_grow(m, key, fresh);
  size_t i = ctrace__map_slot_of(key, m->cap);
  for (; m->used[i]; i = (i + 1) & (m->cap - 1))
    if (m->keys[i] == key) {
      if (fresh) *fresh = false;
      return &m->vals[i];
    }
  m->used[i] = 1;
  m->keys[i] = key;
  m->vals[i] = 0;
  m->len++;
  if (fresh) *fresh = true;
  return &m->vals[i];
}
bool ctrace__map_del(u64map *m, uint64_t key);

/* A direct-mapped cache in front of a u64map, for keys looked up once an
 * event or more (the goroutines, Ps and threads of the events, their
 * stacks): a hit costs one cache line, where the map's probe touches
 * three arrays. A value of 0 is an empty entry (so a zeroed cache is
 * empty); the owner clears an entry whose key leaves the map. */
#define CTRACE__CACHE_SIZE 64
typedef struct u64cache {
  uint64_t key[CTRACE__CACHE_SIZE], val[CTRACE__CACHE_SIZE];
} u64cache;

static inline uint64_t ctrace__cache_get(const u64cache *c, uint64_t key) {
  unsigned i = (unsigned)(key ^ key >> 6) & (CTRACE__CACHE_SIZE - 1);
  return c->key[i] == key ? c->val[i] : 0;
}
static inline void ctrace__cache_put(u64cache *c, uint64_t key, uint64_t val) {
  unsigned i = (unsigned)(key ^ key >> 6) & (CTRACE__CACHE_SIZE - 1);
  c->key[i] = key;
  c->val[i] = val;
}
static inline void ctrace__cache_del(u64cache *c, uint64_t key) {
  unsigned i = (unsigned)(key ^ key >> 6) & (CTRACE__CACHE_SIZE - 1);
  if (c->key[i] == key) c->val[i] = 0;
}
/* Room for one more record (of size bytes) than the n in the array that
 * arrp points to the pointer of, whose room is *cap: it doubles (first:
 * its first room). False if out of memory (then it is as it was). */
bool ctrace__room(void *arrp, size_t n, size_t *cap, size_t size, size_t first);
/* Room for need records (of size bytes) in the array that arrp points to
 * the pointer of, whose room is *cap: it doubles, from 16. False if out
 * of memory or too large (then it is as it was). */
bool ctrace__grow(void *arrp, uint64_t *cap, uint64_t need, size_t size);

/* Slots of records taken out (ctrace__map_slot_drop), which new keys
 * take before the array grows: the records of goroutines that ended, in
 * a trace that starts goroutines without end. */
typedef struct u64free {
  size_t *ix;
  size_t n, cap;
} u64free;

/* Records kept in an array in the order of their keys' arrival (or in the
 * slot of one taken out, when f is not NULL), found by key through m
 * (which holds index + 1): the record of key, added zeroed when new
 * (*fresh says so). arrp points to the caller's pointer to the array of
 * *n records of size bytes, with room for *cap; it grows by doubling.
 * NULL if out of memory (nothing is added). */
void *ctrace__map_slot(u64map *m, u64free *f, uint64_t key, void *arrp, size_t *n, size_t *cap, size_t size,
                       bool *fresh);
/* The same through c, a cache of key -> index + 1 in front of m: for the
 * analyses' records of goroutines, looked up at nearly every event. Its
 * hit is inline, the map out of line. */
static inline void *ctrace__map_slot_cached(u64cache *c, u64map *m, u64free *f, uint64_t key, void *arrp,
                                            size_t *n, size_t *cap, size_t size, bool *fresh) {
  uint64_t ix = ctrace__cache_get(c, key);
  if (ix) {
    *fresh = false;
    return *(char **)arrp + (ix - 1) * size;
  }
  char *r = ctrace__map_slot(m, f, key, arrp, n, cap, size, fresh);
  if (r) ctrace__cache_put(c, key, (uint64_t)(r - *(char **)arrp) / size + 1);
  return r;
}
/* Takes key's record out (c may be NULL): its slot is zeroed, and the
 * next new key takes it. False if there was none, or no memory to keep
 * the slot (then it stays, zeroed, and is not taken again). */
bool ctrace__map_slot_drop(u64map *m, u64cache *c, u64free *f, uint64_t key, void *arr, size_t size);
void ctrace__free_free(u64free *f);
void ctrace__map_free(u64map *m);

/* u64set: how many distinct ids were added, a bit an id in chunks of
 * 4096 ids found through a u64map. Go numbers goroutines densely from 1: a
 * program that starts goroutines without end (3.4 million in 2.6 s) cost
 * 0.5 MB here, where the ids in a u64map took 270 MB, 50 bytes and more
 * each. A chunk whose 4096 ids have all come is full: its bits go (their
 * slot to the next chunk), and the chunk's number stays in a map of the
 * full ones, so that the set of the goroutines a trace ever had holds the
 * chunks of those of late only. A lone id costs a chunk of its own (512
 * bytes). */
typedef struct u64set {
  u64map chunks;  /* id >> 12 -> chunk index + 1 */
  uint64_t *bits; /* 64 words a chunk */
  size_t nchunks, cap;
  u64free freed; /* the slots of chunks that became full */
  u64map full;   /* id >> 12 of the chunks full -> 1 */
  size_t len;    /* ids added */
} u64set;

/* Adds id: false if out of memory (then it is not counted). Out of line:
 * its callers meet an id again through caches of their own (the
 * reader's per event), which stay small enough to inline. */
bool ctrace__set_add(u64set *s, uint64_t id);
/* Whether id was added. */
static inline bool ctrace__set_has(const u64set *s, uint64_t id) {
  const uint64_t *ix = ctrace__map_get(&s->chunks, id >> 12);
  if (ix) return s->bits[(*ix - 1) * 64 + ((id >> 6) & 63)] >> (id & 63) & 1;
  return s->full.len && ctrace__map_get(&s->full, id >> 12);
}
void ctrace__set_free(u64set *s);

#endif
