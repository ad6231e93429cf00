/*
 * unwind.c - the recorder's own stack walk (see unwind.h): DWARF call-frame
 * information reduced to per-address rules, cached; each thread's last walk
 * remembered, and a walk that reaches a frame of it whose words still hold
 * what they held takes the rest from it.
 *
 * Flow: mf_unwind_walk captures rip, rsp and rbp where it stands, then
 * steps frame by frame.  A step needs the rule of the frame's address:
 * looked up in a lock-free table, or made from the module's .eh_frame (the
 * FDE found by binary search in .eh_frame_hdr, its CIE's and its own CFA
 * instructions run up to the address) and added.  Before each step the
 * frame is looked up in the thread's last walk by its stack pointer; when
 * its address and stack pointer match and the last walk's remembered words
 * from there on are unchanged (return addresses, saved rbp values that a
 * frame's CFA depended on, the zero that ended the stack), the rest of the
 * walk is the last walk's.  x86-64 only; elsewhere every walk gives up.
 */
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#include "unwind.h"

#if defined(__x86_64__)

#define DW_REG_RBP 6
#define DW_REG_RSP 7
#define DW_REG_RA 16
#define RULES 32768                  /* cached address rules (a power of two) */
#define STATE_STACK 8                /* DW_CFA_remember_state depth */
#define STACK_SPAN ((uint64_t)1 << 30) /* words read lie within this above rsp */

enum { RULE_SP = 1, RULE_BP = 2, RULE_END = 3, RULE_NONE = 4 };

/* How to step out of a frame whose code is at one address. */
typedef struct frame_rule {
    int32_t cfa_off;                 /* CFA = (rsp or rbp) + cfa_off */
    int16_t ra_off;                  /* return address at CFA + ra_off */
    int16_t bp_off;                  /* caller's rbp at CFA + bp_off, if bp_saved */
    uint8_t kind;                    /* RULE_*: NONE = this walker cannot */
    uint8_t bp_saved;
    uint16_t reserved;
} frame_rule;

typedef struct rule_entry {
    uint64_t key;                    /* address + 1; 0 empty; BUSY being written */
    uint32_t gen;                    /* code generation it was made in */
    uint32_t reserved;
    frame_rule rule;
} rule_entry;

#define BUSY UINT64_MAX

static rule_entry *rules;            /* RULES entries, mmap'd on first use */
static uint32_t code_gen = 1;        /* moves on when code is unloaded */

void mf_unwind_code_changed(void)
{
    __atomic_add_fetch(&code_gen, 1, __ATOMIC_RELEASE);
}

/* ---- reading .eh_frame ------------------------------------------------- */

enum {
    PE_OMIT = 0xff, PE_ABSPTR = 0x00, PE_ULEB128 = 0x01, PE_UDATA2 = 0x02, PE_UDATA4 = 0x03,
    PE_UDATA8 = 0x04, PE_SLEB128 = 0x09, PE_SDATA2 = 0x0a, PE_SDATA4 = 0x0b, PE_SDATA8 = 0x0c,
    PE_PCREL = 0x10, PE_DATAREL = 0x30, PE_INDIRECT = 0x80
};

/* A bounded reader over bytes the loader mapped. */
typedef struct reader {
    const uint8_t *p, *end;
    int bad;
} reader;

static uint8_t u8(reader *r)
{
    if (r->p >= r->end) {
        r->bad = 1;
        return 0;
    }
    return *r->p++;
}

static uint64_t fixed(reader *r, size_t n)
{
    uint64_t v = 0;
    if ((size_t)(r->end - r->p) < n) {
        r->bad = 1;
        return 0;
    }
    memcpy(&v, r->p, n);
    r->p += n;
    return v;
}

static uint64_t uleb(reader *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        uint8_t b = u8(r);
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    r->bad = 1;
    return v;
}

static int64_t sleb(reader *r)
{
    int64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        b = u8(r);
        v |= (int64_t)(b & 0x7f) << shift;
        shift += 7;
    } while ((b & 0x80) && shift < 64);
    if (shift < 64 && (b & 0x40))
        v |= -((int64_t)1 << shift);
    return v;
}

/* A pointer in encoding enc; datarel is relative to data_base.  Indirect
 * pointers are not followed (only the personality is one; it is skipped). */
static uint64_t encoded(reader *r, uint8_t enc, uint64_t data_base)
{
    uint64_t at = (uint64_t)(uintptr_t)r->p, v;
    switch (enc & 0x0f) {
    case PE_ABSPTR: v = fixed(r, 8); break;
    case PE_ULEB128: v = uleb(r); break;
    case PE_UDATA2: v = fixed(r, 2); break;
    case PE_UDATA4: v = fixed(r, 4); break;
    case PE_UDATA8: v = fixed(r, 8); break;
    case PE_SLEB128: v = (uint64_t)sleb(r); break;
    case PE_SDATA2: v = (uint64_t)(int64_t)(int16_t)fixed(r, 2); break;
    case PE_SDATA4: v = (uint64_t)(int64_t)(int32_t)fixed(r, 4); break;
    case PE_SDATA8: v = fixed(r, 8); break;
    default: r->bad = 1; return 0;
    }
    switch (enc & 0x70) {
    case 0: break;
    case PE_PCREL: v += at; break;
    case PE_DATAREL: v += data_base; break;
    default: r->bad = 1; break;
    }
    return v;
}

/* The rules being built by the CFA instructions. */
typedef struct cfa_state {
    uint8_t cfa_reg;                 /* DW_REG_RSP or DW_REG_RBP; other: cannot */
    int64_t cfa_off;
    uint8_t ra_how, bp_how;          /* HOW_* */
    int64_t ra_off, bp_off;
} cfa_state;

enum { HOW_SAME = 0, HOW_OFFSET = 1, HOW_UNDEFINED = 2, HOW_OTHER = 3 };

typedef struct cie_info {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    int signal_frame, has_z;
    const uint8_t *insns, *insns_end;
} cie_info;

static void set_reg(cfa_state *s, uint64_t reg, uint8_t how, int64_t off)
{
    if (reg == DW_REG_RA) {
        s->ra_how = how;
        s->ra_off = off;
    } else if (reg == DW_REG_RBP) {
        s->bp_how = how;
        s->bp_off = off;
    } else if (reg == DW_REG_RSP && how != HOW_SAME) {
        s->cfa_reg = 0xff; /* rsp restored other than as the CFA: not handled */
    }
}

/*
 * Run CFA instructions [p, end) from code address loc until it passes
 * target.  init is the state after the CIE's instructions (for
 * DW_CFA_restore).  Returns 0, or -1 on an instruction this walker does not
 * handle for the registers it follows.
 */
static int run_cfa(cfa_state *s, const cfa_state *init, const cie_info *cie, const uint8_t *p,
                   const uint8_t *end, uint64_t loc, uint64_t target, uint64_t data_base)
{
    cfa_state saved[STATE_STACK];
    unsigned depth = 0;
    reader r = { p, end, 0 };
    while (r.p < r.end && !r.bad) {
        uint8_t op = u8(&r);
        uint64_t reg, delta = 0;
        switch (op >> 6) {
        case 1: /* DW_CFA_advance_loc */
            delta = (op & 0x3f) * cie->code_align;
            break;
        case 2: /* DW_CFA_offset */
            set_reg(s, op & 0x3f, HOW_OFFSET, (int64_t)uleb(&r) * cie->data_align);
            continue;
        case 3: /* DW_CFA_restore */
            reg = op & 0x3f;
            set_reg(s, reg, reg == DW_REG_RA ? init->ra_how : reg == DW_REG_RBP ? init->bp_how : HOW_SAME,
                    reg == DW_REG_RA ? init->ra_off : reg == DW_REG_RBP ? init->bp_off : 0);
            continue;
        default:
            switch (op) {
            case 0x00: continue;                                           /* nop */
            case 0x01: {                                                   /* set_loc */
                uint64_t to = encoded(&r, cie->fde_enc, data_base);
                if (to > target)
                    return 0;
                loc = to;
                continue;
            }
            case 0x02: delta = u8(&r) * cie->code_align; break;             /* advance_loc1 */
            case 0x03: delta = fixed(&r, 2) * cie->code_align; break;       /* advance_loc2 */
            case 0x04: delta = fixed(&r, 4) * cie->code_align; break;       /* advance_loc4 */
            case 0x05:                                                     /* offset_extended */
                reg = uleb(&r);
                set_reg(s, reg, HOW_OFFSET, (int64_t)uleb(&r) * cie->data_align);
                continue;
            case 0x06:                                                     /* restore_extended */
                reg = uleb(&r);
                set_reg(s, reg, reg == DW_REG_RA ? init->ra_how : reg == DW_REG_RBP ? init->bp_how : HOW_SAME,
                        reg == DW_REG_RA ? init->ra_off : reg == DW_REG_RBP ? init->bp_off : 0);
                continue;
            case 0x07: set_reg(s, uleb(&r), HOW_UNDEFINED, 0); continue;    /* undefined */
            case 0x08: set_reg(s, uleb(&r), HOW_SAME, 0); continue;         /* same_value */
            case 0x09: set_reg(s, uleb(&r), HOW_OTHER, 0); uleb(&r); continue; /* register */
            case 0x0a:                                                     /* remember_state */
                if (depth == STATE_STACK)
                    return -1;
                saved[depth++] = *s;
                continue;
            case 0x0b:                                                     /* restore_state */
                if (depth == 0)
                    return -1;
                *s = saved[--depth];
                continue;
            case 0x0c: s->cfa_reg = (uint8_t)uleb(&r); s->cfa_off = (int64_t)uleb(&r); continue;
            case 0x0d: s->cfa_reg = (uint8_t)uleb(&r); continue;              /* def_cfa_register */
            case 0x0e: s->cfa_off = (int64_t)uleb(&r); continue;              /* def_cfa_offset */
            case 0x0f: return -1;                                          /* def_cfa_expression */
            case 0x10: case 0x16: {                                        /* (val_)expression */
                reg = uleb(&r);
                uint64_t len = uleb(&r);
                if ((uint64_t)(r.end - r.p) < len)
                    return -1;
                r.p += len;
                set_reg(s, reg, HOW_OTHER, 0);
                continue;
            }
            case 0x11:                                                     /* offset_extended_sf */
                reg = uleb(&r);
                set_reg(s, reg, HOW_OFFSET, sleb(&r) * cie->data_align);
                continue;
            case 0x12:                                                     /* def_cfa_sf */
                s->cfa_reg = (uint8_t)uleb(&r);
                s->cfa_off = sleb(&r) * cie->data_align;
                continue;
            case 0x13: s->cfa_off = sleb(&r) * cie->data_align; continue;    /* def_cfa_offset_sf */
            case 0x14: case 0x15:                                          /* val_offset(_sf) */
                reg = uleb(&r);
                if (op == 0x14)
                    uleb(&r);
                else
                    sleb(&r);
                set_reg(s, reg, HOW_OTHER, 0);
                continue;
            case 0x2e: uleb(&r); continue;                                 /* GNU_args_size */
            case 0x2f:                                                     /* GNU_negative_offset_extended */
                reg = uleb(&r);
                set_reg(s, reg, HOW_OFFSET, -(int64_t)uleb(&r) * cie->data_align);
                continue;
            default:
                return -1;
            }
        }
        if (loc + delta > target)
            return 0;
        loc += delta;
    }
    return r.bad ? -1 : 0;
}

/* Parse the CIE at cie (its length word first). */
static int parse_cie(const uint8_t *cie, cie_info *out, uint64_t data_base)
{
    reader r = { cie, cie + 12, 0 };
    uint64_t len = fixed(&r, 4);
    if (len == 0 || len == 0xffffffffu)
        return -1;
    r.end = cie + 4 + len;
    if (fixed(&r, 4) != 0)
        return -1; /* not a CIE */
    uint8_t version = u8(&r);
    const char *aug = (const char *)r.p;
    size_t aug_len = strnlen(aug, (size_t)(r.end - r.p));
    r.p += aug_len + 1;
    memset(out, 0, sizeof *out);
    out->fde_enc = PE_ABSPTR;
    out->code_align = uleb(&r);
    out->data_align = sleb(&r);
    out->ra_reg = version == 1 ? u8(&r) : uleb(&r);
    const uint8_t *aug_end = NULL;
    for (size_t i = 0; i < aug_len && !r.bad; i++) {
        switch (aug[i]) {
        case 'z':
            out->has_z = 1;
            aug_end = r.p + uleb(&r);
            aug_end = r.p + (aug_end - r.p); /* length counted from after itself */
            break;
        case 'R': out->fde_enc = u8(&r); break;
        case 'L': u8(&r); break;
        case 'P': {
            uint8_t enc = u8(&r);
            encoded(&r, enc & ~PE_INDIRECT, data_base);
            break;
        }
        case 'S': out->signal_frame = 1; break;
        default:
            if (!out->has_z)
                return -1;
            r.p = aug_end; /* the rest is skipped by its length */
            i = aug_len;
            break;
        }
    }
    if (r.bad || out->ra_reg != DW_REG_RA)
        return -1;
    out->insns = r.p;
    out->insns_end = r.end;
    return 0;
}

/* The rule for code at target, from the FDE at fde. */
static frame_rule rule_from_fde(const uint8_t *fde, uint64_t target, uint64_t data_base)
{
    frame_rule none = { .kind = RULE_NONE };
    reader r = { fde, fde + 8, 0 };
    uint64_t len = fixed(&r, 4);
    if (len == 0 || len == 0xffffffffu)
        return none;
    const uint8_t *cie_ptr_at = r.p;
    uint32_t cie_off = (uint32_t)fixed(&r, 4);
    r.end = fde + 4 + len;
    cie_info cie;
    if (cie_off == 0 || parse_cie(cie_ptr_at - cie_off, &cie, data_base) < 0 || cie.signal_frame)
        return none;
    uint64_t start = encoded(&r, cie.fde_enc, data_base);
    uint64_t range = encoded(&r, cie.fde_enc & 0x0f, data_base);
    if (r.bad || target < start || target >= start + range)
        return none;
    if (cie.has_z)
        r.p += uleb(&r);
    cfa_state init = { .cfa_reg = 0xff, .ra_how = HOW_SAME, .bp_how = HOW_SAME };
    if (run_cfa(&init, &init, &cie, cie.insns, cie.insns_end, start, target, data_base) < 0)
        return none;
    cfa_state s = init;
    if (r.bad || r.p > r.end || run_cfa(&s, &init, &cie, r.p, r.end, start, target, data_base) < 0)
        return none;
    frame_rule rule = { .kind = RULE_NONE };
    if (s.ra_how == HOW_UNDEFINED) {
        rule.kind = RULE_END;
        return rule;
    }
    if ((s.cfa_reg != DW_REG_RSP && s.cfa_reg != DW_REG_RBP) || s.ra_how != HOW_OFFSET ||
        (s.bp_how != HOW_SAME && s.bp_how != HOW_OFFSET) || s.cfa_off != (int32_t)s.cfa_off ||
        s.ra_off != (int16_t)s.ra_off || s.bp_off != (int16_t)s.bp_off)
        return rule;
    rule.kind = s.cfa_reg == DW_REG_RSP ? RULE_SP : RULE_BP;
    rule.cfa_off = (int32_t)s.cfa_off;
    rule.ra_off = (int16_t)s.ra_off;
    rule.bp_saved = s.bp_how == HOW_OFFSET;
    rule.bp_off = (int16_t)s.bp_off;
    return rule;
}

/* The FDE for target in a module's .eh_frame_hdr binary search table. */
static const uint8_t *find_fde(const uint8_t *hdr, size_t hdr_len, uint64_t target)
{
    reader r = { hdr, hdr + hdr_len, 0 };
    uint64_t base = (uint64_t)(uintptr_t)hdr;
    if (u8(&r) != 1)
        return NULL;
    uint8_t frame_enc = u8(&r), count_enc = u8(&r), table_enc = u8(&r);
    encoded(&r, frame_enc, base);
    uint64_t count = encoded(&r, count_enc, base);
    if (r.bad || table_enc != (PE_DATAREL | PE_SDATA4) || count == 0)
        return NULL; /* no search table: libunwind would scan; so does it */
    const int32_t *table = (const int32_t *)(const void *)r.p;
    uint64_t lo = 0, hi = count;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (base + (uint64_t)(int64_t)table[2 * mid] <= target)
            lo = mid;
        else
            hi = mid;
    }
    if (base + (uint64_t)(int64_t)table[2 * lo] > target)
        return NULL;
    return (const uint8_t *)(uintptr_t)(base + (uint64_t)(int64_t)table[2 * lo + 1]);
}

typedef struct rule_search {
    uint64_t target;
    frame_rule rule;
    int found;
} rule_search;

static int search_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    rule_search *q = arg;
    const ElfW(Phdr) *eh = NULL;
    int inside = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t at = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && q->target >= at && q->target < at + ph->p_memsz)
            inside = 1;
        else if (ph->p_type == PT_GNU_EH_FRAME)
            eh = ph;
    }
    if (!inside)
        return 0;
    q->found = 1;
    if (!eh)
        return 1;
    const uint8_t *hdr = (const uint8_t *)(uintptr_t)(info->dlpi_addr + eh->p_vaddr);
    const uint8_t *fde = find_fde(hdr, eh->p_memsz, q->target);
    if (fde)
        q->rule = rule_from_fde(fde, q->target, (uint64_t)(uintptr_t)hdr);
    return 1;
}

/* ---- the rule cache ---------------------------------------------------- */

static uint32_t slot_of(uint64_t key)
{
    return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 40) & (RULES - 1);
}

static rule_entry *rule_table(void)
{
    rule_entry *t = __atomic_load_n(&rules, __ATOMIC_ACQUIRE);
    if (t)
        return t;
    void *m = mmap(NULL, RULES * sizeof(rule_entry), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    rule_entry *none = NULL;
    if (!__atomic_compare_exchange_n(&rules, &none, (rule_entry *)m, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        munmap(m, RULES * sizeof(rule_entry));
        return none;
    }
    return m;
}

/* Remember rule for key in an empty slot (entries are written once, so a
 * reader never sees one change; a full neighbourhood keeps it out). */
static void cache_rule(rule_entry *t, uint64_t key, uint32_t gen, frame_rule rule)
{
    for (uint32_t i = slot_of(key), n = 0; n < 16; i = (i + 1) & (RULES - 1), n++) {
        uint64_t k = 0;
        if (__atomic_load_n(&t[i].key, __ATOMIC_RELAXED) != 0 ||
            !__atomic_compare_exchange_n(&t[i].key, &k, BUSY, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            continue;
        t[i].rule = rule;
        t[i].gen = gen;
        __atomic_store_n(&t[i].key, key, __ATOMIC_RELEASE);
        return;
    }
}

/* The rule for code at addr (a return address minus one, or an exact one). */
static frame_rule rule_at(uint64_t addr)
{
    frame_rule none = { .kind = RULE_NONE };
    rule_entry *t = rule_table();
    if (!t)
        return none;
    uint64_t key = addr + 1;
    uint32_t gen = __atomic_load_n(&code_gen, __ATOMIC_ACQUIRE);
    for (uint32_t i = slot_of(key), n = 0; n < 16; i = (i + 1) & (RULES - 1), n++) {
        uint64_t k = __atomic_load_n(&t[i].key, __ATOMIC_ACQUIRE);
        if (k == 0)
            break;
        if (k == key && t[i].gen == gen)
            return t[i].rule;
    }
    rule_search q = { .target = addr, .rule = none, .found = 0 };
    dl_iterate_phdr(search_module, &q);
    cache_rule(t, key, gen, q.rule);
    return q.rule;
}

/* ---- the walk ------------------------------------------------------------ */

/* Where the walk stands: the frame's code address, rsp and rbp. */
typedef struct walk_state {
    uint64_t ip, sp, bp;
} walk_state;

/* A stack word, if it is one: 8-byte aligned, above the walk's start and
 * within STACK_SPAN of it.  0 with *ok cleared otherwise. */
static uint64_t stack_word(uint64_t at, uint64_t lo, int *ok)
{
    if ((at & 7) || at < lo || at - lo >= STACK_SPAN) {
        *ok = 0;
        return 0;
    }
    return *(const uint64_t *)(uintptr_t)at;
}

/*
 * The common case of rest_is_same below, no CFA from j on depending on rbp:
 * the return addresses alone.  The words lie between the stack pointer
 * that matched frame j and the top of this thread's stack (the memo is the
 * thread's own), so they are there to read.
 */
static int return_addresses_same(const mf_unwind_memo *m, uint32_t j)
{
    const mf_unwind_frame *f = m->frame;
    uint32_t used = m->ended ? m->n : m->n - 1;
    for (uint32_t k = j; k < used; k++)
        if (f[k].ra_slot &&
            *(const uint64_t *)(uintptr_t)f[k].ra_slot != (k + 1 < m->n ? f[k + 1].ip : 0))
            return 0;
    return 1;
}

/*
 * Whether the last walk's frames from j on are what a walk from st would
 * compute now: same address and stack pointer at j, every word they read
 * unchanged, rbp (live or saved) the same wherever a CFA used it.
 */
static int rest_is_same(const mf_unwind_memo *m, uint32_t j, const walk_state *st, uint64_t lo)
{
    const mf_unwind_frame *f = &m->frame[j];
    if (f->ip != st->ip || f->sp != st->sp)
        return 0;
    if (!m->bp_matters)
        return return_addresses_same(m, j);
    uint64_t bp = st->bp;
    int ok = 1;
    /* The last frame's step was not used when the walk stopped at its limit. */
    uint32_t used = m->ended ? m->n : m->n - 1;
    for (uint32_t k = j; k < m->n && ok; k++) {
        f = &m->frame[k];
        if (f->uses_bp && bp != f->bp)
            return 0;
        if (k >= used)
            break;
        if (f->ra_slot) {
            uint64_t ra = stack_word(f->ra_slot, lo, &ok);
            if (ra != (k + 1 < m->n ? m->frame[k + 1].ip : 0))
                return 0;
        }
        if (f->bp_slot)
            bp = stack_word(f->bp_slot, lo, &ok);
    }
    return ok;
}

/* One step out of frame st (rule r): the frame recorded in *f, st moved to
 * the caller.  1 on, 0 the stack ended, -1 cannot. */
static int step(walk_state *st, const frame_rule *r, mf_unwind_frame *f, uint64_t lo)
{
    *f = (mf_unwind_frame){ .ip = st->ip, .sp = st->sp, .bp = st->bp };
    if (r->kind == RULE_END)
        return 0;
    if (r->kind != RULE_SP && r->kind != RULE_BP)
        return -1;
    int ok = 1;
    uint64_t cfa = (r->kind == RULE_SP ? st->sp : st->bp) + (uint64_t)(int64_t)r->cfa_off;
    f->uses_bp = r->kind == RULE_BP;
    f->ra_slot = cfa + (uint64_t)(int64_t)r->ra_off;
    uint64_t ra = stack_word(f->ra_slot, lo, &ok);
    if (r->bp_saved) {
        f->bp_slot = cfa + (uint64_t)(int64_t)r->bp_off;
        st->bp = stack_word(f->bp_slot, lo, &ok);
    }
    if (!ok || cfa <= st->sp)
        return -1;
    st->ip = ra;
    st->sp = cfa;
    return ra != 0;
}

/* The walk's own context: where this code is, rsp, rbp. */
#define CAPTURE(st)                                                                 \
    __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"          \
                     : "=r"((st).ip), "=r"((st).sp), "=r"((st).bp))

__attribute__((noinline)) int mf_unwind_walk(mf_unwind_memo *m, uint64_t *ips, int max,
                                             int *same)
{
    walk_state st;
    CAPTURE(st);
    uint64_t lo = st.sp;
    uint32_t gen = __atomic_load_n(&code_gen, __ATOMIC_ACQUIRE);
    int have_memo = m->n && m->gen == gen;
    uint32_t n = 0, j = 0, limit = (uint32_t)max + 1;
    *same = 0;
    for (;;) {
        /* The last walk's frame at this stack pointer (theirs rise too). */
        while (have_memo && j < m->n && m->frame[j].sp < st.sp)
            j++;
        if (have_memo && j >= n && j < m->n && rest_is_same(m, j, &st, lo) &&
            (m->ended || (j == n && m->max == (uint64_t)max))) {
            *same = j == 0 && m->max == (uint64_t)max;
            if (j != n)
                memmove(&m->frame[n], &m->frame[j], (m->n - j) * sizeof m->frame[0]);
            n += m->n - j;
            break;
        }
        if (n == limit) {
            m->ended = 0;
            break;
        }
        /* frame 0 is this function at an exact address; the others are
         * return addresses, whose call may be the function's last byte */
        frame_rule r = rule_at(n == 0 ? st.ip : st.ip - 1);
        int rc = step(&st, &r, &m->frame[n], lo);
        if (rc < 0) {
            m->n = 0;
            return -1;
        }
        n++;
        if (rc == 0) {
            m->ended = 1;
            break;
        }
    }
    m->n = n;
    m->gen = gen;
    m->max = (uint64_t)max;
    m->bp_matters = 0;
    for (uint32_t k = 0; k < n; k++)
        m->bp_matters |= m->frame[k].uses_bp;
    if (*same)
        return (int)n - 1; /* the caller has what it made of it: no copy */
    m->stack_id = m->stack_gen = m->stack_skip = 0;
    return mf_unwind_memo_ips(m, ips);
}

int mf_unwind_memo_ips(const mf_unwind_memo *m, uint64_t *ips)
{
    for (uint32_t k = 1; k < m->n; k++)
        ips[k - 1] = m->frame[k].ip;
    return m->n ? (int)m->n - 1 : 0;
}

#else /* !__x86_64__ */

int mf_unwind_walk(mf_unwind_memo *memo, uint64_t *ips, int max, int *same)
{
    (void)memo, (void)ips, (void)max;
    *same = 0;
    return -1;
}

int mf_unwind_memo_ips(const mf_unwind_memo *m, uint64_t *ips)
{
    (void)m, (void)ips;
    return 0;
}

void mf_unwind_code_changed(void)
{
}

#endif
