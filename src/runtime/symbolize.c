/* In-process symbolizer on elfutils' libdwfl. See symbolize.h.
 *
 * One Dwfl session describes this process's modules (from /proc/self/maps)
 * and loads each module's ELF and DWARF lazily, the first time a PC falls
 * in it. Results are cached by PC, and the strings in them are interned
 * copies, so they outlive module reloads and stay valid until close.
 */
#include "runtime/symbolize.h"
#include "runtime/env.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

static const char unknown[] = "?";

/* NULL: libdwfl's default debuginfo search path (.debug, /usr/lib/debug).
   The callbacks keep a pointer to it, so it must outlive the session. */
static char *debuginfo_path;

/* Local files only. dwfl_standard_find_debuginfo would ask debuginfod when
   DEBUGINFOD_URLS is set (Debian sets it in login shells), and stopping a
   trace must never wait on the network. ctrace__find_debuginfo (debugfile.c)
   finds Debian's -dbgsym packages under /usr/lib/debug/.build-id, then
   files named by .gnu_debuglink. MiniDebugInfo (.gnu_debugdata) and the
   dynamic symbol table are libdwfl's own fallbacks for symbols. */
static const Dwfl_Callbacks callbacks = {
  .find_elf = dwfl_linux_proc_find_elf,
  .find_debuginfo = ctrace__find_debuginfo,
  .debuginfo_path = &debuginfo_path,
};

typedef struct cache_entry {
  uintptr_t pc; /* 0: empty slot (PC 0 is never cached) */
  ctrace__frame frame;
} cache_entry;

static struct {
  Dwfl *dwfl;       /* NULL until the first report, or if libdwfl failed */
  bool reported;    /* a report was attempted: do not retry on every call */
  bool counted;     /* adds/subs below were read from the loader */
  uint64_t adds;    /* the loader's dlpi_adds and dlpi_subs when the */
  uint64_t subs;    /* modules were last reported */
  cache_entry *cache; /* PC -> frame, open addressing, power-of-2 size */
  size_t cache_cap, cache_len;
  char **strs;        /* interned strings, open addressing, power-of-2 */
  size_t strs_cap, strs_len;
  Dwfl_Module *used[256]; /* modules that named a pc, for CTRACE_VERBOSE, */
  size_t nused;           /* in this session */
  char *said[256];        /* the files report_sources named, since close */
  size_t nsaid;
} S;

/* ---- loader generation --------------------------------------------------- */

typedef struct loader_counters {
  bool valid;
  uint64_t adds, subs;
} loader_counters;

static int read_counters_cb(struct dl_phdr_info *info, size_t size,
                            void *arg) {
  loader_counters *c = arg;
  /* Every entry carries the same counters; older loaders lack them. */
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) +
                  sizeof info->dlpi_subs) {
    c->valid = true;
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
  }
  return 1; /* one entry is enough */
}

/* The loader counts objects added and removed; comparing the counts with
   those at the last report tells whether /proc/self/maps is worth
   rereading, without reading it. */
static loader_counters read_counters(void) {
  loader_counters c = {0};
  dl_iterate_phdr(read_counters_cb, &c);
  return c;
}

/* ---- interned strings ---------------------------------------------------- */

static uint64_t hash_str(const char *s, size_t n) {
  uint64_t h = 14695981039346656037ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static bool strs_grow(void) {
  size_t cap = S.strs_cap ? S.strs_cap * 2 : 256;
  char **strs = calloc(cap, sizeof *strs);
  if (strs == NULL)
    return false;
  for (size_t i = 0; i < S.strs_cap; i++) {
    char *s = S.strs[i];
    if (s == NULL)
      continue;
    size_t j = hash_str(s, strlen(s)) & (cap - 1);
    while (strs[j] != NULL)
      j = (j + 1) & (cap - 1);
    strs[j] = s;
  }
  free(S.strs);
  S.strs = strs;
  S.strs_cap = cap;
  return true;
}

/* Returns a copy of a followed by b (b may be NULL) that lives until close,
   shared with every equal string: function and file names repeat across
   many PCs. "?" for an empty or missing string, or when memory runs out. */
static const char *intern2(const char *a, const char *b) {
  if (a == NULL || a[0] == '\0')
    return unknown;
  size_t na = strlen(a), nb = b ? strlen(b) : 0;
  char stack[512], *buf = stack;
  if (na + nb + 1 > sizeof stack && (buf = malloc(na + nb + 1)) == NULL)
    return unknown;
  memcpy(buf, a, na);
  if (nb)
    memcpy(buf + na, b, nb);
  buf[na + nb] = '\0';
  size_t n = na + nb;

  const char *result = unknown;
  if (S.strs_len * 2 >= S.strs_cap && !strs_grow())
    goto out;
  size_t j = hash_str(buf, n) & (S.strs_cap - 1);
  for (; S.strs[j] != NULL; j = (j + 1) & (S.strs_cap - 1)) {
    if (strcmp(S.strs[j], buf) == 0) {
      result = S.strs[j];
      goto out;
    }
  }
  char *copy = malloc(n + 1);
  if (copy == NULL)
    goto out;
  memcpy(copy, buf, n + 1);
  S.strs[j] = copy;
  S.strs_len++;
  result = copy;
out:
  if (buf != stack)
    free(buf);
  return result;
}

static const char *intern(const char *s) { return intern2(s, NULL); }

/* A function's name as people read it (demangle.c). */
static const char *intern_func(const char *raw) {
  char buf[1024], plain[1024];
  /* A versioned symbol (__libc_start_main@@GLIBC_2.34) without its
     version, which says nothing of the code. */
  const char *at = raw ? strchr(raw, '@') : NULL;
  if (at && at != raw && (size_t)(at - raw) < sizeof plain) {
    memcpy(plain, raw, (size_t)(at - raw));
    plain[at - raw] = '\0';
    raw = plain;
  }
  return intern(ctrace__demangle(raw, buf, sizeof buf));
}

/* Source paths in DWARF may be relative to the compilation directory;
   joining them gives the viewer a path it can open. */
static const char *intern_path(const char *file, const char *comp_dir) {
  if (file == NULL || file[0] == '/' || comp_dir == NULL ||
      comp_dir[0] == '\0')
    return intern(file);
  size_t n = strlen(comp_dir);
  char stack[512], *dir = stack;
  if (n + 2 > sizeof stack && (dir = malloc(n + 2)) == NULL)
    return intern(file);
  memcpy(dir, comp_dir, n);
  if (comp_dir[n - 1] != '/')
    dir[n++] = '/';
  dir[n] = '\0';
  const char *result = intern2(dir, file);
  if (dir != stack)
    free(dir);
  return result;
}

/* ---- PC cache ------------------------------------------------------------ */

static size_t hash_pc(uintptr_t pc, size_t cap) {
  return (size_t)(((uint64_t)pc * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static const ctrace__frame *cache_find(uintptr_t pc) {
  if (S.cache_cap == 0)
    return NULL;
  for (size_t j = hash_pc(pc, S.cache_cap); S.cache[j].pc != 0;
       j = (j + 1) & (S.cache_cap - 1)) {
    if (S.cache[j].pc == pc)
      return &S.cache[j].frame;
  }
  return NULL;
}

static bool cache_grow(void) {
  size_t cap = S.cache_cap ? S.cache_cap * 2 : 1024;
  cache_entry *cache = calloc(cap, sizeof *cache);
  if (cache == NULL)
    return false;
  for (size_t i = 0; i < S.cache_cap; i++) {
    if (S.cache[i].pc == 0)
      continue;
    size_t j = hash_pc(S.cache[i].pc, cap);
    while (cache[j].pc != 0)
      j = (j + 1) & (cap - 1);
    cache[j] = S.cache[i];
  }
  free(S.cache);
  S.cache = cache;
  S.cache_cap = cap;
  return true;
}

/* Caching is an optimization: when memory runs out the frame is simply
   not remembered. */
static void cache_add(uintptr_t pc, const ctrace__frame *frame) {
  if (S.cache_len * 2 >= S.cache_cap && !cache_grow())
    return;
  size_t j = hash_pc(pc, S.cache_cap);
  while (S.cache[j].pc != 0)
    j = (j + 1) & (S.cache_cap - 1);
  S.cache[j].pc = pc;
  S.cache[j].frame = *frame;
  S.cache_len++;
}

static void cache_clear(void) {
  if (S.cache != NULL)
    memset(S.cache, 0, S.cache_cap * sizeof *S.cache);
  S.cache_len = 0;
}

/* ---- CUs by address ------------------------------------------------------ */

/* libdw (0.188) finds the compilation unit holding an address only through
   .debug_aranges, which clang does not emit by default. For modules where
   that fails, the CUs' own address ranges are collected once into a sorted
   index kept in the module's userdata slot. */
typedef struct cu_range {
  Dwarf_Addr lo, hi; /* [lo, hi) in DWARF addresses (without bias) */
  Dwarf_Die cu;      /* valid while the module is */
} cu_range;

typedef struct cu_index {
  size_t n;
  cu_range r[];
} cu_index;

static int cmp_range(const void *a, const void *b) {
  const cu_range *x = a, *y = b;
  return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Returns an index, possibly empty (no DWARF, or memory ran out part-way:
   a partial index only loses file and line for some PCs), or NULL when
   nothing could be allocated. */
static cu_index *build_cu_index(Dwfl_Module *mod) {
  size_t cap = 0;
  cu_index *ix = calloc(1, sizeof *ix);
  Dwarf_Addr bias;
  for (Dwarf_Die *cu = NULL;
       ix != NULL && (cu = dwfl_module_nextcu(mod, cu, &bias)) != NULL;) {
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;
    while ((off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0) {
      /* Linkers leave the ranges of discarded code at 0. */
      if (lo == 0 || hi <= lo)
        continue;
      if (ix->n == cap) {
        size_t ncap = cap ? cap * 2 : 64;
        cu_index *bigger = realloc(ix, sizeof *ix + ncap * sizeof ix->r[0]);
        if (bigger == NULL)
          goto done;
        ix = bigger;
        cap = ncap;
      }
      ix->r[ix->n++] = (cu_range){lo, hi, *cu};
    }
  }
done:
  if (ix != NULL)
    qsort(ix->r, ix->n, sizeof ix->r[0], cmp_range);
  return ix;
}

static Dwarf_Die *cu_index_find(cu_index *ix, Dwarf_Addr a) {
  size_t lo = 0, hi = ix->n; /* find the last range starting at or below a */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ix->r[mid].lo <= a)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo > 0 && a < ix->r[lo - 1].hi ? &ix->r[lo - 1].cu : NULL;
}

/* The CU DIE holding addr, and in *bias the offset from DWARF addresses
   to run-time ones; NULL if the module has no DWARF for addr. */
static Dwarf_Die *find_cu(Dwfl_Module *mod, uintptr_t addr, Dwarf_Addr *bias) {
  Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, bias);
  if (cu != NULL)
    return cu;
  if (dwfl_module_getdwarf(mod, bias) == NULL)
    return NULL;
  void **userdata;
  dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
  if (*userdata == NULL)
    *userdata = build_cu_index(mod);
  return *userdata ? cu_index_find(*userdata, addr - *bias) : NULL;
}

/* dwfl_report_end callback for modules that went away; also used to free
   every index at close. The slot is taken from dwfl_module_info because
   the two callback types disagree on whether they pass it by address. */
static int forget_module(Dwfl_Module *mod, void *slot, const char *name,
                         Dwarf_Addr start, void *arg) {
  void **userdata;
  dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
  free(*userdata);
  *userdata = NULL;
  return 0;
}

static int forget_module_cb(Dwfl_Module *mod, void **userdata,
                            const char *name, Dwarf_Addr start, void *arg) {
  forget_module(mod, userdata, name, start, arg);
  return DWARF_CB_OK;
}

/* ---- modules ------------------------------------------------------------- */

/* ---- which symbols were used (CTRACE_VERBOSE) ------------------------------ */

static void note_used(Dwfl_Module *mod) {
  for (size_t i = 0; i < S.nused; i++)
    if (S.used[i] == mod) return;
  if (S.nused < sizeof S.used / sizeof S.used[0]) S.used[S.nused++] = mod;
}

static bool has_section(Elf *elf, const char *want) {
  size_t shstrndx;
  if (elf == NULL || elf_getshdrstrndx(elf, &shstrndx) != 0) return false;
  for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
    GElf_Shdr sh;
    const char *name;
    if (gelf_getshdr(scn, &sh) && (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
        strcmp(name, want) == 0)
      return true;
  }
  return false;
}

/* Whether report_sources named file already (and, if not, notes it). */
static bool said_before(const char *file) {
  for (size_t i = 0; i < S.nsaid; i++)
    if (strcmp(S.said[i], file) == 0) return true;
  if (S.nsaid < sizeof S.said / sizeof S.said[0]) S.said[S.nsaid++] = strdup(file);
  return false;
}

/* One line per module that named a pc: where its names came from. The
   choice is libdwfl's: DWARF in the file or in a separate debug file
   (build id, .gnu_debuglink), else .symtab, MiniDebugInfo
   (.gnu_debugdata), the dynamic symbols. Before each session ends (the
   modules are libdwfl's), once per file until close: Go's current
   format ends a session with every generation, and closes none (once
   per file and process, then). */
static void report_sources(void) {
  const char *v = ctrace__getenv("CTRACE_VERBOSE");
  if (!v || !*v || strcmp(v, "0") == 0) return;
  for (size_t i = 0; i < S.nused; i++) {
    Dwfl_Module *mod = S.used[i];
    const char *mainfile = NULL, *debugfile = NULL;
    const char *name = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &mainfile, &debugfile);
    GElf_Addr bias;
    Elf *elf = dwfl_module_getelf(mod, &bias);
    char how[PATH_MAX + 64];
    if (debugfile && (!mainfile || strcmp(debugfile, mainfile) != 0))
      snprintf(how, sizeof how, "DWARF from %s (%s)", debugfile,
               strstr(debugfile, "/.build-id/") ? "build id" : ".gnu_debuglink");
    else if (has_section(elf, ".debug_info"))
      snprintf(how, sizeof how, "DWARF in the file");
    else if (has_section(elf, ".symtab"))
      snprintf(how, sizeof how, ".symtab");
    else if (has_section(elf, ".gnu_debugdata"))
      snprintf(how, sizeof how, "MiniDebugInfo (.gnu_debugdata)");
    else
      snprintf(how, sizeof how, "dynamic symbols only");
    const char *file = mainfile ? mainfile : name ? name : "?";
    if (!said_before(file)) fprintf(stderr, "ctrace: symbols of %s: %s\n", file, how);
  }
}

static void end_session(void) {
  report_sources();
  S.nused = 0;
  dwfl_getmodules(S.dwfl, forget_module_cb, NULL, 0);
  dwfl_end(S.dwfl);
  S.dwfl = NULL;
}

/* (Re)reads /proc/self/maps into the session. Modules still mapped at the
   same place are kept by libdwfl with their loaded ELF and DWARF. */
static void report_modules(void) {
  S.reported = true;
  if (S.dwfl == NULL && (S.dwfl = dwfl_begin(&callbacks)) == NULL)
    return;
  /* Counters first: a library loaded while the maps are being read then
     shows up as a change next time, rather than being missed. */
  loader_counters c = read_counters();
  S.counted = c.valid;
  S.adds = c.adds;
  S.subs = c.subs;
  dwfl_report_begin(S.dwfl);
  /* A failure part-way (say, one unreadable file) still leaves the
     modules reported so far, which are worth using. */
  (void)dwfl_linux_proc_report(S.dwfl, getpid());
  if (dwfl_report_end(S.dwfl, forget_module, NULL) != 0)
    end_session();
}

/* A module was unloaded since the last report: another may now sit at its
   addresses, so both the module list and the cached frames are stale. */
static void check_unloads(void) {
  if (!S.reported) {
    report_modules();
    return;
  }
  loader_counters c = read_counters();
  if (c.valid && S.counted && c.subs != S.subs) {
    report_modules();
    cache_clear();
  }
}

/* dwfl_addrmodule (elfutils 0.188) can answer with the module below an
   address that lies past that module's end, in a gap of the map; seen
   with a library dlopen'ed above the highest module reported. Checking
   the bounds turns that into the miss it is. */
static Dwfl_Module *module_at(uintptr_t addr) {
  Dwfl_Module *mod = S.dwfl ? dwfl_addrmodule(S.dwfl, addr) : NULL;
  Dwarf_Addr start, end;
  if (mod == NULL ||
      dwfl_module_info(mod, NULL, &start, &end, NULL, NULL, NULL, NULL) ==
          NULL ||
      addr < start || addr >= end)
    return NULL;
  return mod;
}

/* A PC outside every module may be in a library loaded since the last
   report. Rereading the maps only when the loader added something keeps
   garbage PCs from costing a reread each. */
static Dwfl_Module *find_module(uintptr_t addr) {
  if (S.dwfl == NULL) { /* released (ctrace__symbolize_release) */
    report_modules();
    return module_at(addr);
  }
  Dwfl_Module *mod = module_at(addr);
  if (mod != NULL)
    return mod;
  loader_counters c = read_counters();
  if (c.valid && S.counted && c.adds == S.adds && c.subs == S.subs)
    return NULL;
  report_modules();
  return module_at(addr);
}

/* ---- DWARF --------------------------------------------------------------- */

/* The linkage name is the symbol name (mangled for C++, absent for C);
   the integrate variants follow abstract_origin and specification, which
   is where inlined instances and clones keep their names. */
static const char *die_name(Dwarf_Die *die, bool *bare) {
  Dwarf_Attribute attr;
  const char *name =
      dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
  if (name == NULL)
    name = dwarf_formstring(
        dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
  *bare = name == NULL;
  if (name == NULL)
    name = dwarf_diename(die);
  return name;
}

static const char *comp_dir_of(Dwarf_Die *cu) {
  Dwarf_Attribute attr;
  return dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr));
}

/* Tags whose children may define functions: C++ namespaces and classes. */
static bool holds_functions(int tag) {
  return tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
         tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
         tag == DW_TAG_module;
}

/* Finds the definition of the function containing a among the children of
   parent. Only function DIEs are asked for their ranges: a CU is mostly
   type and variable DIEs, and dwarf_getscopes, which asks every DIE, costs
   tens of microseconds per PC on an ordinary C file. */
static bool find_function(Dwarf_Die *parent, Dwarf_Addr a, Dwarf_Die *fn) {
  Dwarf_Die child;
  if (dwarf_child(parent, &child) != 0)
    return false;
  do {
    int tag = dwarf_tag(&child);
    if (tag == DW_TAG_subprogram && dwarf_haspc(&child, a) == 1) {
      *fn = child;
      return true;
    }
    if (holds_functions(tag) && find_function(&child, a, fn))
      return true;
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

/* Descends from function fn through the scopes containing a to the
   outermost inlined call containing it, if any. A nested function (GNU C)
   on the way is where the frame belongs, so it replaces fn. */
static bool find_inlined_call(Dwarf_Die *fn, Dwarf_Addr a, Dwarf_Die *call) {
  Dwarf_Die scope = *fn, child;
  bool more = dwarf_child(&scope, &child) == 0;
  while (more) {
    int tag = dwarf_tag(&child);
    bool scope_tag = tag == DW_TAG_inlined_subroutine ||
                     tag == DW_TAG_subprogram ||
                     tag == DW_TAG_lexical_block ||
                     tag == DW_TAG_try_block || tag == DW_TAG_catch_block;
    if (scope_tag && dwarf_haspc(&child, a) == 1) {
      if (tag == DW_TAG_inlined_subroutine) {
        *call = child;
        return true;
      }
      if (tag == DW_TAG_subprogram)
        *fn = child;
      scope = child;
      more = dwarf_child(&scope, &child) == 0;
    } else {
      more = dwarf_siblingof(&child, &child) == 0;
    }
  }
  return false;
}

/* The place in the calling function where inlined code was called. */
static void describe_call_site(Dwarf_Die *call, ctrace__frame *out) {
  Dwarf_Attribute attr;
  Dwarf_Word file_idx, line;
  Dwarf_Die cu;
  Dwarf_Files *files;
  size_t nfiles;
  if (dwarf_formudata(dwarf_attr(call, DW_AT_call_line, &attr), &line) == 0 &&
      line != 0 &&
      dwarf_formudata(dwarf_attr(call, DW_AT_call_file, &attr), &file_idx) ==
          0 &&
      dwarf_diecu(call, &cu, NULL, NULL) != NULL &&
      dwarf_getsrcfiles(&cu, &files, &nfiles) == 0 && file_idx < nfiles) {
    out->file = intern_path(dwarf_filesrc(files, file_idx, NULL, NULL),
                            comp_dir_of(&cu));
    out->line = line;
  }
}

/* Fills in what DWARF says about addr: the function owning the frame, and
   the file and line from the line table or, in inlined code, from the
   call site in that function, so that the three agree. */
static void describe_dwarf(Dwfl_Module *mod, uintptr_t addr,
                           ctrace__frame *out, bool *bare) {
  Dwarf_Addr bias;
  Dwarf_Die *cu = find_cu(mod, addr, &bias);
  if (cu == NULL)
    return;
  Dwarf_Addr a = addr - bias;
  Dwarf_Die fn, call;
  if (find_function(cu, a, &fn)) {
    bool inlined = find_inlined_call(&fn, a, &call);
    out->func = intern_func(die_name(&fn, bare));
    if (inlined)
      describe_call_site(&call, out);
  }
  if (out->line != 0)
    return;
  Dwarf_Line *line = dwarf_getsrc_die(cu, a);
  int lineno;
  const char *file;
  if (line != NULL && dwarf_lineno(line, &lineno) == 0 && lineno > 0 &&
      (file = dwarf_linesrc(line, NULL, NULL)) != NULL) {
    out->file = intern_path(file, comp_dir_of(cu));
    out->line = (uint64_t)lineno;
  }
}

/* ---- entry points -------------------------------------------------------- */

/* Functions a stripped program still names: main, whose entry glibc's
   __libc_start_main is handed, and _start, the program's entry point
   (AT_ENTRY), each [entry, end); end 0: unknown. Their ends are found at
   the first frame to name (known_ends), not as the program starts.
   Process-wide, kept by close. */
typedef struct known_fn {
  uintptr_t entry, end;
  const char *name;
} known_fn;
static known_fn known[2];
static bool known_ended;

/* k->end from the object that holds k->entry: where the next function
   begins, the next start in .eh_frame_hdr's sorted table of frame
   descriptions (which a stripped program keeps, for unwinding). Only the
   encodings linkers write: 4-byte pointer and count, and a table of 4-byte
   offsets from the header (DW_EH_PE_datarel | DW_EH_PE_sdata4). */
static int find_end(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  known_fn *k = arg;
  const ElfW(Phdr) *eh = NULL;
  bool holds = false;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + p->p_vaddr;
    if (p->p_type == PT_LOAD && k->entry >= lo && k->entry - lo < p->p_memsz) holds = true;
    if (p->p_type == PT_GNU_EH_FRAME) eh = p;
  }
  if (!holds) return 0;
  const uint8_t *h = eh ? (const uint8_t *)(info->dlpi_addr + eh->p_vaddr) : NULL;
  if (!h || h[0] != 1 || ((h[1] & 0x0f) != 0x03 && (h[1] & 0x0f) != 0x0b) || h[2] != 0x03 || h[3] != 0x3b)
    return 1;
  uint32_t n;
  memcpy(&n, h + 8, 4);
  const uint8_t *t = h + 12;
  size_t lo = 0, hi = n; /* the first entry that starts after k->entry */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int32_t off;
    memcpy(&off, t + 8 * mid, 4);
    if ((uintptr_t)h + (intptr_t)off <= k->entry) lo = mid + 1;
    else hi = mid;
  }
  int32_t at, next;
  if (lo == 0 || lo == n) return 1;
  memcpy(&at, t + 8 * (lo - 1), 4);
  memcpy(&next, t + 8 * lo, 4);
  if ((uintptr_t)h + (intptr_t)at == k->entry) k->end = (uintptr_t)h + (intptr_t)next;
  return 1;
}

void ctrace__symbolize_main(uintptr_t entry) {
  known[0] = (known_fn){entry, 0, "main"};
  known[1] = (known_fn){(uintptr_t)getauxval(AT_ENTRY), 0, "_start"};
  known_ended = false;
}

static void known_ends(void) {
  known_ended = true;
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (known[i].entry) dl_iterate_phdr(find_end, &known[i]);
}

static void resolve(uintptr_t addr, ctrace__frame *out, bool *cacheable) {
  *out = (ctrace__frame){unknown, unknown, 0};
  Dwfl_Module *mod = find_module(addr);
  /* Outside every module the answer can change once a library is loaded
     there, so only frames from known modules are cached. */
  *cacheable = mod != NULL;
  if (mod != NULL) {
    note_used(mod);
    bool bare = false;
    describe_dwarf(mod, addr, out, &bare);
    /* The symbol tables name the nearest symbol before addr; a stripped
       object's code between its exported functions is in none of them,
       and naming it after its neighbour would mislead. Where DWARF gives
       a C++ function only its bare name (a template's method: _M_run),
       a mangled symbol that surely holds addr names it in full; C's
       DWARF names stay (the symbol may be a clone: m1.constprop.0). */
    GElf_Off off;
    GElf_Sym sym;
    const char *name = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
    if (name != NULL && (out->func == unknown ? sym.st_size == 0 || off < sym.st_size
                                              : bare && strncmp(name, "_Z", 2) == 0 && off < sym.st_size))
      out->func = intern_func(name);
  }
  if (out->func == unknown) {
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (dladdr1((void *)addr, &info, (void **)&sym, RTLD_DL_SYMENT) != 0 && info.dli_sname && sym &&
        (sym->st_size == 0 || addr - (uintptr_t)info.dli_saddr < sym->st_size))
      out->func = intern_func(info.dli_sname);
  }
  /* A stripped program's main and _start still have their names: their
     addresses are known, and .eh_frame_hdr bounds them (known). */
  if (out->func == unknown && known[0].entry && !known_ended) known_ends();
  for (size_t i = 0; out->func == unknown && i < sizeof known / sizeof known[0]; i++)
    if (addr >= known[i].entry && addr < known[i].end) out->func = intern_func(known[i].name);
  /* No symbol: the object and the address in it, which addr2line -e and
     objdump read (never "?", which says nothing of where). */
  Dwarf_Addr bias;
  const char *path;
  if (out->func == unknown && mod != NULL && dwfl_module_getelf(mod, &bias) != NULL &&
      (path = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL)) != NULL) {
    const char *base = strrchr(path, '/');
    char buf[64];
    snprintf(buf, sizeof buf, "+0x%llx", (unsigned long long)(addr - bias));
    out->func = intern2(base ? base + 1 : path, buf);
  }
}

void ctrace__symbolize(uintptr_t pc, ctrace__frame *out) {
  /* PC 0 ends some frame-pointer walks; it never names code. */
  if (pc == 0) {
    *out = (ctrace__frame){unknown, unknown, 0};
    return;
  }
  check_unloads();
  const ctrace__frame *hit = cache_find(pc);
  if (hit != NULL) {
    *out = *hit;
    return;
  }
  /* A return address is the instruction after the call, which may belong
     to the next line or, after a noreturn call, the next function. */
  bool cacheable;
  resolve(pc - 1, out, &cacheable);
  if (cacheable)
    cache_add(pc, out);
}

void ctrace__symbolize_release(void) {
  if (S.dwfl != NULL) end_session();
}

/* A fork child's parent's symbolizer, which another thread of the parent
 * may have been inside at the fork: kept as it was and never used, so that
 * the memory the child inherits stays reachable (a leak checker would
 * report it lost) without being freed: the child may not call free here
 * (after _Fork, an allocator lock another thread of the parent held stays
 * held), nor end a session the parent had open (its descriptors' numbers
 * may be the child's own by then). One a level of forks, the last 16. */
static __typeof__(S) inherited[16];
static size_t ninherited;

void ctrace__symbolize_fork_child(void) {
  inherited[ninherited++ % (sizeof inherited / sizeof inherited[0])] = S;
  memset(&S, 0, sizeof S);
}

void ctrace__symbolize_close(void) {
  if (S.dwfl != NULL) end_session();
  for (size_t i = 0; i < S.nsaid; i++) free(S.said[i]);
  for (size_t i = 0; i < S.strs_cap; i++) free(S.strs[i]);
  free(S.strs);
  free(S.cache);
  memset(&S, 0, sizeof S);
}
