/* ELF facts the loader acts on (elfinfo.h): the program interpreter and
 * DT_NEEDED entries, read from the program headers, which every loadable
 * file has (section headers may be stripped). Native class only: a file of
 * another class is not something this process's shim could be preloaded
 * into anyway. */
#include "elfinfo.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#define MAX_PHDRS 64
#define MAX_DYNS 512

static bool read_at(int fd, void *buf, size_t n, off_t off) {
  return pread(fd, buf, n, off) == (ssize_t)n;
}

/* File offset of virtual address a, through the PT_LOAD segments. */
static bool vaddr_to_off(const ElfW(Phdr) *ph, int n, ElfW(Addr) a, off_t *off) {
  for (int i = 0; i < n; i++) {
    if (ph[i].p_type != PT_LOAD) continue;
    if (a >= ph[i].p_vaddr && a < ph[i].p_vaddr + ph[i].p_filesz) {
      *off = (off_t)(a - ph[i].p_vaddr + ph[i].p_offset);
      return true;
    }
  }
  return false;
}

/* Whether the dynamic symbol table imports __libc_start_main, where the
 * shim starts the trace. Read through the section headers; a file without
 * them is given the benefit of the doubt. */
static bool imports_libc_start(int fd, const ElfW(Ehdr) *eh) {
  static const char want[] = "__libc_start_main";
  if (eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shnum == 0 || eh->e_shnum > 4096) return true;
  for (int i = 0; i < eh->e_shnum; i++) {
    ElfW(Shdr) sh, str;
    if (!read_at(fd, &sh, sizeof sh, (off_t)(eh->e_shoff + (ElfW(Off))i * sizeof sh))) return true;
    if (sh.sh_type != SHT_DYNSYM || sh.sh_entsize != sizeof(ElfW(Sym))) continue;
    if (sh.sh_link >= eh->e_shnum ||
        !read_at(fd, &str, sizeof str, (off_t)(eh->e_shoff + (ElfW(Off))sh.sh_link * sizeof str)))
      return true;
    for (size_t k = 0; k < sh.sh_size / sizeof(ElfW(Sym)); k++) {
      ElfW(Sym) sym;
      char name[sizeof want];
      if (!read_at(fd, &sym, sizeof sym, (off_t)(sh.sh_offset + k * sizeof sym))) return true;
      if (sym.st_name >= str.sh_size) continue;
      ssize_t n = pread(fd, name, sizeof name, (off_t)(str.sh_offset + sym.st_name));
      if (n == (ssize_t)sizeof name && memcmp(name, want, sizeof want) == 0) return true;
    }
    return false;
  }
  return true;
}

static void read_elf(int fd, ctrace__elf_info *out) {
  ElfW(Ehdr) eh;
  if (!read_at(fd, &eh, sizeof eh, 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return;
#if __SIZEOF_POINTER__ == 8
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) return;
#else
  if (eh.e_ident[EI_CLASS] != ELFCLASS32) return;
#endif
  out->elf = true;
  int n = eh.e_phnum < MAX_PHDRS ? eh.e_phnum : MAX_PHDRS;
  ElfW(Phdr) ph[MAX_PHDRS];
  if (eh.e_phentsize != sizeof ph[0] || !read_at(fd, ph, (size_t)n * sizeof ph[0], (off_t)eh.e_phoff))
    return;
  const ElfW(Phdr) *dyn = NULL;
  for (int i = 0; i < n; i++) {
    if (ph[i].p_type == PT_INTERP) out->dynamic = true;
    if (ph[i].p_type == PT_DYNAMIC) dyn = &ph[i];
  }
  if (!dyn) return;
  out->no_libc_start = !imports_libc_start(fd, &eh);
  ElfW(Dyn) d[MAX_DYNS];
  size_t nd = dyn->p_filesz / sizeof d[0];
  if (nd > MAX_DYNS) nd = MAX_DYNS;
  if (!read_at(fd, d, nd * sizeof d[0], (off_t)dyn->p_offset)) return;
  off_t strtab = -1;
  for (size_t i = 0; i < nd && d[i].d_tag != DT_NULL; i++)
    if (d[i].d_tag == DT_STRTAB && !vaddr_to_off(ph, n, d[i].d_un.d_ptr, &strtab)) return;
  if (strtab < 0) return;
  for (size_t i = 0; i < nd && d[i].d_tag != DT_NULL; i++) {
    if (d[i].d_tag != DT_NEEDED) continue;
    char name[sizeof out->asan];
    ssize_t k = pread(fd, name, sizeof name - 1, strtab + (off_t)d[i].d_un.d_val);
    if (k <= 0) continue;
    name[k] = 0;
    if (strncmp(name, "libasan.so", 10) == 0) memcpy(out->asan, name, strlen(name) + 1);
    if (strncmp(name, "libtsan.so", 10) == 0) out->tsan = true;
  }
}

bool ctrace__elf_info_read(const char *path, ctrace__elf_info *out) {
  memset(out, 0, sizeof *out);
  char interp[256];
  for (int depth = 0; depth < 2; depth++) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char head[256];
    ssize_t k = pread(fd, head, sizeof head - 1, 0);
    if (k > 2 && head[0] == '#' && head[1] == '!' && depth == 0) {
      /* A script: the kernel runs its interpreter. */
      close(fd);
      head[k] = 0;
      char *p = head + 2;
      while (*p == ' ' || *p == '\t') p++;
      char *e = p;
      while (*e && *e != ' ' && *e != '\t' && *e != '\n') e++;
      *e = 0;
      memcpy(interp, p, (size_t)(e - p) + 1);
      path = interp;
      continue;
    }
    read_elf(fd, out);
    close(fd);
    return true;
  }
  return false;
}

bool ctrace__elf_find_program(const char *file, char *out, size_t size) {
  if (!*file) {
    errno = ENOENT;
    return false;
  }
  if (strchr(file, '/')) {
    snprintf(out, size, "%s", file);
    return access(out, F_OK) == 0;
  }
  /* glibc's search: without PATH, confstr(_CS_PATH)'s /bin:/usr/bin; an
   * empty entry (PATH="", a leading, doubled or trailing ':') is the
   * current directory. */
  const char *path = getenv("PATH");
  if (!path) path = "/bin:/usr/bin";
  int err = ENOENT;
  for (const char *p = path;; p++) {
    const char *e = strchr(p, ':');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    snprintf(out, size, "%.*s%s%s", (int)len, p, len ? "/" : "", file);
    struct stat st;
    if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
      if (access(out, X_OK) == 0) return true;
      err = EACCES;
    }
    if (!e) break;
    p = e;
  }
  errno = err;
  return false;
}
