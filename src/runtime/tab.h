/* Intern tables: byte keys to dense ids, lock-free lookup, locked insert.
 * Used for the string dictionary and the stack table (Go's tracemap.go). */
#ifndef CTRACE_TAB_H
#define CTRACE_TAB_H

#include "internal.h"

#define CTRACE__TAB_BUCKETS (1u << 14)

typedef struct ctrace__entry {
  struct ctrace__entry *next; /* bucket chain; set before publication */
  struct ctrace__entry *all;  /* every entry, newest first */
  uint64_t hash, id;
  uint32_t len;
  _Alignas(8) uint8_t key[];
} ctrace__entry;

typedef struct ctrace__tab {
  _Atomic(ctrace__entry *) buckets[CTRACE__TAB_BUCKETS];
  pthread_mutex_t mu;          /* inserts and reset */
  ctrace__entry *all;
  uint64_t next_id;            /* last id handed out; ids start at 1 */
  uint8_t *chunk, *cur, *end;  /* arena (mmap), kept across resets */
  size_t chunk_size;
} ctrace__tab;

#define CTRACE__TAB_INIT {.mu = PTHREAD_MUTEX_INITIALIZER}

uint64_t ctrace__hash(const void *key, size_t len) CTRACE__HIDDEN;
/* Id of key or 0. Any thread, no lock. */
uint64_t ctrace__tab_find(ctrace__tab *tab, const void *key, size_t len, uint64_t hash) CTRACE__HIDDEN;
/* Id of key, inserting it; *fresh tells whether this call inserted it.
 * 0 if out of memory. */
uint64_t ctrace__tab_put(ctrace__tab *tab, const void *key, size_t len, uint64_t hash,
                         bool *fresh) CTRACE__HIDDEN;
/* Forgets every entry. Only while no thread can use the table. */
void ctrace__tab_reset(ctrace__tab *tab) CTRACE__HIDDEN;
/* Reserves n ids no entry will get; returns the first. */
uint64_t ctrace__tab_ids(ctrace__tab *tab, uint64_t n) CTRACE__HIDDEN;

#endif
