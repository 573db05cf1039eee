/* Intern tables. Entries are immutable once published with a release
 * store on their bucket, so lookups need no lock; inserts and resets take
 * the table's mutex. Memory comes from mmap'ed chunks that are kept across
 * resets, so a long run of traces does not grow the process. */
#include <string.h>
#include <sys/mman.h>

#include "tab.h"

uint64_t ctrace__hash(const void *key, size_t len) {
  const uint8_t *p = key;
  uint64_t h = 0x9E3779B97F4A7C15u ^ len;
  while (len >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9u;
    h ^= h >> 31;
    p += 8;
    len -= 8;
  }
  while (len--) h = (h ^ *p++) * 0x100000001B3u;
  h ^= h >> 29;
  return h * 0x94D049BB133111EBu;
}

static ctrace__entry *find(ctrace__tab *tab, const void *key, size_t len, uint64_t hash) {
  ctrace__entry *e =
      atomic_load_explicit(&tab->buckets[hash & (CTRACE__TAB_BUCKETS - 1)], memory_order_acquire);
  for (; e; e = e->next)
    if (e->hash == hash && e->len == len && memcmp(e->key, key, len) == 0) return e;
  return NULL;
}

uint64_t ctrace__tab_find(ctrace__tab *tab, const void *key, size_t len, uint64_t hash) {
  ctrace__entry *e = find(tab, key, len, hash);
  return e ? e->id : 0;
}

static void *arena_alloc(ctrace__tab *tab, size_t n) {
  n = (n + 7) & ~(size_t)7;
  if (tab->cur && (size_t)(tab->end - tab->cur) >= n) {
    void *p = tab->cur;
    tab->cur += n;
    return p;
  }
  /* A new chunk: 16 bytes of header (the previous chunk and its size, so
   * that reset can free every chunk), then entries. */
  size_t size = 1u << 20;
  if (n + 16 > size) size = (n + 16 + 4095) & ~(size_t)4095;
  uint8_t *c = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (c == MAP_FAILED) return NULL;
  memcpy(c, &tab->chunk, sizeof tab->chunk);
  memcpy(c + sizeof(void *), &tab->chunk_size, sizeof tab->chunk_size);
  tab->chunk = c;
  tab->chunk_size = size;
  tab->cur = c + 16;
  tab->end = c + size;
  void *p = tab->cur;
  tab->cur += n;
  return p;
}

uint64_t ctrace__tab_put(ctrace__tab *tab, const void *key, size_t len, uint64_t hash,
                         bool *fresh) {
  *fresh = false;
  pthread_mutex_lock(&tab->mu);
  ctrace__entry *e = find(tab, key, len, hash);
  if (!e) {
    e = arena_alloc(tab, sizeof *e + len);
    if (e) {
      size_t b = hash & (CTRACE__TAB_BUCKETS - 1);
      e->next = atomic_load_explicit(&tab->buckets[b], memory_order_relaxed);
      e->all = tab->all;
      e->hash = hash;
      e->id = ++tab->next_id;
      e->len = (uint32_t)len;
      memcpy(e->key, key, len);
      tab->all = e;
      atomic_store_explicit(&tab->buckets[b], e, memory_order_release);
      *fresh = true;
    }
  }
  pthread_mutex_unlock(&tab->mu);
  return e ? e->id : 0;
}

uint64_t ctrace__tab_ids(ctrace__tab *tab, uint64_t n) {
  pthread_mutex_lock(&tab->mu);
  uint64_t first = tab->next_id + 1;
  tab->next_id += n;
  pthread_mutex_unlock(&tab->mu);
  return first;
}

void ctrace__tab_reset(ctrace__tab *tab) {
  pthread_mutex_lock(&tab->mu);
  for (size_t i = 0; i < CTRACE__TAB_BUCKETS; i++)
    atomic_store_explicit(&tab->buckets[i], NULL, memory_order_relaxed);
  tab->all = NULL;
  tab->next_id = 0;
  /* Keep the newest chunk, free the others. */
  if (tab->chunk) {
    uint8_t *older;
    memcpy(&older, tab->chunk, sizeof older);
    while (older) {
      uint8_t *next;
      size_t size;
      memcpy(&next, older, sizeof next);
      memcpy(&size, older + sizeof(void *), sizeof size);
      munmap(older, size);
      older = next;
    }
    memset(tab->chunk, 0, sizeof(void *));
    tab->cur = tab->chunk + 16;
  }
  pthread_mutex_unlock(&tab->mu);
}
