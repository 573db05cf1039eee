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

/* Pointer to the value of key, or NULL. */
uint64_t *ctrace__map_get(const u64map *m, uint64_t key);
/* Pointer to the value of key, inserted as 0 if absent (*fresh says so);
 * NULL if out of memory. The pointer is valid until the next put. */
uint64_t *ctrace__map_put(u64map *m, uint64_t key, bool *fresh);
bool ctrace__map_del(u64map *m, uint64_t key);
/* Records kept in an array in the order of their keys' arrival, found by
 * key through m (which holds index + 1): the record of key, added zeroed
 * when new (*fresh says so). arrp points to the caller's pointer to the
 * array of *n records of size bytes, with room for *cap; it grows by
 * doubling. NULL if out of memory (nothing is added). */
void *ctrace__map_slot(u64map *m, uint64_t key, void *arrp, size_t *n, size_t *cap, size_t size,
                       bool *fresh);
void ctrace__map_free(u64map *m);

#endif
