/* The protobuf writer's in-place submessages (src/analyse/pb.h: pb_open,
 * pb_close): for every length around the varint's boundaries (127 and
 * 128, 16383 and 16384 bytes), nested two deep as the Perfetto export
 * nests an event in a packet, the bytes are those of a submessage built
 * apart and copied (pb_msg), and what follows is written after it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyse/pb.h"
#include "lib/check.h"

/* A message of n bytes of payload in field 3 of a message in field 1,
 * then a varint field after it, built in place into w. */
static void in_place(pbuf *w, size_t n, const unsigned char *payload) {
  size_t outer = pb_open(w, 1);
  pb_uint(w, 2, 7);
  size_t inner = pb_open(w, 3);
  pb_put(w, payload, n);
  pb_close(w, inner);
  pb_close(w, outer);
  pb_uint(w, 4, 99);
}

/* The same, each submessage built apart and copied. */
static void copied(pbuf *w, size_t n, const unsigned char *payload) {
  pbuf outer = {0}, inner = {0};
  pb_put(&inner, payload, n);
  pb_uint(&outer, 2, 7);
  pb_msg(&outer, 3, &inner);
  pb_msg(w, 1, &outer);
  pb_uint(w, 4, 99);
  free(outer.b);
  free(inner.b);
}

int main(void) {
  static const size_t sizes[] = {0, 1, 100, 118, 119, 120, 121, 126, 127, 128, 129, 200, 16370, 16375, 16376, 16383, 16384, 16385, 70000};
  unsigned char *payload = malloc(70000);
  if (!payload) return 1;
  for (size_t i = 0; i < 70000; i++) payload[i] = (unsigned char)(i * 131 + 7);
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    pbuf a = {0}, b = {0};
    /* Something before, as packets follow packets in the export's buffer. */
    pb_uint(&a, 9, 1);
    pb_uint(&b, 9, 1);
    in_place(&a, sizes[k], payload);
    copied(&b, sizes[k], payload);
    CHECK(!a.oom && !b.oom && a.len == b.len && memcmp(a.b, b.b, a.len) == 0,
          "payload of %zu bytes: in place %zu bytes, copied %zu, %s", sizes[k], a.len, b.len,
          a.len == b.len ? "different bytes" : "different lengths");
    free(a.b);
    free(b.b);
  }
  free(payload);
  if (failures) fprintf(stderr, "%d failures\n", failures);
  else printf("pb: in-place submessages equal copied ones at %zu lengths\n", sizeof sizes / sizeof sizes[0]);
  return failures != 0;
}
