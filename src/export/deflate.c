/* The Perfetto export's packets deflated in bundles: each bundle a
 * TracePacket whose compressed_packets (field 50) is a zlib stream of whole
 * framed packets, as Perfetto's tracing service writes a trace when asked
 * to compress it. Every trace processor since 2019 (so ui.perfetto.dev)
 * inflates them; Perfetto asks that each such packet, framed, stay under
 * 512 KiB.
 *
 * The export's packets are 6.6 times smaller deflated at level 2, by
 * libdeflate (zlib's stream format, at 1.5 times the speed of zlib's own
 * level 2, which is 6.5 times), about 300 MB/s of packets a core: still
 * most of the CPU the export itself takes. So the bundles are compressed
 * on threads of their own while the walk goes on, in a ring of slots the
 * walk fills in order and writes out in order, each slot before it is
 * filled again; a bundle crosses cores as one megabyte, not event by
 * event. */
#include "export/deflate.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <libdeflate.h>

#include "analyse/pb.h"

enum {
  LEVEL = 2, /* 6.6 times smaller at 280-380 MB/s; 1: 4.6 at 1.4 times that; 3: 7.3 at 0.9 */
  BUNDLE_IN = 1 << 20,  /* packets a bundle (its ratio hardly grows past this) */
  /* Under 512 KiB framed: the Trace.packet tag and size, the
   * compressed_packets tag and size take at most 9 bytes. */
  BUNDLE_OUT = (512 << 10) - 16,
  SLOTS = 4,            /* a bundle filling, one per thread, one written */
  THREADS_MAX = SLOTS - 2,
  TRACE_PACKET = 1, /* Trace.packet */
  COMPRESSED_PACKETS = 50,
};

enum { FREE, FULL, BUSY, DONE };

typedef struct slot {
  pbuf in;      /* whole framed packets */
  size_t *cuts; /* the end of each write in in: where a bundle may be cut */
  size_t ncuts, cutcap;
  pbuf out;     /* the framed bundles, or packets left as they are */
  int state;
  uint64_t seq; /* its place in the output */
  bool oom;
} slot;

struct ex_deflate {
  FILE *out;
  slot slots[SLOTS];
  size_t fill; /* the slot the caller fills; the next ones, in turn, the oldest */
  uint64_t seq; /* bundles handed over */
  pthread_mutex_t mu;
  pthread_cond_t work, done;
  pthread_t th[THREADS_MAX];
  unsigned nth;
  bool stop;
  struct libdeflate_compressor *z; /* the caller's, when there are no threads */
  int err;
  uint64_t written;
};

/* Deflates the writes a to b-1 of s into one bundle appended to s->out; a
 * run that comes out larger than a bundle may be is cut in two, and one
 * write that does (it does not compress) is left as it is, its packets
 * valid among bundles. false when out of memory. */
static bool pack(struct libdeflate_compressor *z, slot *s, size_t a, size_t b) {
  size_t from = a ? s->cuts[a - 1] : 0, n = s->cuts[b - 1] - from, at = s->out.len;
  size_t packet = pb_open(&s->out, TRACE_PACKET), bundle = pb_open(&s->out, COMPRESSED_PACKETS);
  if (!pb_room(&s->out, BUNDLE_OUT)) return false;
  size_t c = libdeflate_zlib_compress(z, s->in.b + from, n, s->out.b + s->out.len, BUNDLE_OUT);
  if (c) {
    /* The lengths, now known: each close moves the bundle up past it. */
    s->out.len += c;
    pb_close(&s->out, bundle);
    pb_close(&s->out, packet);
    return !s->out.oom;
  }
  s->out.len = at;
  if (b - a > 1) return pack(z, s, a, a + (b - a) / 2) && pack(z, s, a + (b - a) / 2, b);
  pb_put(&s->out, s->in.b + from, n);
  return !s->out.oom;
}

static bool pack_slot(struct libdeflate_compressor *z, slot *s) {
  return z && (s->ncuts == 0 || pack(z, s, 0, s->ncuts));
}

static void *worker(void *arg) {
  ex_deflate *d = arg;
  struct libdeflate_compressor *z = libdeflate_alloc_compressor(LEVEL);
  pthread_mutex_lock(&d->mu);
  for (;;) {
    slot *s = NULL;
    /* The oldest bundle first: the caller writes them in order. */
    for (size_t i = 0; i < SLOTS; i++) {
      slot *t = &d->slots[i];
      if (t->state == FULL && (!s || t->seq < s->seq)) s = t;
    }
    if (!s) {
      if (d->stop) break;
      pthread_cond_wait(&d->work, &d->mu);
      continue;
    }
    s->state = BUSY;
    pthread_mutex_unlock(&d->mu);
    bool ok = pack_slot(z, s);
    pthread_mutex_lock(&d->mu);
    s->oom = !ok;
    s->state = DONE;
    pthread_cond_broadcast(&d->done);
  }
  pthread_mutex_unlock(&d->mu);
  libdeflate_free_compressor(z);
  return NULL;
}

/* Writes slot s out once compressed, and frees it for filling. */
static void retire(ex_deflate *d, slot *s) {
  if (d->nth) {
    pthread_mutex_lock(&d->mu);
    while (s->state != DONE && s->state != FREE) pthread_cond_wait(&d->done, &d->mu);
    pthread_mutex_unlock(&d->mu);
  }
  if (s->state == FREE) return;
  if (s->oom && !d->err) d->err = EX_DEFLATE_OOM;
  if (!d->err && s->out.len) {
    if (fwrite(s->out.b, 1, s->out.len, d->out) != s->out.len) d->err = EX_DEFLATE_WERR;
    else d->written += s->out.len;
  }
  s->in.len = s->out.len = s->ncuts = 0;
  if (d->nth) pthread_mutex_lock(&d->mu);
  s->state = FREE;
  if (d->nth) pthread_mutex_unlock(&d->mu);
}

/* Hands the slot being filled over, and readies the next. */
static void submit(ex_deflate *d) {
  slot *s = &d->slots[d->fill];
  if (d->nth) {
    pthread_mutex_lock(&d->mu);
    s->state = FULL;
    s->seq = d->seq++;
    pthread_cond_signal(&d->work);
    pthread_mutex_unlock(&d->mu);
  } else {
    s->oom = !pack_slot(d->z, s);
    s->state = DONE;
  }
  d->fill = (d->fill + 1) % SLOTS;
  retire(d, &d->slots[d->fill]);
}

int ctrace__ex_deflate_write(ex_deflate *d, const void *b, size_t n) {
  slot *s = &d->slots[d->fill];
  if (d->err) return d->err;
  if (s->ncuts == s->cutcap) {
    size_t cap = s->cutcap ? 2 * s->cutcap : 64;
    size_t *c = realloc(s->cuts, cap * sizeof *c);
    if (!c) return d->err = EX_DEFLATE_OOM;
    s->cuts = c, s->cutcap = cap;
  }
  pb_put(&s->in, b, n);
  if (s->in.oom) return d->err = EX_DEFLATE_OOM;
  s->cuts[s->ncuts++] = s->in.len;
  if (s->in.len >= BUNDLE_IN) submit(d);
  return d->err;
}

int ctrace__ex_deflate_finish(ex_deflate *d, uint64_t *written) {
  if (d->slots[d->fill].ncuts) submit(d);
  for (size_t i = 0; i < SLOTS; i++) retire(d, &d->slots[(d->fill + i) % SLOTS]);
  *written = d->written;
  return d->err;
}

ex_deflate *ctrace__ex_deflate_new(FILE *out, unsigned threads) {
  ex_deflate *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  d->out = out;
  pthread_mutex_init(&d->mu, NULL);
  pthread_cond_init(&d->work, NULL);
  pthread_cond_init(&d->done, NULL);
  if (threads > THREADS_MAX) threads = THREADS_MAX;
  while (d->nth < threads && pthread_create(&d->th[d->nth], NULL, worker, d) == 0) d->nth++;
  if (!d->nth && !(d->z = libdeflate_alloc_compressor(LEVEL))) {
    ctrace__ex_deflate_free(d);
    return NULL;
  }
  return d;
}

void ctrace__ex_deflate_free(ex_deflate *d) {
  if (!d) return;
  pthread_mutex_lock(&d->mu);
  d->stop = true;
  pthread_cond_broadcast(&d->work);
  pthread_mutex_unlock(&d->mu);
  for (unsigned i = 0; i < d->nth; i++) pthread_join(d->th[i], NULL);
  libdeflate_free_compressor(d->z);
  for (size_t i = 0; i < SLOTS; i++) {
    free(d->slots[i].in.b);
    free(d->slots[i].out.b);
    free(d->slots[i].cuts);
  }
  pthread_cond_destroy(&d->work);
  pthread_cond_destroy(&d->done);
  pthread_mutex_destroy(&d->mu);
  free(d);
}
