/*
 * binding.c - memflow._memflow, the CPython extension module under the
 * memflow package: libmemflow's API for Python (configuration, state,
 * dump/dumps, trace objects, record_*) and the scope context manager; the
 * PyTorch allocator history's functions come from torch_live.c.
 *
 * Built against the stable ABI (Py_LIMITED_API 3.9): one _memflow.abi3.so
 * serves every CPython from 3.9 on, whichever interpreter `memflow run`
 * starts.  An extension rather than ctypes because a scope push + pop must
 * cost well under 0.5 us from Python (bench/python_scope.py measures both).
 *
 * Scopes follow MXNet's mxnet.profiler.scope: the current scope belongs to
 * the thread AND to the contextvars context (each asyncio task has its own).
 * A ContextVar holds the context's scope as a chain of (scope id, outer
 * value) tuples; entering a scope composes the new name on the context's
 * scope (mf_scope_push_on) and pushes it on the thread's stack too, so every
 * allocation the thread makes carries it; leaving pops both.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memflow.h"
#include "config.h"
#include "cuda_seen.h"
#include "pystacks.h"
#include "recorder.h"
#include "scope.h"
#include "torch_live.h"

/* The context's scope: None (the default, "<unk>:") or (id, outer value). */
static PyObject *scope_var, *scope_var_get, *scope_var_set;
/* name -> (name with ':', its UTF-8 bytes); cleared when it grows past this */
static PyObject *name_cache;
#define NAME_CACHE_MAX 4096

static PyObject *memflow_error(void)
{
    PyErr_SetString(PyExc_ValueError, memflow_last_error());
    return NULL;
}

/* ---- scopes ------------------------------------------------------------- */

/* (name with a trailing ':', UTF-8 bytes of it) for a scope name, cached. */
static PyObject *name_entry(PyObject *name)
{
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "scope name must be a str, not %R",
                     (PyObject *)Py_TYPE(name));
        return NULL;
    }
    PyObject *entry = PyDict_GetItemWithError(name_cache, name);
    if (entry) {
        Py_INCREF(entry);
        return entry;
    }
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t n = PyUnicode_GetLength(name);
    PyObject *full = n > 0 && PyUnicode_ReadChar(name, n - 1) == ':'
                         ? (Py_INCREF(name), name)
                         : PyUnicode_FromFormat("%U:", name);
    PyObject *bytes = full ? PyUnicode_AsUTF8String(full) : NULL;
    if (bytes && (size_t)PyBytes_Size(bytes) != strlen(PyBytes_AsString(bytes))) {
        PyErr_Format(PyExc_ValueError, "scope name %R contains a NUL character", name);
        Py_CLEAR(bytes);
    }
    entry = bytes ? PyTuple_Pack(2, full, bytes) : NULL;
    Py_XDECREF(full);
    Py_XDECREF(bytes);
    if (!entry)
        return NULL;
    if (PyDict_Size(name_cache) >= NAME_CACHE_MAX)
        PyDict_Clear(name_cache);
    if (PyDict_SetItem(name_cache, name, entry) < 0)
        Py_CLEAR(entry);
    return entry;
}

/* The scope id a context value stands for. */
static uint32_t context_scope_id(PyObject *value)
{
    if (value == Py_None)
        return MF_STRING_DEFAULT_SCOPE;
    return (uint32_t)PyLong_AsUnsignedLong(PyTuple_GetItem(value, 0));
}

/* Push utf8 (appended or not) on the context's scope and the thread's. */
static int scope_enter(const char *utf8, int append)
{
    PyObject *outer = PyObject_CallNoArgs(scope_var_get);
    if (!outer)
        return -1;
    uint32_t base = context_scope_id(outer);
    uint32_t id = mf_scope_push_on(base, utf8, append);
    /* A full stack counts the push (the pop balances it): keep the scope. */
    PyObject *value = PyTuple_New(2);
    PyObject *id_object = PyLong_FromUnsignedLong(id ? id : base);
    PyObject *token = NULL;
    if (value && id_object) {
        PyTuple_SetItem(value, 0, id_object); /* steals both */
        PyTuple_SetItem(value, 1, outer);
        token = PyObject_CallFunctionObjArgs(scope_var_set, value, NULL);
        Py_DECREF(value);
    } else {
        Py_XDECREF(value);
        Py_XDECREF(id_object);
        Py_DECREF(outer);
    }
    if (!token) { /* not entered: the thread's stack neither */
        memflow_scope_pop();
        return -1;
    }
    Py_DECREF(token);
    if (mf_py_torch_watching)
        mf_py_torch_scope_changed();
    return 0;
}

/* Pop the context's scope and the thread's. */
static int scope_exit(void)
{
    PyObject *value = PyObject_CallNoArgs(scope_var_get);
    if (!value)
        return -1;
    if (value == Py_None) { /* nothing entered in this context */
        Py_DECREF(value);
        return 0;
    }
    memflow_scope_pop();
    PyObject *token = PyObject_CallFunctionObjArgs(scope_var_set, PyTuple_GetItem(value, 1), NULL);
    Py_DECREF(value);
    if (!token)
        return -1;
    Py_DECREF(token);
    if (mf_py_torch_watching)
        mf_py_torch_scope_changed();
    return 0;
}

typedef struct scope_object {
    PyObject_HEAD
    PyObject *entry; /* name_entry() */
    int append;
} scope_object;

static PyObject *scope_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = { "name", "append_mode", NULL };
    PyObject *name = NULL;
    int append = 1;
    if (!kwds && PyTuple_Size(args) == 1)
        name = PyTuple_GetItem(args, 0); /* the common case, without parsing */
    else if (!PyArg_ParseTupleAndKeywords(args, kwds, "|Op:scope", kwlist, &name, &append))
        return NULL;
    PyObject *entry = name ? name_entry(name) : NULL;
    if (!entry && !name) {
        PyObject *unk = PyUnicode_FromString("<unk>:");
        entry = unk ? name_entry(unk) : NULL;
        Py_XDECREF(unk);
    }
    if (!entry)
        return NULL;
    scope_object *self = (scope_object *)PyType_GenericAlloc(type, 0);
    if (!self) {
        Py_DECREF(entry);
        return NULL;
    }
    self->entry = entry;
    self->append = append;
    return (PyObject *)self;
}

static void scope_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    Py_XDECREF(((scope_object *)self)->entry);
    PyObject_Free(self);
    Py_DECREF(type);
}

static PyObject *scope_enter_method(PyObject *self, PyObject *unused)
{
    (void)unused;
    scope_object *s = (scope_object *)self;
    if (scope_enter(PyBytes_AsString(PyTuple_GetItem(s->entry, 1)), s->append) < 0)
        return NULL;
    PyObject *name = PyTuple_GetItem(s->entry, 0);
    Py_INCREF(name);
    return name;
}

static PyObject *scope_exit_method(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    if (scope_exit() < 0)
        return NULL;
    Py_RETURN_FALSE;
}

static PyObject *scope_get_name(PyObject *self, void *closure)
{
    (void)closure;
    PyObject *name = PyTuple_GetItem(((scope_object *)self)->entry, 0);
    Py_INCREF(name);
    return name;
}

static PyObject *scope_get_append(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(((scope_object *)self)->append);
}

static PyMethodDef scope_methods[] = {
    { "__enter__", scope_enter_method, METH_NOARGS, "Enter the scope; returns its name." },
    { "__exit__", scope_exit_method, METH_VARARGS, "Leave the scope." },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef scope_getset[] = {
    { "name", scope_get_name, NULL, "the scope's name, with its trailing ':'", NULL },
    { "append_mode", scope_get_append, NULL, "whether it appends to the current scope", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyType_Slot scope_slots[] = {
    { Py_tp_new, scope_new },
    { Py_tp_dealloc, scope_dealloc },
    { Py_tp_methods, scope_methods },
    { Py_tp_getset, scope_getset },
    { Py_tp_doc, "scope(name='<unk>:', append_mode=True)\n--\n\n"
                 "A profiler scope as a context manager (mxnet.profiler.scope): every "
                 "allocation made inside carries it.  A ':' is added to name if missing; "
                 "in append mode the name is appended to the current scope unless that "
                 "is '<unk>:'.  The current scope is per thread and per contextvars "
                 "context.  Entering returns the name." },
    { 0, NULL },
};

static PyType_Spec scope_spec = {
    "memflow._memflow.scope", sizeof(scope_object), 0, Py_TPFLAGS_DEFAULT, scope_slots,
};

/* scope_push(name) appends, scope_push_whole(name) does not, scope_pop()
 * leaves: scopes without an object, for the PyTorch hooks (every module). */
static PyObject *scope_push_entry(PyObject *name, int append)
{
    PyObject *entry = name_entry(name);
    if (!entry)
        return NULL;
    int rc = scope_enter(PyBytes_AsString(PyTuple_GetItem(entry, 1)), append);
    Py_DECREF(entry);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_scope_push(PyObject *self, PyObject *name)
{
    (void)self;
    return scope_push_entry(name, 1);
}

static PyObject *py_scope_push_whole(PyObject *self, PyObject *name)
{
    (void)self;
    return scope_push_entry(name, 0);
}

static PyObject *py_scope_pop(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (scope_exit() < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* The context's scope (what the next scope composes on) as a str. */
static PyObject *py_current_scope(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    PyObject *value = PyObject_CallNoArgs(scope_var_get);
    if (!value)
        return NULL;
    uint32_t id = context_scope_id(value);
    Py_DECREF(value);
    return PyUnicode_FromString(mf_recorder_string(id));
}

/* The calling thread's scope (what its allocations carry) as a str. */
static PyObject *py_thread_scope(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyUnicode_FromString(memflow_scope_current());
}

/* ---- configuration, state, dump ------------------------------------------- */

/* set_config(keys, values): two tuples of UTF-8 bytes, applied all or none. */
static PyObject *py_set_config(PyObject *self, PyObject *args)
{
    (void)self;
    enum { MAX_PAIRS = 64 };
    PyObject *keys, *vals;
    if (!PyArg_ParseTuple(args, "O!O!:set_config", &PyTuple_Type, &keys, &PyTuple_Type, &vals))
        return NULL;
    Py_ssize_t n = PyTuple_Size(keys);
    if (n != PyTuple_Size(vals) || n > MAX_PAIRS) {
        PyErr_Format(PyExc_ValueError, "set_config: %zd keys and %zd values (at most %d pairs)",
                     n, PyTuple_Size(vals), (int)MAX_PAIRS);
        return NULL;
    }
    const char *k[MAX_PAIRS], *v[MAX_PAIRS];
    for (Py_ssize_t i = 0; i < n; i++) {
        k[i] = PyBytes_AsString(PyTuple_GetItem(keys, i));
        v[i] = PyBytes_AsString(PyTuple_GetItem(vals, i));
        if (!k[i] || !v[i])
            return NULL;
    }
    if (memflow_set_config((int)n, k, v) < 0)
        return memflow_error();
    Py_RETURN_NONE;
}

/* The calls below may take long (a dump waits for `memflow serve`): they let other
 * threads run. */
static PyObject *py_set_state(PyObject *self, PyObject *arg)
{
    (void)self;
    int run = PyObject_IsTrue(arg);
    if (run < 0)
        return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = memflow_set_state(run ? MEMFLOW_RUN : MEMFLOW_STOP);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return memflow_error();
    Py_RETURN_NONE;
}

static PyObject *py_pause(PyObject *self, PyObject *arg)
{
    (void)self;
    int pause = PyObject_IsTrue(arg);
    if (pause < 0)
        return NULL;
    if (pause)
        memflow_pause();
    else
        memflow_resume();
    Py_RETURN_NONE;
}

static PyObject *py_dump(PyObject *self, PyObject *arg)
{
    (void)self;
    int finished = PyObject_IsTrue(arg);
    if (finished < 0)
        return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = memflow_dump(finished);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return memflow_error();
    Py_RETURN_NONE;
}

/*
 * memflow_dumps()'s text lives until the next call from any thread; with
 * the GIL released another thread could make that call, so the text is
 * copied while this lock is held (taken without the GIL: no deadlock).
 */
static pthread_mutex_t dumps_lock = PTHREAD_MUTEX_INITIALIZER;

static PyObject *py_dumps(PyObject *self, PyObject *args)
{
    (void)self;
    int reset, ascending;
    const char *format, *sort_by;
    if (!PyArg_ParseTuple(args, "pssp:dumps", &reset, &format, &sort_by, &ascending))
        return NULL;
    char *copy = NULL;
    const char *text;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&dumps_lock);
    text = memflow_dumps(reset, format, sort_by, ascending);
    if (text) {
        MF_INTERNAL_BEGIN();
        copy = strdup(text);
        MF_INTERNAL_END();
    }
    pthread_mutex_unlock(&dumps_lock);
    Py_END_ALLOW_THREADS
    if (!text)
        return memflow_error();
    if (!copy)
        return PyErr_NoMemory();
    PyObject *result = PyUnicode_DecodeUTF8(copy, (Py_ssize_t)strlen(copy), "replace");
    MF_INTERNAL_BEGIN();
    free(copy);
    MF_INTERNAL_END();
    return result;
}

/* ---- trace objects ------------------------------------------------------- */

#define DOMAIN_CAPSULE "memflow_domain"
#define OBJECT_CAPSULE "memflow_object"

static void object_capsule_free(PyObject *capsule)
{
    memflow_object_destroy(PyCapsule_GetPointer(capsule, OBJECT_CAPSULE));
}

/* The domain behind a capsule, or NULL for None; sets an error on a bad one. */
static memflow_domain *domain_of(PyObject *capsule, int *bad)
{
    *bad = 0;
    if (capsule == Py_None)
        return NULL;
    memflow_domain *d = PyCapsule_GetPointer(capsule, DOMAIN_CAPSULE);
    *bad = d == NULL;
    return d;
}

static PyObject *py_domain_create(PyObject *self, PyObject *args)
{
    (void)self;
    const char *name;
    if (!PyArg_ParseTuple(args, "s:domain_create", &name))
        return NULL;
    memflow_domain *d = memflow_domain_create(name);
    return d ? PyCapsule_New(d, DOMAIN_CAPSULE, NULL) : memflow_error();
}

/* object_create(kind, domain capsule or None, name); kind 0..3 = task,
 * frame, event, counter. */
static PyObject *py_object_create(PyObject *self, PyObject *args)
{
    (void)self;
    int kind, bad;
    PyObject *domain_capsule;
    const char *name;
    if (!PyArg_ParseTuple(args, "iOs:object_create", &kind, &domain_capsule, &name))
        return NULL;
    memflow_domain *d = domain_of(domain_capsule, &bad);
    if (bad)
        return NULL;
    memflow_object *o = kind == 0   ? memflow_task_create(d, name)
                        : kind == 1 ? memflow_frame_create(d, name)
                        : kind == 2 ? memflow_event_create(name)
                                    : memflow_counter_create(d, name);
    if (!o)
        return memflow_error();
    PyObject *capsule = PyCapsule_New(o, OBJECT_CAPSULE, object_capsule_free);
    if (!capsule)
        memflow_object_destroy(o);
    return capsule;
}

static memflow_object *object_of(PyObject *capsule)
{
    return PyCapsule_GetPointer(capsule, OBJECT_CAPSULE);
}

/* object_span(capsule, begin): start (begin true) or stop a task, frame or event. */
static PyObject *py_object_span(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule;
    int begin;
    if (!PyArg_ParseTuple(args, "Op:object_span", &capsule, &begin))
        return NULL;
    memflow_object *o = object_of(capsule);
    if (!o)
        return NULL;
    if ((begin ? memflow_object_start(o) : memflow_object_stop(o)) < 0)
        return memflow_error();
    Py_RETURN_NONE;
}

/* counter_change(capsule, value, add): set the value, or add it. */
static PyObject *py_counter_change(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule;
    long long value;
    int add;
    if (!PyArg_ParseTuple(args, "OLp:counter_change", &capsule, &value, &add))
        return NULL;
    memflow_object *o = object_of(capsule);
    if (!o)
        return NULL;
    int rc = add ? memflow_counter_add(o, value) : memflow_counter_set(o, value);
    if (rc < 0)
        return memflow_error();
    Py_RETURN_NONE;
}

static PyObject *py_counter_value(PyObject *self, PyObject *capsule)
{
    (void)self;
    memflow_object *o = object_of(capsule);
    return o ? PyLong_FromLongLong(memflow_counter_value(o)) : NULL;
}

static PyObject *py_mark(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *domain_capsule;
    const char *name;
    int scope, bad;
    if (!PyArg_ParseTuple(args, "Osi:mark", &domain_capsule, &name, &scope))
        return NULL;
    memflow_domain *d = domain_of(domain_capsule, &bad);
    if (bad)
        return NULL;
    if (memflow_mark(d, name, (memflow_marker_scope)scope) < 0)
        return memflow_error();
    Py_RETURN_NONE;
}

/* ---- custom allocators ---------------------------------------------------- */

static PyObject *py_record_alloc(PyObject *self, PyObject *args)
{
    (void)self;
    const char *device, *name;
    unsigned long long addr, requested, actual;
    unsigned flags;
    if (!PyArg_ParseTuple(args, "sKKKzI:record_alloc", &device, &addr, &requested, &actual,
                          &name, &flags))
        return NULL;
    if (memflow_record_alloc(device, (const void *)(uintptr_t)addr, (size_t)requested,
                             (size_t)actual, name, flags) < 0)
        return memflow_error();
    Py_RETURN_NONE;
}

static PyObject *py_record_free(PyObject *self, PyObject *args)
{
    (void)self;
    const char *device;
    unsigned long long addr;
    if (!PyArg_ParseTuple(args, "sK:record_free", &device, &addr))
        return NULL;
    if (memflow_record_free(device, (const void *)(uintptr_t)addr) < 0)
        return memflow_error();
    Py_RETURN_NONE;
}

/* ---- tensors: names, roles, steps --------------------------------------------- */

/* The string id of a str (0 with an exception set when it is none). */
static uint32_t intern_name(PyObject *name)
{
    PyObject *bytes = PyUnicode_AsUTF8String(name);
    char *text;
    Py_ssize_t len;
    uint32_t id = 0;
    if (bytes && PyBytes_AsStringAndSize(bytes, &text, &len) == 0)
        id = mf_recorder_intern(text, (size_t)len);
    Py_XDECREF(bytes);
    return id;
}

/* name_block(device, addr, name, role): the block live at addr on device
 * (cpu/0 = 0, gpu/N = 0x100 | N) is `name`, of role enum mf_block_role. */
static PyObject *py_name_block(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned device, role;
    unsigned long long addr;
    PyObject *name;
    if (!PyArg_ParseTuple(args, "IKUI:name_block", &device, &addr, &name, &role))
        return NULL;
    uint32_t id = intern_name(name);
    if (!id)
        return NULL;
    mf_recorder_trace(MF_TRACE_BLOCK_NAME, 0, addr, 0, id, (device & 0xffffu) | role << 16);
    Py_RETURN_NONE;
}

/* step(optimizer, number): optimizer's step `number` begins (a mark). */
static PyObject *py_step(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *name;
    unsigned long long number;
    if (!PyArg_ParseTuple(args, "UK:step", &name, &number))
        return NULL;
    uint32_t id = intern_name(name);
    if (!id)
        return NULL;
    mf_recorder_trace(MF_TRACE_STEP, 0, number, 0, id, MF_MARKER_PROCESS);
    Py_RETURN_NONE;
}

/* ---- what this process has ------------------------------------------------ */

/* note_cpu_heap_off(): the log says its process's CPU heap is not recorded. */
static PyObject *py_note_cpu_heap_off(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    mf_recorder_note(MF_NOTE_CPU_HEAP_OFF, 0);
    Py_RETURN_NONE;
}

/* Whether libmemflow-preload.so (CPU heap capture) is in this process. */
static PyObject *py_cpu_capture(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    void *h = dlopen("libmemflow-preload.so", RTLD_LAZY | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return PyBool_FromLong(h != NULL);
}

/* The CUDA plugin: next to the libmemflow this module uses (a build tree's
 * .libs), else where it is installed; None if neither has it. */
static PyObject *py_gpu_plugin(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    char path[PATH_MAX];
    Dl_info info;
    if (dladdr((void *)memflow_set_state, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        int dir_len = slash ? (int)(slash - info.dli_fname) : 1;
        snprintf(path, sizeof path, "%.*s/libmemflow-cuda.so", dir_len,
                 slash ? info.dli_fname : ".");
        if (access(path, R_OK) == 0)
            return PyUnicode_DecodeFSDefault(path);
    }
    snprintf(path, sizeof path, "%s/libmemflow-cuda.so", MEMFLOW_PKGLIBDIR);
    if (access(path, R_OK) == 0)
        return PyUnicode_DecodeFSDefault(path);
    Py_RETURN_NONE;
}

/* Whether the GPU plugin records this process's GPU memory through CUPTI
 * (and so holds CUPTI: torch.profiler's CUDA activities cannot have it). */
static PyObject *py_gpu_capture_on(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyBool_FromLong(mf_cuda_capture_on());
}

static PyObject *py_log_path(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    const char *path = mf_recorder_log_path();
    if (!path)
        Py_RETURN_NONE;
    return PyUnicode_DecodeFSDefault(path);
}

/* Whether the profiler records now (running and not paused). */
static PyObject *py_recording(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyBool_FromLong(mf_recording == 1);
}

/* The torch_scopes configuration key (PyTorch module scopes without code). */
static PyObject *py_torch_scopes(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyBool_FromLong(mf_config_get()->torch_scopes);
}

/* ---- the module ------------------------------------------------------------ */

static PyMethodDef module_methods[] = {
    { "scope_push", py_scope_push, METH_O, "scope_push(name): enter a scope, appended" },
    { "scope_push_whole", py_scope_push_whole, METH_O,
      "scope_push_whole(name): enter a scope, not appended" },
    { "scope_pop", py_scope_pop, METH_NOARGS, "scope_pop(): leave the scope last entered" },
    { "current_scope", py_current_scope, METH_NOARGS, "the context's current scope" },
    { "thread_scope", py_thread_scope, METH_NOARGS, "the thread's current scope" },
    { "set_config", py_set_config, METH_VARARGS, "set_config(keys, values): bytes tuples" },
    { "set_state", py_set_state, METH_O, "set_state(run): start (True) or stop recording" },
    { "pause", py_pause, METH_O, "pause(True) pauses, pause(False) resumes" },
    { "dump", py_dump, METH_O, "dump(finished): flush and write the outputs" },
    { "dumps", py_dumps, METH_VARARGS, "dumps(reset, format, sort_by, ascending) -> str" },
    { "domain_create", py_domain_create, METH_VARARGS, "domain_create(name) -> capsule" },
    { "object_create", py_object_create, METH_VARARGS,
      "object_create(kind, domain, name) -> capsule; kind 0 task, 1 frame, 2 event, 3 counter" },
    { "object_span", py_object_span, METH_VARARGS,
      "object_span(object, begin): start or stop a task, frame or event" },
    { "counter_change", py_counter_change, METH_VARARGS,
      "counter_change(counter, value, add): set or add" },
    { "counter_value", py_counter_value, METH_O, "a counter's value" },
    { "mark", py_mark, METH_VARARGS, "mark(domain, name, scope): an instant" },
    { "record_alloc", py_record_alloc, METH_VARARGS,
      "record_alloc(device, addr, requested, actual, name, flags)" },
    { "record_free", py_record_free, METH_VARARGS, "record_free(device, addr)" },
    { "name_block", py_name_block, METH_VARARGS,
      "name_block(device, addr, name, role): name the live block at addr (device: cpu/0 0, "
      "gpu/N 0x100 | N; role: 1 parameter, 2 gradient, 3 optimizer state, 4 activation, "
      "5 input, 6 temporary, 7 other)" },
    { "step", py_step, METH_VARARGS, "step(optimizer, number): an optimizer step begins" },
    { "cpu_capture", py_cpu_capture, METH_NOARGS, "whether CPU heap capture is loaded" },
    { "note_cpu_heap_off", py_note_cpu_heap_off, METH_NOARGS,
      "note in the log that this process's CPU heap is not recorded" },
    { "gpu_plugin", py_gpu_plugin, METH_NOARGS, "path of libmemflow-cuda.so, or None" },
    { "gpu_capture_on", py_gpu_capture_on, METH_NOARGS,
      "whether memflow records this process's GPU memory through CUPTI (and holds it)" },
    { "log_path", py_log_path, METH_NOARGS, "the open log's path, or None" },
    { "recording", py_recording, METH_NOARGS, "whether the profiler records now" },
    { "torch_scopes", py_torch_scopes, METH_NOARGS, "the torch_scopes configuration key" },
    { NULL, NULL, 0, NULL },
};

static int module_exec(PyObject *module)
{
    PyObject *contextvars = PyImport_ImportModule("contextvars");
    if (!contextvars)
        return -1;
    PyObject *make = PyObject_GetAttrString(contextvars, "ContextVar");
    Py_DECREF(contextvars);
    PyObject *args = Py_BuildValue("(s)", "memflow_scope");
    PyObject *kwargs = Py_BuildValue("{sO}", "default", Py_None);
    scope_var = make && args && kwargs ? PyObject_Call(make, args, kwargs) : NULL;
    Py_XDECREF(make);
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    if (!scope_var)
        return -1;
    scope_var_get = PyObject_GetAttrString(scope_var, "get");
    scope_var_set = PyObject_GetAttrString(scope_var, "set");
    name_cache = PyDict_New();
    PyObject *scope_type = PyType_FromSpec(&scope_spec);
    if (!scope_var_get || !scope_var_set || !name_cache || !scope_type)
        return -1;
    if (mf_pystacks_add(module) < 0)
        return -1;
    if (PyModule_AddObject(module, "scope", scope_type) < 0) {
        Py_DECREF(scope_type);
        return -1;
    }
    if (PyModule_AddFunctions(module, mf_py_torch_methods) < 0)   /* torch_live.c */
        return -1;
    return PyModule_AddStringConstant(module, "VERSION", MEMFLOW_VERSION);
}

static PyModuleDef_Slot module_slots[] = {
    { Py_mod_exec, module_exec },
    { 0, NULL },
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "memflow._memflow",
    "libmemflow for Python: the binding under the memflow package.", 0, module_methods,
    module_slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__memflow(void); /* the one symbol Python looks for */

PyMODINIT_FUNC PyInit__memflow(void)
{
    return PyModuleDef_Init(&module_def);
}
