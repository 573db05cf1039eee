/* Separate debug files for stripped programs, local files only.
 *
 * libdwfl's dwfl_build_id_find_debuginfo finds Debian's -dbgsym files by
 * build id (/usr/lib/debug/.build-id/xx/yyyy.debug). Files installed or
 * made by hand are often named by .gnu_debuglink instead, which
 * dwfl_standard_find_debuginfo would search, but that one also asks
 * debuginfod over the network when DEBUGINFOD_URLS is set, and stopping a
 * trace must never wait on the network. So: build id first, then the
 * debuglink in GDB's places (the file's directory, its .debug/, and
 * /usr/lib/debug/ + the directory), each candidate checked against the
 * link's CRC. Runs at stop, under the tracer's control lock (symbolize.h).
 */
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/symbolize.h"

/* CRC-32 as .gnu_debuglink uses it (zlib's, polynomial 0xEDB88320). */
static uint32_t crc32_fd(int fd) {
  static uint32_t table[256];
  if (!table[1])
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
  uint32_t crc = 0xFFFFFFFFu;
  unsigned char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    for (ssize_t i = 0; i < n; i++) crc = table[(crc ^ buf[i]) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

static int try_path(const char *path, const char *self, GElf_Word crc, char **found) {
  if (strcmp(path, self) == 0) return -1; /* the stripped file itself */
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  if (crc32_fd(fd) != crc || lseek(fd, 0, SEEK_SET) != 0) {
    close(fd);
    return -1;
  }
  *found = strdup(path);
  return fd;
}

int ctrace__find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                           Dwarf_Addr base, const char *file_name, const char *debuglink_file,
                           GElf_Word debuglink_crc, char **debuginfo_file_name) {
  int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
                                        debuglink_crc, debuginfo_file_name);
  if (fd >= 0 || !debuglink_file || !file_name || strchr(debuglink_file, '/')) return fd;
  char self[PATH_MAX], dir[PATH_MAX], path[PATH_MAX * 2];
  if (!realpath(file_name, self)) return -1;
  snprintf(dir, sizeof dir, "%s", self);
  char *slash = strrchr(dir, '/');
  if (!slash) return -1;
  *slash = '\0';
  const char *const fmts[] = {"%s/%s", "%s/.debug/%s", "/usr/lib/debug%s/%s"};
  for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
    snprintf(path, sizeof path, fmts[i], dir, debuglink_file);
    fd = try_path(path, self, debuglink_crc, debuginfo_file_name);
    if (fd >= 0) return fd;
  }
  return -1;
}
