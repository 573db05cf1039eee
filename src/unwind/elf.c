/* .debug_frame from ELF files. See elf.h.
 *
 * .debug_frame is never mapped (no SHF_ALLOC), so it is read from the
 * file, once, when the object's table is built (unwind.c, build_cb): the
 * section headers, the section names, the section itself. Every offset
 * and size the file gives is checked against the file's size before it is
 * read, and everything is read with pread into fresh anonymous memory, so
 * a truncated or hostile file costs a failed read, never a fault (a
 * mapping of the file would fault on a page the file no longer has).
 */
#include "unwind/elf.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

/* Sections larger than this are not read. (e_shnum is 16 bits: at most
 * 65535 section headers, 4 MiB.) */
#define MAX_SECTION (512u << 20)

/* ---- system calls ---------------------------------------------------------- */

static int sys_open(const char *path) {
  return (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
}

static void sys_close(int fd) { syscall(SYS_close, fd); }

static bool sys_pread(int fd, void *buf, size_t n, uint64_t off) {
  uint8_t *p = buf;
  while (n > 0) {
    long r = syscall(SYS_pread64, fd, p, n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= (size_t)r;
    off += (uint64_t)r;
  }
  return true;
}

static void *map(size_t n) {
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void ctrace__unw_blob_free(ctrace__unw_blob *b) {
  if (b->data && b->mapped) munmap(b->data, b->mapped);
  *b = (ctrace__unw_blob){NULL, 0, 0};
}

static bool blob_alloc(ctrace__unw_blob *b, size_t n) {
  size_t m = n ? n : 1;
  b->data = map(m);
  b->len = n;
  b->mapped = m;
  return b->data != NULL;
}

/* Memory for the headers, names and notes one search reads, a few KiB:
 * carved from one mapping, so that a search costs one mmap and munmap,
 * not one per read (an munmap is the dearest call here). What does not
 * fit is mapped on its own. Blobs carved from it have mapped 0. */
typedef struct scratch {
  uint8_t *p;
  size_t used, cap;
} scratch;

#define SCRATCH (64u << 10)

static bool take(scratch *sc, size_t n, ctrace__unw_blob *b) {
  size_t need = (n + 15) & ~(size_t)15;
  if (sc && need <= SCRATCH) {
    if (!sc->p && (sc->p = map(SCRATCH)) != NULL) sc->cap = SCRATCH;
    if (sc->p && need <= sc->cap - sc->used) {
      *b = (ctrace__unw_blob){sc->p + sc->used, n, 0};
      sc->used += need;
      return true;
    }
  }
  return blob_alloc(b, n);
}

/* ---- an ELF file ------------------------------------------------------------- */

typedef struct elf_file {
  int fd;
  uint64_t size;
  Elf64_Ehdr eh;
  ctrace__unw_blob sh;    /* section headers */
  ctrace__unw_blob names; /* section names */
  scratch *sc;            /* for the reads of headers and names */
} elf_file;

static void elf_close(elf_file *e) {
  if (e->fd >= 0) sys_close(e->fd);
  e->fd = -1;
  ctrace__unw_blob_free(&e->sh);
  ctrace__unw_blob_free(&e->names);
}

/* Whether [off, off + n) lies in the file. */
static bool in_file(const elf_file *e, uint64_t off, uint64_t n) {
  return off <= e->size && n <= e->size - off;
}

/* Reads [off, off + n) of the file; from scratch memory if small (small
 * set), else into a mapping of its own. */
static bool read_into(const elf_file *e, uint64_t off, uint64_t n, ctrace__unw_blob *out,
                      bool small) {
  if (n > MAX_SECTION || !in_file(e, off, n)) return false;
  if (!(small ? take(e->sc, (size_t)n, out) : blob_alloc(out, (size_t)n))) return false;
  if (!sys_pread(e->fd, out->data, (size_t)n, off)) {
    ctrace__unw_blob_free(out);
    return false;
  }
  return true;
}

/* Headers, names, notes: scratch memory. */
static bool read_blob(const elf_file *e, uint64_t off, uint64_t n, ctrace__unw_blob *out) {
  return read_into(e, off, n, out, true);
}

/* Opens path as a 64-bit little-endian x86-64 ELF file and reads its
 * section headers and names. */
static bool elf_open(elf_file *e, const char *path, scratch *sc) {
  memset(e, 0, sizeof *e);
  e->fd = -1;
  e->sc = sc;
  e->fd = sys_open(path);
  if (e->fd < 0) return false;
  struct stat st;
  if (syscall(SYS_fstat, e->fd, &st) != 0 || !S_ISREG(st.st_mode)) goto fail;
  e->size = (uint64_t)st.st_size;
  if (e->size < sizeof e->eh || !sys_pread(e->fd, &e->eh, sizeof e->eh, 0)) goto fail;
  const Elf64_Ehdr *h = &e->eh;
  if (memcmp(h->e_ident, ELFMAG, SELFMAG) != 0 || h->e_ident[EI_CLASS] != ELFCLASS64 ||
      h->e_ident[EI_DATA] != ELFDATA2LSB || h->e_machine != EM_X86_64 ||
      h->e_shentsize != sizeof(Elf64_Shdr) || h->e_shnum == 0 || h->e_shstrndx >= h->e_shnum)
    goto fail;
  if (!read_blob(e, h->e_shoff, (uint64_t)h->e_shnum * sizeof(Elf64_Shdr), &e->sh)) goto fail;
  const Elf64_Shdr *names = (const Elf64_Shdr *)e->sh.data + h->e_shstrndx;
  if (names->sh_type != SHT_STRTAB || !read_blob(e, names->sh_offset, names->sh_size, &e->names))
    goto fail;
  return true;
fail:
  elf_close(e);
  return false;
}

/* The section named name with contents in the file, or NULL. */
static const Elf64_Shdr *elf_section(const elf_file *e, const char *name) {
  const Elf64_Shdr *sh = (const Elf64_Shdr *)e->sh.data;
  size_t want = strlen(name) + 1;
  for (size_t i = 1; i < e->eh.e_shnum; i++) {
    if (sh[i].sh_type == SHT_NOBITS || sh[i].sh_type == SHT_NULL) continue;
    uint64_t at = sh[i].sh_name;
    if (at >= e->names.len || e->names.len - at < want) continue;
    if (memcmp(e->names.data + at, name, want) == 0) return &sh[i];
  }
  return NULL;
}

/* zlib's allocations, from mmap: a size word ahead of each. */
static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
  (void)opaque;
  size_t n = (size_t)items * size + 16;
  uint8_t *p = map(n);
  if (!p) return Z_NULL;
  memcpy(p, &n, sizeof n);
  return p + 16;
}

static void z_free(voidpf opaque, voidpf addr) {
  (void)opaque;
  uint8_t *p = (uint8_t *)addr - 16;
  size_t n;
  memcpy(&n, p, sizeof n);
  munmap(p, n);
}

/* The contents of section sh, inflated if compressed. */
static bool elf_read_section(const elf_file *e, const Elf64_Shdr *sh, ctrace__unw_blob *out) {
  if (!(sh->sh_flags & SHF_COMPRESSED)) return read_into(e, sh->sh_offset, sh->sh_size, out, false);
  ctrace__unw_blob raw = {NULL, 0, 0};
  if (sh->sh_size < sizeof(Elf64_Chdr) || !read_into(e, sh->sh_offset, sh->sh_size, &raw, false))
    return false;
  Elf64_Chdr ch;
  memcpy(&ch, raw.data, sizeof ch);
  bool ok = false;
  if (ch.ch_type == ELFCOMPRESS_ZLIB && ch.ch_size <= MAX_SECTION &&
      raw.len - sizeof ch <= UINT32_MAX && blob_alloc(out, (size_t)ch.ch_size)) {
    z_stream z;
    memset(&z, 0, sizeof z);
    z.zalloc = z_alloc;
    z.zfree = z_free;
    if (inflateInit(&z) == Z_OK) {
      z.next_in = raw.data + sizeof ch;
      z.avail_in = (uInt)(raw.len - sizeof ch);
      z.next_out = out->data;
      z.avail_out = (uInt)ch.ch_size;
      ok = ch.ch_size <= UINT32_MAX && inflate(&z, Z_FINISH) == Z_STREAM_END &&
           z.total_out == ch.ch_size;
      inflateEnd(&z);
    }
    if (!ok) ctrace__unw_blob_free(out);
  }
  ctrace__unw_blob_free(&raw);
  return ok;
}

/* ---- build ids ------------------------------------------------------------------ */

/* The NT_GNU_BUILD_ID note among the notes in [p, p + n). */
static bool find_build_id(const uint8_t *p, size_t n, const uint8_t **id, size_t *len) {
  while (n >= sizeof(Elf64_Nhdr)) {
    Elf64_Nhdr nh;
    memcpy(&nh, p, sizeof nh);
    size_t name = ((size_t)nh.n_namesz + 3) & ~(size_t)3, desc = ((size_t)nh.n_descsz + 3) & ~(size_t)3;
    if (name > n - sizeof nh || desc > n - sizeof nh - name) return false;
    if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(p + sizeof nh, "GNU", 4) == 0 &&
        nh.n_descsz > 0) {
      *id = p + sizeof nh + name;
      *len = nh.n_descsz;
      return true;
    }
    p += sizeof nh + name + desc;
    n -= sizeof nh + name + desc;
  }
  return false;
}

bool ctrace__unw_build_id(const struct dl_phdr_info *info, const uint8_t **id, size_t *len) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    if (find_build_id((const uint8_t *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, id, len))
      return true;
  }
  return false;
}

/* Whether file e's build id is id. */
static bool same_build_id(const elf_file *e, const uint8_t *id, size_t len) {
  const Elf64_Shdr *sh = (const Elf64_Shdr *)e->sh.data;
  for (size_t i = 1; i < e->eh.e_shnum; i++) {
    if (sh[i].sh_type != SHT_NOTE || sh[i].sh_size > 65536) continue;
    ctrace__unw_blob b = {NULL, 0, 0};
    if (!read_blob(e, sh[i].sh_offset, sh[i].sh_size, &b)) continue;
    const uint8_t *fid;
    size_t flen;
    bool same = find_build_id(b.data, b.len, &fid, &flen) && flen == len && memcmp(fid, id, len) == 0;
    ctrace__unw_blob_free(&b);
    if (same) return true;
  }
  return false;
}

/* Whether file e holds the program headers the loader mapped: the file
 * at the object's path may have been replaced since it was loaded. */
static bool same_phdrs(const elf_file *e, const struct dl_phdr_info *info) {
  const Elf64_Ehdr *h = &e->eh;
  if (h->e_phnum != info->dlpi_phnum || h->e_phentsize != sizeof(Elf64_Phdr) || h->e_phnum == 0)
    return false;
  ctrace__unw_blob b = {NULL, 0, 0};
  if (!read_blob(e, h->e_phoff, (uint64_t)h->e_phnum * sizeof(Elf64_Phdr), &b)) return false;
  bool same = memcmp(b.data, info->dlpi_phdr, b.len) == 0;
  ctrace__unw_blob_free(&b);
  return same;
}

/* CRC-32 as .gnu_debuglink uses it (zlib's). */
static bool file_crc(const elf_file *e, uint32_t *crc) {
  enum { CHUNK = 1 << 20 };
  ctrace__unw_blob b = {NULL, 0, 0};
  if (!blob_alloc(&b, CHUNK)) return false;
  uLong c = crc32(0, Z_NULL, 0);
  bool ok = true;
  for (uint64_t off = 0; off < e->size && ok; off += CHUNK) {
    size_t n = e->size - off < CHUNK ? (size_t)(e->size - off) : CHUNK;
    ok = sys_pread(e->fd, b.data, n, off);
    if (ok) c = crc32(c, b.data, (uInt)n);
  }
  ctrace__unw_blob_free(&b);
  *crc = (uint32_t)c;
  return ok;
}

/* ---- finding the files ------------------------------------------------------------ */

/* Appends s to buf[*n..cap); false if it does not fit. */
static bool put(char *buf, size_t cap, size_t *n, const char *s, size_t len) {
  if (len >= cap - *n) return false;
  memcpy(buf + *n, s, len);
  *n += len;
  buf[*n] = '\0';
  return true;
}

/* .debug_frame of the debug file at path, if it is the one wanted: same
 * build id (id, when the object has one), else the debuglink's CRC. */
static bool from_debug_file(const char *path, const char *self, const uint8_t *id, size_t id_len,
                            bool check_crc, uint32_t crc, scratch *sc, ctrace__unw_blob *out) {
  if (strcmp(path, self) == 0) return false; /* the stripped file itself */
  elf_file e;
  if (!elf_open(&e, path, sc)) return false;
  bool ok = false;
  uint32_t c;
  if (id ? same_build_id(&e, id, id_len) : check_crc && file_crc(&e, &c) && c == crc) {
    const Elf64_Shdr *sh = elf_section(&e, ".debug_frame");
    ok = sh && elf_read_section(&e, sh, out);
  }
  elf_close(&e);
  return ok;
}

int ctrace__unw_debug_frame(const struct dl_phdr_info *info, ctrace__unw_blob *out) {
  *out = (ctrace__unw_blob){NULL, 0, 0};
  char self[4096];
  const char *name = info->dlpi_name;
  if (!name || !*name) {
    /* The program: the file the kernel mapped, whatever its name now. */
    long n = syscall(SYS_readlink, "/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return CTRACE__UNW_DF_NONE;
    self[n] = '\0';
  } else {
    /* Names without a slash (the vDSO's) are no file. */
    size_t n = strlen(name);
    if (!strchr(name, '/') || n >= sizeof self) return CTRACE__UNW_DF_NONE;
    memcpy(self, name, n + 1);
  }
  scratch sc = {NULL, 0, 0};
  elf_file e;
  int found = CTRACE__UNW_DF_NONE;
  if (!elf_open(&e, (!name || !*name) ? "/proc/self/exe" : self, &sc)) goto none;
  if (!same_phdrs(&e, info)) goto done;
  const Elf64_Shdr *sh = elf_section(&e, ".debug_frame");
  if (sh) {
    if (elf_read_section(&e, sh, out)) found = CTRACE__UNW_DF_FILE;
    goto done;
  }
  const uint8_t *id = NULL;
  size_t id_len = 0;
  if (!ctrace__unw_build_id(info, &id, &id_len)) id = NULL;
  char path[4096 + 64];
  size_t n = 0;
  static const char hex[] = "0123456789abcdef";
  if (id && id_len >= 2 && id_len <= 64) {
    char h[2 * 64 + 1];
    for (size_t i = 0; i < id_len; i++) {
      h[2 * i] = hex[id[i] >> 4];
      h[2 * i + 1] = hex[id[i] & 15];
    }
    h[2 * id_len] = '\0';
    n = 0;
    path[0] = '\0';
    if (put(path, sizeof path, &n, "/usr/lib/debug/.build-id/", 25) &&
        put(path, sizeof path, &n, h, 2) && put(path, sizeof path, &n, "/", 1) &&
        put(path, sizeof path, &n, h + 2, 2 * id_len - 2) &&
        put(path, sizeof path, &n, ".debug", 6) &&
        from_debug_file(path, self, id, id_len, false, 0, &sc, out)) {
      found = CTRACE__UNW_DF_BUILD_ID;
      goto done;
    }
  }
  /* .gnu_debuglink: a file name, padding to 4, its CRC-32. */
  const Elf64_Shdr *dl = elf_section(&e, ".gnu_debuglink");
  ctrace__unw_blob link = {NULL, 0, 0};
  if (!dl || dl->sh_size > 4096 || !read_blob(&e, dl->sh_offset, dl->sh_size, &link)) goto done;
  size_t ln = strnlen((const char *)link.data, link.len);
  size_t crc_at = (ln + 4) & ~(size_t)3;
  if (ln > 0 && crc_at + 4 <= link.len && !memchr(link.data, '/', ln)) {
    uint32_t crc;
    memcpy(&crc, link.data + crc_at, 4);
    const char *slash = strrchr(self, '/');
    size_t dir = (size_t)(slash - self); /* self holds a slash: checked above */
    /* dir/name, dir/.debug/name, /usr/lib/debug/dir/name */
    static const char *const pre[] = {"", "", "/usr/lib/debug"}, *const mid[] = {"/", "/.debug/", "/"};
    for (int k = 0; k < 3 && !found; k++) {
      n = 0;
      path[0] = '\0';
      if (put(path, sizeof path, &n, pre[k], strlen(pre[k])) &&
          put(path, sizeof path, &n, self, dir) && put(path, sizeof path, &n, mid[k], strlen(mid[k])) &&
          put(path, sizeof path, &n, (const char *)link.data, ln) &&
          from_debug_file(path, self, id, id_len, true, crc, &sc, out))
        found = CTRACE__UNW_DF_DEBUGLINK;
    }
  }
  ctrace__unw_blob_free(&link);
done:
  elf_close(&e);
none:
  if (sc.p) munmap(sc.p, sc.cap);
  return found;
}
