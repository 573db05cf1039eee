/* The library half of tests/preload/dbgframe.c, built the same way: no
 * .eh_frame_hdr, its functions' CFI in .debug_frame only. */
static volatile int sink;

__attribute__((noinline)) static int lib_inner(int (*cb)(int), int x) {
  int r = cb(x + sink);
  sink = x;
  return r + x;
}

__attribute__((noinline)) int lib_entry(int (*cb)(int), int x) {
  int a = x * 7, r = lib_inner(cb, a);
  sink = a;
  return r + a;
}
