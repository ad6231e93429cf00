/*
 * pystacks.c - Python call stacks for every allocation (part of
 * memflow._memflow): a shadow stack per thread, kept by a C profile
 * function, read by the recorder at each allocation.
 *
 * Flow: python_stacks_start() (memflow run's start-up, or a program)
 * registers stack_id() with the recorder and installs profile() on the
 * calling thread with PyEval_SetProfile; threads started later install it
 * at their first Python event (threading.setprofile with
 * _thread_profile_bootstrap).  profile() pushes (frame, its function and
 * file as string ids, the C stack depth of the call) on each call and pops
 * on each return (exceptions and yields included); code objects are
 * resolved to string ids once (a table keyed by the code object, which it
 * keeps alive).  At an allocation the recorder calls stack_id() on the
 * allocating thread, in the allocator, maybe without the GIL: it reads only
 * this thread's shadow stack and computes lines with PyFrame_GetLineNumber
 * (pure arithmetic on the code's line table: the frames are suspended in a
 * call, or are the one running on this thread), so it never allocates
 * through Python nor takes the GIL.  Lines of frames that are not the
 * innermost are kept until their callee returns.
 *
 * Why a profile function rather than walking frames at each allocation:
 * from 3.11 on, asking for a frame object (PyEval_GetFrame,
 * PyFrame_GetBack) may create it, a Python allocation (and a garbage
 * collection) inside malloc; and a shadow stack makes an allocation cost
 * one line computation instead of a walk (docs/PYTHON.md has the figures).
 *
 * Not in the limited API: PyEval_SetProfile and its callback type (with
 * the PyTrace_* event numbers), stable in every CPython from 3.9 to 3.13;
 * declared here, so the one abi3 binary still loads everywhere.
 *
 * With native stacks (`--stacks`) the recorder passes the native return
 * addresses too: the Python frames are merged where the interpreter's eval
 * loop (_PyEval_EvalFrameDefault) runs them.  Before 3.11 each Python frame
 * has its own eval loop call; from 3.11 on, Python-to-Python calls run in
 * the caller's eval loop: Python frames whose calls came at the same C
 * stack depth (within MF_PY_SAME_EVAL bytes) belong to one eval loop call,
 * and replace it, innermost first.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log_format.h"
#include "pystacks.h"
#include "pywalk.h"
#include "recorder.h"

/* Not in the limited API, the same in 3.9 .. 3.13 (cpython/pystate.h). */
typedef int (*mf_py_tracefunc)(PyObject *, PyFrameObject *, int, PyObject *);
PyAPI_FUNC(void) PyEval_SetProfile(mf_py_tracefunc, PyObject *);
PyAPI_FUNC(PyFrameObject *) PyFrame_GetBack(PyFrameObject *frame);
#define MF_PY_CALL 0        /* PyTrace_CALL */
#define MF_PY_RETURN 3      /* PyTrace_RETURN (also an exception leaving, a yield) */

#define MF_PY_SAME_EVAL 256 /* C stack bytes within which two calls share an eval loop */
#define CODE_CACHE_MAX (1u << 16)

typedef struct shadow_frame {
    PyFrameObject *frame;    /* borrowed: alive while it runs */
    uint32_t function, file; /* string ids; function 0 = leave the frame out (memflow's) */
    uint32_t frame_id;       /* FRAME id at `line`; 0 = not computed */
    int line;
    uintptr_t sp;            /* C stack address of the call's profile event */
} shadow_frame;

typedef struct shadow {
    shadow_frame *frames;
    uint32_t depth, cap;
    pthread_t owner;
    /* the last stack composed: reused while the frames stay the same */
    uint32_t last_n, last_id, last_gen;
    uint64_t last[MF_STACK_MAX_DEPTH];
} shadow;

typedef struct code_entry {
    PyObject *code;          /* a strong reference; NULL = empty slot */
    uint32_t function, file;
} code_entry;

static code_entry *codes;    /* open addressing by the code object's address */
static uint32_t codes_mask, codes_used;
static uintptr_t eval_start, eval_end;   /* _PyEval_EvalFrameDefault */
#define OWN_MAX 4
static char *own_prefix[OWN_MAX];  /* memflow's folders (package, start-up): frames left out */
static int n_own;
static int started;
static int walking;          /* mf_pywalk reads the frames: no profile function */
static __thread uint32_t walk_gen;  /* the log generation of the walker's remembered id */

/* ---- code objects to string ids (GIL held) --------------------------------------- */

/* The string id of str object v (0 and no error set when it is none). */
static uint32_t intern_str(PyObject *v)
{
    PyObject *bytes = v && PyUnicode_Check(v) ? PyUnicode_AsUTF8String(v) : NULL;
    char *text = NULL;
    Py_ssize_t len = 0;
    uint32_t id = 0;
    if (bytes && PyBytes_AsStringAndSize(bytes, &text, &len) == 0)
        id = mf_recorder_intern(text, (size_t)len);
    Py_XDECREF(bytes);
    PyErr_Clear();
    return id;
}

static uint32_t intern_attr(PyObject *code, const char *attr, const char *fallback)
{
    PyObject *v = PyObject_GetAttrString(code, attr);
    if (!v && fallback) {
        PyErr_Clear();
        v = PyObject_GetAttrString(code, fallback);
    }
    uint32_t id = intern_str(v);
    Py_XDECREF(v);
    return id;
}

static void codes_clear(void)
{
    for (uint32_t i = 0; codes && i <= codes_mask; i++)
        Py_CLEAR(codes[i].code);
    codes_used = 0;
}

/* The entry of code, resolved the first time (NULL when out of memory). */
static code_entry *code_of(PyObject *code)
{
    if (!codes) {
        codes_mask = 4095;
        if (!(codes = calloc(codes_mask + 1, sizeof *codes)))
            return NULL;
    }
    uint32_t i = (uint32_t)(((uintptr_t)code >> 4) * 0x9e3779b9u) & codes_mask;
    while (codes[i].code && codes[i].code != code)
        i = (i + 1) & codes_mask;
    if (codes[i].code)
        return &codes[i];
    if ((codes_used + 1) * 2 > codes_mask + 1) {
        if (codes_mask + 1 >= CODE_CACHE_MAX) {
            codes_clear(); /* many short-lived code objects: start over */
        } else {
            code_entry *old = codes;
            uint32_t old_mask = codes_mask;
            code_entry *grown = calloc((size_t)(old_mask + 1) * 2, sizeof *grown);
            if (!grown)
                return NULL;
            codes = grown;
            codes_mask = old_mask * 2 + 1;
            for (uint32_t j = 0; j <= old_mask; j++) {
                if (!old[j].code)
                    continue;
                uint32_t k = (uint32_t)(((uintptr_t)old[j].code >> 4) * 0x9e3779b9u) & codes_mask;
                while (codes[k].code)
                    k = (k + 1) & codes_mask;
                codes[k] = old[j];
            }
            free(old);
        }
        return code_of(code);
    }
    code_entry *e = &codes[i];
    uint32_t file = intern_attr(code, "co_filename", NULL);
    const char *path = mf_recorder_string(file);
    int own = 0;
    for (int k = 0; k < n_own && !own; k++)
        own = strncmp(path, own_prefix[k], strlen(own_prefix[k])) == 0;
    e->function = own ? 0 : intern_attr(code, "co_qualname", "co_name");
    e->file = file;
    Py_INCREF(code);
    e->code = code;
    codes_used++;
    return e;
}

/* ---- the shadow stack (GIL held) ------------------------------------------------------ */

static int push(shadow *s, PyFrameObject *frame, uintptr_t sp)
{
    if (s->depth == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 64;
        shadow_frame *grown = realloc(s->frames, cap * sizeof *grown);
        if (!grown)
            return -1;
        s->frames = grown;
        s->cap = cap;
    }
    PyCodeObject *code = PyFrame_GetCode(frame);
    code_entry *c = code ? code_of((PyObject *)code) : NULL;
    Py_XDECREF(code);
    if (s->depth)
        s->frames[s->depth - 1].frame_id = 0; /* the caller's line moves on: look again */
    s->frames[s->depth++] = (shadow_frame){ frame, c ? c->function : 0, c ? c->file : 0, 0, 0,
                                            sp };
    return 0;
}

static void pop(shadow *s, PyFrameObject *frame)
{
    uint32_t d = s->depth;
    while (d > 0 && s->frames[d - 1].frame != frame)
        d--;
    if (d == 0)
        return; /* a frame that began before the profile: not on the shadow stack */
    s->depth = d - 1;
}

static int profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    (void)arg;
    if (what != MF_PY_CALL && what != MF_PY_RETURN)
        return 0;
    shadow *s = PyCapsule_GetPointer(obj, NULL);
    if (!s)
        return PyErr_Clear(), 0;
    MF_INTERNAL_BEGIN();
    if (what == MF_PY_CALL)
        push(s, frame, (uintptr_t)__builtin_frame_address(0));
    else
        pop(s, frame);
    MF_INTERNAL_END();
    return 0;
}

/* ---- allocation time (the recorder; maybe without the GIL) ----------------------------- */

int mf_pystacks_own_file(const char *path, size_t len)
{
    for (int k = 0; k < n_own; k++) {
        size_t n = strlen(own_prefix[k]);
        if (len >= n && strncmp(path, own_prefix[k], n) == 0)
            return 1;
    }
    return 0;
}

/* The Python frames of shadow stack s, innermost first, into out (at most
 * max), group[i] the eval loop call of frame i (the rule at the top); how
 * many. */
static uint32_t shadow_entries(shadow *s, uint64_t *out, uint32_t *group, uint32_t max)
{
    uint32_t n = 0, eval = 0;
    uintptr_t eval_sp = 0;
    for (uint32_t d = s->depth; d-- > 0 && n < max;) {
        shadow_frame *f = &s->frames[d];
        if (d == s->depth - 1)
            eval_sp = f->sp;
        else if ((f->sp > eval_sp ? f->sp - eval_sp : eval_sp - f->sp) >= MF_PY_SAME_EVAL)
            eval++, eval_sp = f->sp;
        if (!f->function)
            continue;
        if (d == s->depth - 1 || !f->frame_id) {
            int line = PyFrame_GetLineNumber(f->frame);
            if (!f->frame_id || line != f->line) {
                f->line = line;
                f->frame_id = mf_recorder_frame_ids(f->function, f->file,
                                                    line > 0 ? (uint32_t)line : 0,
                                                    MF_FRAME_PYTHON);
            }
        }
        if (!f->frame_id)
            continue;
        group[n] = eval;
        out[n++] = mf_stack_frame_entry(f->frame_id);
    }
    return n;
}

static int is_eval(uint64_t ip)
{
    return ip - 1 >= eval_start && ip - 1 < eval_end;
}

/* Python frames py[0..n_py) (group: their eval loop calls) merged into the
 * native stack: each eval loop call's frames replace its native frame. */
static uint32_t merge(const uint64_t *native, uint32_t n_native, const uint64_t *py,
                      const uint32_t *group, uint32_t n_py, uint64_t *out)
{
    uint32_t n = 0, p = 0;
    for (uint32_t i = 0; i < n_native && n < MF_STACK_MAX_DEPTH; i++) {
        if (!is_eval(native[i]) || p == n_py) {
            out[n++] = native[i];
            continue;
        }
        uint32_t call = group[p];
        while (p < n_py && group[p] == call && n < MF_STACK_MAX_DEPTH)
            out[n++] = py[p++];
    }
    while (p < n_py && n < MF_STACK_MAX_DEPTH) /* outer frames past a cut native stack */
        out[n++] = py[p++];
    return n;
}

static uint32_t stack_id(void **slot, const uint64_t *native, uint32_t n_native)
{
    uint64_t py[MF_STACK_MAX_DEPTH];
    uint32_t group[MF_STACK_MAX_DEPTH];
    uint32_t gen = mf_recorder_stack_generation();
    uint32_t n_py;
    if (walking) {
        int same;
        n_py = mf_pywalk(slot, py, group, MF_STACK_MAX_DEPTH, &same);
        if (same && !n_native && gen == walk_gen)
            return n_py;
    } else {
        shadow *s = *slot;
        n_py = s ? shadow_entries(s, py, group, MF_STACK_MAX_DEPTH) : 0;
        if (s && !n_native && n_py && n_py == s->last_n && s->last_id && s->last_gen == gen &&
            memcmp(py, s->last, n_py * sizeof *py) == 0)
            return s->last_id;
    }
    uint32_t id;
    if (n_native) {
        uint64_t merged[MF_STACK_MAX_DEPTH];
        id = mf_recorder_stack_of(merged, merge(native, n_native, py, group, n_py, merged));
    } else {
        id = n_py ? mf_recorder_stack_of(py, n_py) : 0;
    }
    if (walking) {
        mf_pywalk_remember(*slot, n_native ? 0 : id);
        walk_gen = gen;
    } else if (*slot && !n_native) {
        shadow *s = *slot;
        memcpy(s->last, py, n_py * sizeof *py);
        s->last_n = n_py;
        s->last_id = id;
        s->last_gen = gen;
    }
    return id;
}

/* ---- threads ---------------------------------------------------------------------------- */

static void shadow_free(PyObject *capsule)
{
    shadow *s = PyCapsule_GetPointer(capsule, NULL);
    if (!s)
        return PyErr_Clear();
    if (!pthread_equal(s->owner, pthread_self()))
        return; /* another thread clears it: its owner may still read it; keep it */
    mf_recorder_thread_python(NULL);
    MF_INTERNAL_BEGIN(); /* memflow's own memory, allocated unrecorded */
    free(s->frames);
    free(s);
    MF_INTERNAL_END();
}

/* Install the profile function on the calling thread, its shadow stack
 * seeded with the frames running now (outermost first). */
static int install_here(void)
{
    MF_INTERNAL_BEGIN();
    shadow *s = calloc(1, sizeof *s);
    MF_INTERNAL_END();
    PyObject *capsule = s ? PyCapsule_New(s, NULL, shadow_free) : NULL;
    if (!capsule) {
        MF_INTERNAL_BEGIN();
        free(s);
        MF_INTERNAL_END();
        return -1;
    }
    s->owner = pthread_self();
    PyFrameObject *running[512];
    int n = 0;
    PyFrameObject *f = PyThreadState_GetFrame(PyThreadState_Get());
    while (f && n < 512) {
        running[n++] = f;
        f = PyFrame_GetBack(f);
    }
    Py_XDECREF(f);
    MF_INTERNAL_BEGIN();
    for (int i = n; i-- > 0;) {
        push(s, running[i], 0);
        s->frames[s->depth - 1].sp = UINTPTR_MAX - (uintptr_t)i * 2 * MF_PY_SAME_EVAL;
    }
    MF_INTERNAL_END();
    PyEval_SetProfile(profile, capsule); /* holds the capsule */
    Py_DECREF(capsule);
    for (int i = 0; i < n; i++) /* the thread's frames hold them while they run */
        Py_DECREF(running[i]);
    mf_recorder_thread_python(s);
    return 0;
}

static PyObject *py_thread_bootstrap(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    if (install_here() < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* The eval loop's address range, for merging with native stacks. */
static void find_eval_loop(void)
{
    void *sym = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    Dl_info info;
    const ElfW(Sym) *entry = NULL;
    if (sym && dladdr1(sym, &info, (void **)&entry, RTLD_DL_SYMENT) && entry && entry->st_size) {
        eval_start = (uintptr_t)sym;
        eval_end = eval_start + entry->st_size;
    }
}

/* Folder dir (with a '/' added) as one of memflow's own. */
static void add_own(const char *dir, size_t len)
{
    char *copy = n_own < OWN_MAX ? malloc(len + 2) : NULL;
    if (!copy)
        return;
    memcpy(copy, dir, len);
    copy[len] = '/';
    copy[len + 1] = 0;
    own_prefix[n_own++] = copy;
}

static PyObject *py_python_stacks_start(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *own_dirs;
    int allow_profile = 1;
    if (!PyArg_ParseTuple(args, "O!|p:python_stacks_start", &PyTuple_Type, &own_dirs,
                          &allow_profile))
        return NULL;
    if (started)
        return PyUnicode_FromString(walking ? "walk" : "profile");
    if (!mf_pywalk_available() && !allow_profile)
        Py_RETURN_NONE;
    MF_INTERNAL_BEGIN();
    for (Py_ssize_t i = 0; i < PyTuple_Size(own_dirs); i++) {
        PyObject *bytes = PyUnicode_AsUTF8String(PyTuple_GetItem(own_dirs, i));
        char *dir;
        Py_ssize_t len;
        if (bytes && PyBytes_AsStringAndSize(bytes, &dir, &len) == 0)
            add_own(dir, (size_t)len);
        Py_XDECREF(bytes);
    }
    find_eval_loop();
    MF_INTERNAL_END();
    if (PyErr_Occurred())
        return NULL;
    started = 1;
    walking = mf_pywalk_available();
    mf_recorder_set_python_stacks(stack_id, walking);
    if (walking)
        return PyUnicode_FromString("walk");
    if (install_here() < 0)
        return NULL;
    return PyUnicode_FromString("profile");
}

static PyObject *py_python_stacks_key(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromUnsignedLongLong(mf_config_get()->python_stacks);
}

static PyMethodDef methods[] = {
    { "python_stacks_start", py_python_stacks_start, METH_VARARGS,
      "python_stacks_start(own_dirs, allow_profile=True) -> 'walk', 'profile' or None: record "
      "the Python stack of every allocation (frames of files in own_dirs left out), by the "
      "frame walker where it exists, else by a profile function if allowed (then threads "
      "started later need threading.setprofile(_thread_profile_bootstrap))" },
    { "_thread_profile_bootstrap", py_thread_bootstrap, METH_VARARGS,
      "threading.setprofile hook: moves a new thread onto the C profile function" },
    { "python_stacks", py_python_stacks_key, METH_NOARGS,
      "the python_stacks configuration key: 0 off, 1 where cheap, 2 everywhere" },
    { NULL, NULL, 0, NULL },
};

int mf_pystacks_add(PyObject *module)
{
    return PyModule_AddFunctions(module, methods);
}
