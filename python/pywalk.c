/*
 * pywalk.c - the Python frames of the calling thread read at an allocation,
 * on CPython 3.11 (Debian 12's python3), with no profile function: see
 * pywalk.h.
 *
 * A profile function (pystacks.c) turns on CPython 3.11's tracing mode,
 * which sends every instruction through its tracing dispatch and disables
 * the specialized instructions: Python code runs about twice as slowly
 * (docs/PYTHON.md).  This file instead reads, at each allocation, the
 * thread's interpreter frames the way the interpreter itself does:
 * PyGILState_GetThisThreadState() -> cframe -> current_frame -> previous...,
 * each frame's code and last instruction, its line by PyCode_Addr2Line
 * (pure arithmetic on the code's line table).  Nothing here allocates
 * through Python, takes the GIL or creates a frame object: it runs inside
 * malloc, maybe while the thread has released the GIL (its frames are then
 * suspended in a C call and cannot change).
 *
 * It is compiled without Py_LIMITED_API because it reads CPython 3.11's
 * structures: the public PyThreadState, _PyCFrame and PyCodeObject of the
 * headers it is built with, and the internal _PyInterpreterFrame mirrored
 * below (Include/internal/pycore_frame.h of 3.11, the same in every 3.11.x).
 * It is built only against 3.11 headers and used only when the running
 * interpreter is 3.11 (mf_pywalk_available); every other interpreter gets
 * the profile function, so the one abi3 binary still loads everywhere.
 *
 * Per thread (state: an mmap'd cache the recorder keeps in the thread's
 * slot): the last walk (each frame and its last instruction), whose stack
 * id is reused while they stay the same; lines by (code, instruction); frame
 * ids and names by (code, line).  Code objects freed and replaced at the
 * same address are told apart by their name and file objects and first line.
 */
#undef Py_LIMITED_API
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "log_format.h"
#include "pywalk.h"
#include "recorder.h"

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000

/* Include/internal/pycore_frame.h, CPython 3.11. */
typedef struct mf_py311_frame {
    PyObject *f_func;
    PyObject *f_globals;
    PyObject *f_builtins;
    PyObject *f_locals;
    PyCodeObject *f_code;
    PyObject *frame_obj;
    struct mf_py311_frame *previous;
    _Py_CODEUNIT *prev_instr;
    int stacktop;
    _Bool is_entry;          /* the outermost frame of its eval loop call */
    char owner;              /* 1: a generator's */
} mf_py311_frame;
#define OWNED_BY_GENERATOR 1

#define LINES 2048           /* direct-mapped caches, per thread */
#define FRAMES 2048
#define WALK_MAX MF_STACK_MAX_DEPTH

typedef struct line_slot {
    const void *code;
    int addr, line;
} line_slot;

typedef struct frame_slot {
    const void *code, *name, *file;
    int firstline, line;
    uint32_t frame_id;       /* 0 with skip: memflow's own code */
    uint32_t skip;
} frame_slot;

typedef struct walk_state {
    uint32_t last_n, last_id;
    const void *last_frame[WALK_MAX];
    const void *last_instr[WALK_MAX];
    line_slot lines[LINES];
    frame_slot frames[FRAMES];
} walk_state;

static int running_311 = -1;

int mf_pywalk_available(void)
{
    if (running_311 < 0) {
        const char *v = Py_GetVersion();
        running_311 = strncmp(v, "3.11.", 5) == 0;
    }
    return running_311;
}

/* The UTF-8 text of a str without allocating: compact ASCII strings hold
 * it, others only once their UTF-8 form was asked for. */
static const char *text_of(PyObject *s, size_t *len)
{
    if (!s || !PyUnicode_Check(s) || !PyUnicode_IS_READY(s))
        return NULL;
    if (PyUnicode_IS_COMPACT_ASCII(s)) {
        *len = (size_t)PyUnicode_GET_LENGTH(s);
        return (const char *)(((PyASCIIObject *)s) + 1);
    }
    PyCompactUnicodeObject *c = (PyCompactUnicodeObject *)s;
    if (PyUnicode_IS_COMPACT(s) && c->utf8) {
        *len = (size_t)c->utf8_length;
        return c->utf8;
    }
    return NULL;
}

static int line_of(walk_state *w, PyCodeObject *code, int addr)
{
    uint32_t h = (uint32_t)(((uintptr_t)code >> 4) ^ (uint32_t)addr * 0x9e3779b1u) % LINES;
    line_slot *l = &w->lines[h];
    if (l->code != code || l->addr != addr)
        *l = (line_slot){ code, addr, PyCode_Addr2Line(code, addr) };
    return l->line;
}

/* The frame id of code at line (0: leave the frame out). */
static uint32_t frame_of(walk_state *w, PyCodeObject *code, int line)
{
    uint32_t h = (uint32_t)(((uintptr_t)code >> 4) * 0x9e3779b1u ^ (uint32_t)line) % FRAMES;
    frame_slot *f = &w->frames[h];
    if (f->code == code && f->name == code->co_qualname && f->file == code->co_filename &&
        f->firstline == code->co_firstlineno && f->line == line)
        return f->frame_id;
    size_t name_len = 1, file_len = 0;
    const char *name = text_of(code->co_qualname, &name_len);
    const char *file = text_of(code->co_filename, &file_len);
    uint32_t skip = file && mf_pystacks_own_file(file, file_len);
    uint32_t id = skip ? 0 : mf_recorder_frame(name ? name : "?", name ? name_len : 1, file,
                                               file_len, line > 0 ? (uint32_t)line : 0,
                                               MF_FRAME_PYTHON);
    *f = (frame_slot){ code, code->co_qualname, code->co_filename, code->co_firstlineno, line,
                       id, skip };
    return id;
}

uint32_t mf_pywalk(void **state, uint64_t *out, uint32_t *group, uint32_t max, int *same)
{
    walk_state *w = *state;
    if (!w) {
        void *p = mmap(NULL, sizeof *w, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (p == MAP_FAILED)
            return 0;
        *state = w = p;
    }
    *same = 0;
    PyThreadState *ts = PyGILState_GetThisThreadState();
    if (!ts || !ts->cframe)
        return 0;
    const mf_py311_frame *f = (const mf_py311_frame *)ts->cframe->current_frame;
    /* The same frames at the same instructions as the last walk: the same stack. */
    uint32_t d = 0;
    const mf_py311_frame *g = f;
    while (g && d < w->last_n && d < WALK_MAX && w->last_frame[d] == g &&
           w->last_instr[d] == g->prev_instr) {
        g = g->previous;
        d++;
    }
    if (d == w->last_n && !g && w->last_id) {
        *same = 1;
        return w->last_id;
    }
    uint32_t n = 0, eval = 0, walked = 0;
    for (; f && walked < WALK_MAX; f = f->previous, walked++) {
        w->last_frame[walked] = f;
        w->last_instr[walked] = f->prev_instr;
        PyCodeObject *code = f->f_code;
        _Py_CODEUNIT *first = _PyCode_CODE(code);
        uint32_t this_eval = eval;
        if (f->is_entry)
            eval++;
        if (f->owner != OWNED_BY_GENERATOR && f->prev_instr < first + code->_co_firsttraceable)
            continue; /* not started yet */
        int addr = (int)(f->prev_instr - first) * (int)sizeof(_Py_CODEUNIT);
        uint32_t id = n < max ? frame_of(w, code, line_of(w, code, addr)) : 0;
        if (!id)
            continue;
        group[n] = this_eval;
        out[n++] = mf_stack_frame_entry(id);
    }
    w->last_n = f ? 0 : walked; /* a stack deeper than the memo: never reused */
    w->last_id = 0;
    return n;
}

void mf_pywalk_remember(void *state, uint32_t id)
{
    walk_state *w = state;
    if (w && w->last_n)
        w->last_id = id;
}

#else /* not built against CPython 3.11 */

int mf_pywalk_available(void)
{
    return 0;
}

uint32_t mf_pywalk(void **state, uint64_t *out, uint32_t *group, uint32_t max, int *same)
{
    (void)state, (void)out, (void)group, (void)max;
    *same = 0;
    return 0;
}

void mf_pywalk_remember(void *state, uint32_t id)
{
    (void)state, (void)id;
}

#endif
