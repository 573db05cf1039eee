/* .eh_frame and .debug_frame -> compiled table (table.h).
 *
 * Runs each FDE's call frame program (after its CIE's initial one) and
 * turns every row into a rule of the few shapes the walk knows; anything
 * else (a CFA in another register, a return address not at CFA - 8)
 * becomes RULE_NONE, where the walk stops. The FDEs of .eh_frame are found
 * through .eh_frame_hdr's sorted table where its encoding is the usual
 * one, else by scanning .eh_frame up to its terminator; .debug_frame is
 * scanned whole.
 *
 * .debug_frame (elf.c reads it from the object's file or its separate
 * debug file) is the same format with other conventions: CIE id
 * 0xffffffff (all ones in 64-bit DWARF) where .eh_frame has 0, an FDE's
 * CIE pointer an offset from the section's start where .eh_frame has one
 * back from the field, version 4 CIEs with address and segment sizes, and
 * addresses absolute, at link time. Its FDEs describe only functions no
 * .eh_frame FDE covers (code built -fno-asynchronous-unwind-tables has no
 * .eh_frame; both are written for one function only by mistake).
 *
 * Reads only the object's own mapped memory and the buffer elf.c filled,
 * every read checked against the segment or buffer holding it, since
 * malformed CFI must not fault the traced program. Every row lies in the
 * object's text. Allocates with mmap only (see table.h).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "unwind/table.h"

/* ---- memory --------------------------------------------------------------- */

typedef struct vec {
  uint64_t *v; /* pc << 32 | rule */
  size_t n, cap;
} vec;

static void *map(size_t n) {
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static bool vec_push(vec *v, uint64_t x) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 8192;
    uint64_t *nv = map(cap * sizeof *nv);
    if (!nv) return false;
    if (v->n) memcpy(nv, v->v, v->n * sizeof *nv);
    if (v->v) munmap(v->v, v->cap * sizeof *nv);
    v->v = nv;
    v->cap = cap;
  }
  v->v[v->n++] = x;
  return true;
}

/* Heapsort: qsort may call malloc (glibc's merge sort buffer). */
static void sift(uint64_t *a, size_t i, size_t n) {
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) return;
    if (c + 1 < n && a[c + 1] > a[c]) c++;
    if (a[i] >= a[c]) return;
    uint64_t t = a[i];
    a[i] = a[c];
    a[c] = t;
    i = c;
  }
}

static void sort_u64(uint64_t *a, size_t n) {
  /* Rows arrive nearly sorted (FDEs in address order); check first. */
  size_t i = 1;
  while (i < n && a[i - 1] <= a[i]) i++;
  if (i >= n) return;
  for (size_t k = n / 2; k-- > 0;) sift(a, k, n);
  for (size_t k = n; k-- > 1;) {
    uint64_t t = a[0];
    a[0] = a[k];
    a[k] = t;
    sift(a, 0, k);
  }
}

/* ---- reading -------------------------------------------------------------- */

typedef struct rd {
  const uint8_t *p, *end;
  bool bad;
} rd;

static bool need(rd *r, size_t n) {
  if (r->bad || (size_t)(r->end - r->p) < n) {
    r->bad = true;
    return false;
  }
  return true;
}

static uint64_t u8(rd *r) { return need(r, 1) ? *r->p++ : 0; }

static uint64_t un(rd *r, size_t n) {
  if (!need(r, n)) return 0;
  uint64_t v = 0;
  memcpy(&v, r->p, n); /* little endian */
  r->p += n;
  return v;
}

static int64_t sn(rd *r, size_t n) {
  uint64_t v = un(r, n);
  unsigned sh = 64 - 8 * (unsigned)n;
  return (int64_t)(v << sh) >> sh;
}

static uint64_t uleb(rd *r) {
  uint64_t v = 0;
  for (unsigned sh = 0; need(r, 1); sh += 7) {
    uint8_t b = *r->p++;
    if (sh < 64) v |= (uint64_t)(b & 0x7f) << sh;
    if (!(b & 0x80)) return v;
  }
  return 0;
}

static int64_t sleb(rd *r) {
  uint64_t v = 0;
  unsigned sh = 0;
  uint8_t b = 0x80;
  while (need(r, 1)) {
    b = *r->p++;
    if (sh < 64) v |= (uint64_t)(b & 0x7f) << sh;
    sh += 7;
    if (!(b & 0x80)) break;
  }
  if (sh < 64 && (b & 0x40)) v |= ~(uint64_t)0 << sh;
  return (int64_t)v;
}

enum {
  PE_absptr = 0x00, PE_uleb128 = 0x01, PE_udata2 = 0x02, PE_udata4 = 0x03, PE_udata8 = 0x04,
  PE_sleb128 = 0x09, PE_sdata2 = 0x0a, PE_sdata4 = 0x0b, PE_sdata8 = 0x0c,
  PE_pcrel = 0x10, PE_datarel = 0x30, PE_indirect = 0x80, PE_omit = 0xff,
};

/* A pointer in encoding enc; datarel is relative to data. Indirect
 * pointers (personality routines) are skipped, never followed: value 0. */
static uintptr_t ptr(rd *r, uint8_t enc, uintptr_t data) {
  if (enc == PE_omit) return 0;
  uintptr_t at = (uintptr_t)r->p, v;
  switch (enc & 0x0f) {
  case PE_absptr: v = (uintptr_t)un(r, 8); break;
  case PE_uleb128: v = (uintptr_t)uleb(r); break;
  case PE_udata2: v = (uintptr_t)un(r, 2); break;
  case PE_udata4: v = (uintptr_t)un(r, 4); break;
  case PE_udata8: v = (uintptr_t)un(r, 8); break;
  case PE_sleb128: v = (uintptr_t)sleb(r); break;
  case PE_sdata2: v = (uintptr_t)sn(r, 2); break;
  case PE_sdata4: v = (uintptr_t)sn(r, 4); break;
  case PE_sdata8: v = (uintptr_t)sn(r, 8); break;
  default: r->bad = true; return 0;
  }
  if (v == 0 && (enc & 0x70) == 0) return 0;
  switch (enc & 0x70) {
  case 0: break;
  case PE_pcrel: v += at; break;
  case PE_datarel: v += data; break;
  default: r->bad = true; return 0;
  }
  return (enc & PE_indirect) ? 0 : v;
}

/* ---- CIEs ----------------------------------------------------------------- */

typedef struct cie {
  uint64_t code_align;
  int64_t data_align;
  uint64_t ra_reg;
  uint8_t fde_enc;
  bool aug_z, signal;
  const uint8_t *insns, *insns_end;
} cie;

/* Reads the record at p: *body and *end delimit what follows its length,
 * *wide tells 64-bit DWARF (an 8-byte length, and in .debug_frame 8-byte
 * CIE ids and pointers); returns false at the terminator or when it does
 * not fit. */
static bool record(const uint8_t *p, const uint8_t *limit, const uint8_t **body,
                   const uint8_t **end, bool *wide) {
  rd r = {p, limit, false};
  uint64_t len = un(&r, 4);
  *wide = len == 0xffffffffu;
  if (*wide) len = un(&r, 8);
  if (r.bad || len == 0 || len > (uint64_t)(limit - r.p)) return false;
  *body = r.p;
  *end = r.p + len;
  return true;
}

/* Which section a record is in. */
typedef struct section {
  const uint8_t *lo, *hi;
  bool debug; /* .debug_frame: ids and pointers as above, link-time addresses */
} section;

/* The CIE id field of a record (or an FDE's CIE pointer). */
static uint64_t cie_field(rd *r, const section *sec, bool wide) {
  return un(r, sec->debug && wide ? 8 : 4);
}

static bool is_cie_id(uint64_t id, const section *sec, bool wide) {
  if (!sec->debug) return id == 0;
  return wide ? id == UINT64_MAX : id == 0xffffffffu;
}

static bool parse_cie(const uint8_t *p, const section *sec, cie *c) {
  const uint8_t *body, *end;
  bool wide;
  if (!record(p, sec->hi, &body, &end, &wide)) return false;
  rd r = {body, end, false};
  if (!is_cie_id(cie_field(&r, sec, wide), sec, wide)) return false;
  uint8_t version = (uint8_t)u8(&r);
  if (version != 1 && version != 3 && !(sec->debug && version == 4)) return false;
  const char *aug = (const char *)r.p;
  size_t alen = strnlen(aug, (size_t)(end - r.p));
  if (alen == (size_t)(end - r.p)) return false;
  r.p += alen + 1;
  if (aug[0] == 'e' && aug[1] == 'h') un(&r, 8); /* old GCC's eh_data */
  *c = (cie){0};
  c->fde_enc = PE_absptr;
  if (version == 4) {
    /* address_size, segment_selector_size: 8-byte addresses, no segments. */
    if (u8(&r) != 8 || u8(&r) != 0) return false;
  }
  c->code_align = uleb(&r);
  c->data_align = sleb(&r);
  c->ra_reg = version == 1 ? u8(&r) : uleb(&r);
  const uint8_t *aug_end = NULL;
  for (const char *a = aug; *a && !r.bad; a++) {
    switch (*a) {
    case 'z': {
      uint64_t n = uleb(&r);
      if (!need(&r, n)) return false;
      aug_end = r.p + n;
      c->aug_z = true;
      break;
    }
    case 'R': c->fde_enc = (uint8_t)u8(&r); break;
    case 'L': u8(&r); break;
    case 'P': ptr(&r, (uint8_t)u8(&r), 0); break;
    case 'S': c->signal = true; break;
    case 'e': a++; break; /* "eh" */
    case 'B': break;
    default:
      /* Unknown augmentation: only skippable with 'z'. */
      if (!aug_end) return false;
      r.p = aug_end;
      goto done;
    }
  }
done:
  if (aug_end) r.p = aug_end;
  if (r.bad) return false;
  /* Addresses relative to where .debug_frame was read would mean nothing. */
  if (sec->debug && (c->fde_enc & 0x70) != 0) return false;
  c->insns = r.p;
  c->insns_end = end;
  return true;
}

/* ---- running a frame program ------------------------------------------------ */

enum { REG_RBP = 6, REG_RSP = 7, REG_RA = 16 };
enum { CFA_REG, CFA_PLT, CFA_OTHER };
enum { R_SAME, R_OFFSET, R_UNDEF, R_OTHER };

typedef struct frame_state {
  uint8_t cfa_kind, cfa_reg;
  int64_t cfa_off;
  uint8_t plt_thr;
  uint8_t rbp, ra; /* R_* */
  int64_t rbp_off, ra_off;
} frame_state;

/* What an FDE's rows say about frame pointers: has_frame, it moves the
 * stack; rbp_frame, some row is CFA = RBP + 16 with RBP saved at CFA - 16;
 * plt, it describes PLT stubs (which push before a jump, frame pointers
 * or not: not counted). */
typedef struct fde_stats {
  bool has_frame, rbp_frame, plt;
} fde_stats;

static uint32_t to_rule(const frame_state *s, fde_stats *st) {
  if (s->ra == R_UNDEF) return RULE(RULE_END, 0, 0);
  if (s->ra != R_OFFSET || s->ra_off != -8) return RULE_NONE;
  uint32_t slot;
  if (s->rbp == R_SAME)
    slot = 0;
  else if (s->rbp == R_OFFSET && s->rbp_off < 0 && s->rbp_off >= -8 * 30 && s->rbp_off % 8 == 0)
    slot = (uint32_t)(-s->rbp_off / 8);
  else
    slot = RBP_LOST;
  if (s->cfa_kind == CFA_PLT) st->plt = true;
  if (s->cfa_kind == CFA_PLT)
    return s->cfa_off >= 0 && s->cfa_off <= 64 ? RULE(RULE_PLT, s->plt_thr & 31, s->cfa_off)
                                               : RULE_NONE;
  if (s->cfa_kind != CFA_REG || s->cfa_off < 8 || s->cfa_off > RULE_MAX_OFF || s->cfa_off % 8)
    return RULE_NONE;
  /* A saved RBP below the stack pointer: in an epilogue after `leave` or
   * `pop %rbp`, which GCC does not follow with a rule for RBP, so the
   * register holds the caller's value again (table.h). */
  if (slot != RBP_LOST && 8 * (int64_t)slot > s->cfa_off) slot = 0;
  if (s->cfa_reg == REG_RSP) {
    if (s->cfa_off > 8) st->has_frame = true;
    return RULE(RULE_RSP, slot, s->cfa_off);
  }
  if (s->cfa_reg == REG_RBP) {
    st->has_frame = true;
    if (s->cfa_off == 16 && slot == 2) st->rbp_frame = true;
    return RULE(RULE_RBP, slot, s->cfa_off);
  }
  return RULE_NONE;
}

/* The PLT's CFA, as GNU ld and lld write it for .plt:
 *   DW_OP_breg7 (rsp) N; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and;
 *   DW_OP_litT; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
 * i.e. CFA = rsp + N + ((rip & 15) >= T) * 8: the first instructions of a
 * 16-byte entry run before its push. */
static bool plt_expr(const uint8_t *e, size_t n, frame_state *s) {
  rd r = {e, e + n, false};
  if (u8(&r) != 0x77) return false; /* breg7 */
  int64_t off = sleb(&r);
  if (u8(&r) != 0x80 || sleb(&r) != 0) return false; /* breg16 0 */
  if (u8(&r) != 0x3f || u8(&r) != 0x1a) return false; /* lit15 and */
  uint64_t lit = u8(&r);
  if (lit < 0x30 || lit > 0x4f) return false;
  if (u8(&r) != 0x2a || u8(&r) != 0x33 || u8(&r) != 0x24 || u8(&r) != 0x22) return false;
  if (r.bad || r.p != r.end) return false;
  s->cfa_kind = CFA_PLT;
  s->cfa_off = off;
  s->plt_thr = (uint8_t)(lit - 0x30);
  return true;
}

typedef struct emitter {
  vec *rows;
  uintptr_t bias;     /* subtracted from the section's addresses: 0 for .debug_frame */
  uintptr_t text_lo, text_hi; /* the object's text, link-time */
  vec *covered;       /* .eh_frame's FDEs, start << 32 | end, link-time */
  bool skip_covered;  /* leave out FDEs that overlap those */
  fde_stats st;
  bool oom;
  /* The last CIE and the state after its initial instructions: most
   * objects have one or two CIEs for thousands of FDEs. */
  const uint8_t *cie_at;
  cie cie;
  frame_state cie_state;
} emitter;

/* Rows outside the object's text are left out, and one past its end
 * becomes "no rule", so that a table never answers for another object's
 * pc (the walk trusts it to stay in the object: unwind.c, wobj). */
static void emit(emitter *em, uintptr_t pc, uint32_t rule) {
  uintptr_t a = pc - em->bias;
  if (a < em->text_lo) return;
  if (a > em->text_hi) {
    a = em->text_hi;
    rule = RULE_NONE;
  }
  if (a > UINT32_MAX) return; /* objects above 4 GiB of link addresses: not covered */
  if (!vec_push(em->rows, (uint64_t)a << 32 | rule)) em->oom = true;
}

/* Whether [lo, hi) (link-time) overlaps an .eh_frame FDE: em->covered
 * holds, sorted by start, each FDE's start and the greatest end of it and
 * those before it (compile_debug), so the last starting below hi tells. */
static bool covered(const emitter *em, uint64_t lo, uint64_t hi) {
  const uint64_t *v = em->covered->v;
  size_t a = 0, b = em->covered->n;
  while (a < b) { /* first starting at or after hi */
    size_t m = a + (b - a) / 2;
    if (v[m] >> 32 < hi) a = m + 1; else b = m;
  }
  return a > 0 && (v[a - 1] & 0xffffffffu) > lo;
}

#define MAX_REMEMBER 8

/* Runs insns from state s (which holds the CIE's initial rules in *init
 * for DW_CFA_restore), emitting a row at every advance when em is set. */
static bool run(const cie *c, const uint8_t *insns, const uint8_t *end, frame_state *s,
                const frame_state *init, uintptr_t *loc, uintptr_t loc_end, emitter *em) {
  frame_state stack[MAX_REMEMBER];
  int depth = 0;
  rd r = {insns, end, false};
  while (r.p < r.end && !r.bad) {
    uint8_t op = (uint8_t)u8(&r);
    uint64_t reg = 0, adv = 0;
    int64_t off = 0;
    bool advance = false, set_loc = false;
    uintptr_t new_loc = 0;
    switch (op >> 6) {
    case 1: adv = op & 0x3f; advance = true; break;
    case 2: reg = op & 0x3f; off = (int64_t)uleb(&r) * c->data_align; goto offset;
    case 3: reg = op & 0x3f; goto restore;
    default: break;
    }
    if (op >> 6) goto next;
    switch (op) {
    case 0x00: break; /* nop */
    case 0x01: new_loc = ptr(&r, c->fde_enc, 0); set_loc = true; break;
    case 0x02: adv = un(&r, 1); advance = true; break;
    case 0x03: adv = un(&r, 2); advance = true; break;
    case 0x04: adv = un(&r, 4); advance = true; break;
    case 0x05: reg = uleb(&r); off = (int64_t)uleb(&r) * c->data_align; goto offset;
    case 0x06: reg = uleb(&r); goto restore;
    case 0x07: /* undefined */
      reg = uleb(&r);
      if (reg == REG_RA) s->ra = R_UNDEF;
      if (reg == REG_RBP) s->rbp = R_OTHER;
      break;
    case 0x08: /* same_value */
      reg = uleb(&r);
      if (reg == REG_RBP) s->rbp = R_SAME;
      if (reg == REG_RA) s->ra = R_OTHER;
      break;
    case 0x09: /* register */
      reg = uleb(&r);
      uleb(&r);
      goto other;
    case 0x0a:
      if (depth == MAX_REMEMBER) return false;
      stack[depth++] = *s;
      break;
    case 0x0b:
      if (depth == 0) return false;
      {
        /* The CFA is not part of the remembered state in some
         * producers' reading of DWARF, but GCC and LLVM both restore it:
         * follow them. */
        *s = stack[--depth];
      }
      break;
    case 0x0c: /* def_cfa */
      s->cfa_kind = CFA_REG;
      s->cfa_reg = (uint8_t)uleb(&r);
      s->cfa_off = (int64_t)uleb(&r);
      break;
    case 0x0d: s->cfa_reg = (uint8_t)uleb(&r); if (s->cfa_kind != CFA_REG) s->cfa_kind = CFA_OTHER; break;
    case 0x0e: s->cfa_off = (int64_t)uleb(&r); break;
    case 0x0f: { /* def_cfa_expression */
      uint64_t n = uleb(&r);
      if (!need(&r, n)) return false;
      if (!plt_expr(r.p, n, s)) s->cfa_kind = CFA_OTHER;
      r.p += n;
      break;
    }
    case 0x10: /* expression */
    case 0x16: { /* val_expression */
      reg = uleb(&r);
      uint64_t n = uleb(&r);
      if (!need(&r, n)) return false;
      r.p += n;
      goto other;
    }
    case 0x11: reg = uleb(&r); off = sleb(&r) * c->data_align; goto offset;
    case 0x12:
      s->cfa_kind = CFA_REG;
      s->cfa_reg = (uint8_t)uleb(&r);
      s->cfa_off = sleb(&r) * c->data_align;
      break;
    case 0x13: s->cfa_off = sleb(&r) * c->data_align; break;
    case 0x14: reg = uleb(&r); uleb(&r); goto other; /* val_offset */
    case 0x15: reg = uleb(&r); sleb(&r); goto other;
    case 0x2e: uleb(&r); break; /* GNU_args_size */
    case 0x2f: reg = uleb(&r); off = -(int64_t)uleb(&r) * c->data_align; goto offset;
    default: return false; /* unknown opcode: its operands cannot be skipped */
    }
    goto next;
  offset:
    if (reg == REG_RBP) { s->rbp = R_OFFSET; s->rbp_off = off; }
    if (reg == REG_RA) { s->ra = R_OFFSET; s->ra_off = off; }
    goto next;
  restore:
    if (reg == REG_RBP) { s->rbp = init->rbp; s->rbp_off = init->rbp_off; }
    if (reg == REG_RA) { s->ra = init->ra; s->ra_off = init->ra_off; }
    goto next;
  other:
    if (reg == REG_RBP) s->rbp = R_OTHER;
    if (reg == REG_RA) s->ra = R_OTHER;
  next:
    if (advance || set_loc) {
      uintptr_t to = set_loc ? new_loc : *loc + adv * c->code_align;
      if (to < *loc) return false;
      if (to > loc_end) to = loc_end;
      if (em && to > *loc) {
        emit(em, *loc, to_rule(s, &em->st));
      }
      *loc = to;
    }
  }
  return !r.bad;
}

/* Compiles one FDE at p into rows. Returns false when the record cannot
 * be read, or is a CIE (the caller skips it). */
static bool compile_fde(const uint8_t *p, const section *sec, emitter *em) {
  const uint8_t *body, *end;
  bool wide;
  if (!record(p, sec->hi, &body, &end, &wide)) return false;
  rd r = {body, end, false};
  uint64_t cie_ptr = cie_field(&r, sec, wide);
  if (r.bad || is_cie_id(cie_ptr, sec, wide)) return false; /* a CIE, not an FDE */
  /* .eh_frame: back from the field; .debug_frame: from the section's start. */
  const uint8_t *cp;
  if (sec->debug) {
    if (cie_ptr >= (uint64_t)(sec->hi - sec->lo)) return false;
    cp = sec->lo + cie_ptr;
  } else {
    if (cie_ptr > (uint64_t)(body - sec->lo)) return false;
    cp = body - cie_ptr;
  }
  if (cp != em->cie_at) {
    em->cie_at = NULL;
    if (!parse_cie(cp, sec, &em->cie)) return false;
    frame_state s0 = {CFA_OTHER, 0, 0, 0, R_SAME, R_SAME, 0, 0};
    uintptr_t loc0 = 0;
    if (!run(&em->cie, em->cie.insns, em->cie.insns_end, &s0, &s0, &loc0, UINTPTR_MAX, NULL))
      return false;
    em->cie_state = s0;
    em->cie_at = cp;
  }
  const cie c = em->cie;
  uintptr_t start = ptr(&r, c.fde_enc, 0);
  uintptr_t range = ptr(&r, c.fde_enc & 0x0f, 0);
  if (c.aug_z) {
    uint64_t n = uleb(&r);
    if (!need(&r, n)) return false;
    r.p += n;
  }
  if (r.bad || start == 0 || range == 0 || start + range < start) return false;
  uintptr_t stop = start + range;
  em->st = (fde_stats){false, false, false};
  uint64_t lo = start - em->bias, hi = stop - em->bias;
  if (em->skip_covered && covered(em, lo, hi)) return false;
  if (em->covered && !em->skip_covered && lo <= UINT32_MAX && hi <= UINT32_MAX &&
      !vec_push(em->covered, lo << 32 | hi))
    em->oom = true;
  if (c.signal) {
    emit(em, start, RULE(RULE_SIGNAL, 0, 0));
  } else {
    frame_state s = em->cie_state, init = em->cie_state;
    uintptr_t loc = start;
    if (!run(&c, r.p, end, &s, &init, &loc, stop, em)) {
      /* What was emitted stands; the rest of the function has no rule. */
      s.cfa_kind = CFA_OTHER;
    }
    if (loc < stop) emit(em, loc, to_rule(&s, &em->st));
  }
  /* End of the function: no rule until another FDE says otherwise (the
   * sort puts a real row at the same pc after this one). */
  emit(em, stop, RULE_NONE);
  return true;
}

/* ---- the table -------------------------------------------------------------- */

/* Compiles every FDE of .eh_frame, found through .eh_frame_hdr at hdr
 * when its table is usable, else by scanning. Returns false when hdr
 * cannot be read. */
static bool compile_eh(const uint8_t *hdr, uintptr_t seg_lo, uintptr_t seg_hi, emitter *em,
                       size_t *fdes, size_t *plain) {
  if ((uintptr_t)hdr < seg_lo || (uintptr_t)hdr + 4 > seg_hi) return false;
  rd r = {hdr, (const uint8_t *)seg_hi, false};
  if (u8(&r) != 1) return false;
  uint8_t eh_enc = (uint8_t)u8(&r), count_enc = (uint8_t)u8(&r), tab_enc = (uint8_t)u8(&r);
  uintptr_t eh = ptr(&r, eh_enc, (uintptr_t)hdr);
  uintptr_t count = ptr(&r, count_enc, (uintptr_t)hdr);
  if (r.bad || eh < seg_lo || eh >= seg_hi) return false;
  section sec = {(const uint8_t *)seg_lo, (const uint8_t *)seg_hi, false};
  if (tab_enc == (PE_datarel | PE_sdata4) && count_enc != PE_omit &&
      count <= (seg_hi - (uintptr_t)r.p) / 8) {
    for (uintptr_t i = 0; i < count && !em->oom; i++) {
      int32_t fo;
      memcpy(&fo, r.p + 8 * i + 4, 4);
      const uint8_t *f = hdr + fo;
      if ((uintptr_t)f < seg_lo || (uintptr_t)f >= seg_hi) continue;
      if (compile_fde(f, &sec, em) && em->st.has_frame && !em->st.plt) {
        (*fdes)++;
        *plain += !em->st.rbp_frame;
      }
    }
  } else {
    /* No usable search table: walk .eh_frame up to its terminator. */
    const uint8_t *p = (const uint8_t *)eh, *body, *end;
    bool wide;
    while (!em->oom && record(p, (const uint8_t *)seg_hi, &body, &end, &wide)) {
      if (compile_fde(p, &sec, em) && em->st.has_frame && !em->st.plt) {
        (*fdes)++;
        *plain += !em->st.rbp_frame;
      }
      p = end;
    }
  }
  return true;
}

/* Compiles the FDEs of .debug_frame (dbg, len bytes) that no .eh_frame FDE
 * covers. Returns how many. */
static uint32_t compile_debug(const uint8_t *dbg, size_t len, emitter *em, size_t *fdes,
                              size_t *plain) {
  uint32_t used = 0;
  section sec = {dbg, dbg + len, true};
  uint64_t *v = em->covered->v, reach = 0;
  sort_u64(v, em->covered->n);
  for (size_t i = 0; i < em->covered->n; i++) {
    if ((v[i] & 0xffffffffu) > reach) reach = v[i] & 0xffffffffu;
    v[i] = (v[i] >> 32) << 32 | reach;
  }
  em->skip_covered = true;
  em->bias = 0;
  em->cie_at = NULL;
  const uint8_t *p = dbg, *body, *end;
  bool wide;
  while (!em->oom && record(p, sec.hi, &body, &end, &wide)) {
    if (compile_fde(p, &sec, em)) {
      used++;
      if (em->st.has_frame && !em->st.plt) {
        (*fdes)++;
        *plain += !em->st.rbp_frame;
      }
    }
    p = end;
  }
  return used;
}

ctrace__unw_table *ctrace__unw_compile(const ctrace__unw_src *src, uint64_t key) {
  vec rows = {0}, cover = {0};
  emitter em = {&rows, src->bias, src->text_lo, src->text_hi,
                src->debug_frame ? &cover : NULL, false, {false, false, false}, false,
                NULL, {0}, {0}};
  size_t fdes = 0, plain = 0; /* FDEs with a frame, of which without RBP */
  uint32_t debug_fdes = 0;
  if (src->hdr) compile_eh(src->hdr, src->seg_lo, src->seg_hi, &em, &fdes, &plain);
  if (src->debug_frame && !em.oom)
    debug_fdes = compile_debug(src->debug_frame, src->debug_frame_len, &em, &fdes, &plain);
  ctrace__unw_table *t = NULL;
  if (em.oom || rows.n == 0) goto out;
  sort_u64(rows.v, rows.n);
  /* One row per pc (the last wins: a function's start over the previous
   * one's end), then merge runs with the same rule. */
  size_t n = 0;
  for (size_t i = 0; i < rows.n; i++) {
    if (i + 1 < rows.n && rows.v[i + 1] >> 32 == rows.v[i] >> 32) continue;
    if (n > 0 && (uint32_t)rows.v[n - 1] == (uint32_t)rows.v[i]) continue;
    rows.v[n++] = rows.v[i];
  }
  uintptr_t lo = rows.v[0] >> 32, hi = rows.v[n - 1] >> 32;
  if (hi <= lo) goto out;
  uint32_t npages = (uint32_t)(((hi - lo - 1) >> TABLE_PAGE_SHIFT) + 1);
  /* The cache: about one slot per two rows, 64 to 4096. */
  uint32_t cache_bits = 6;
  while (cache_bits < 12 && (1u << cache_bits) < n / 2) cache_bits++;
  size_t size = sizeof *t + ((size_t)1 << cache_bits) * sizeof(uint64_t) +
                (npages + 1 + 2 * n) * sizeof(uint32_t);
  t = map(size); /* zeroed: every cache slot empty (offset ~0 is never looked up) */
  if (!t) goto out;
  _Atomic uint64_t *cache = (_Atomic uint64_t *)(t + 1);
  uint32_t *page = (uint32_t *)(cache + ((size_t)1 << cache_bits)), *pc = page + npages + 1,
           *rule = pc + n;
  for (size_t i = 0; i < n; i++) {
    pc[i] = (uint32_t)((rows.v[i] >> 32) - lo);
    rule[i] = (uint32_t)rows.v[i];
  }
  size_t j = 0;
  for (uint32_t p = 0; p <= npages; p++) {
    uint64_t at = (uint64_t)p << TABLE_PAGE_SHIFT;
    while (j + 1 < n && pc[j + 1] <= at) j++;
    page[p] = (uint32_t)j;
  }
  *t = (ctrace__unw_table){key, lo, hi, (uint32_t)n, npages, fdes > 0 && plain == 0,
                           page, pc, rule, cache, (1u << cache_bits) - 1, size, debug_fdes, 0, NULL, NULL};
out:
  if (rows.v) munmap(rows.v, rows.cap * sizeof *rows.v);
  if (cover.v) munmap(cover.v, cover.cap * sizeof *cover.v);
  return t;
}
