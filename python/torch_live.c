/*
 * torch_live.c - PyTorch's allocator history into the running program's log
 * (see torch_live.h): a sink of the snapshot conversion over the recorder's
 * entry points, one converter for the process (incremental: each snapshot
 * adds what the previous ones did not have), and the scopes of tensors.
 *
 * Times: time_us (Unix-epoch microseconds) onto the log's clock through its
 * header's anchor.  Segments: when the GPU capture (CUPTI) records this
 * process's device memory itself, a segment is a SEGMENT record (the
 * analysis matches it with CUPTI's block by address and reports the
 * offset); otherwise it is the GPU's block.  Tensors are sub-blocks either
 * way.
 */
#include "torch_live.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "cuda_seen.h"
#include "log_format.h"
#include "recorder.h"
#include "torch_convert.h"

/*
 * ---- scope changes: the allocator's metadata, or the modules' thread by time ----
 *
 * The allocator keeps one metadata string per device, not per thread, so
 * it follows the scope changes of every Python thread: the thread that
 * runs the modules, and autograd's, which runs the backward (and its
 * backward:... scopes) while that thread waits (seen on an H100: the
 * backward's tensors, more than half of a step's, had no scope while only
 * the modules' thread was listened to).  The time ring keeps the modules'
 * thread alone: a scope by time belongs to one thread.
 */

int mf_py_torch_watching;
static pthread_t watched;          /* the thread the ring follows */
static PyObject *listener;         /* torch.cuda.memory._set_memory_metadata, or NULL */
static uint32_t listened;          /* the scope the listener was told last */

/* The scope changes by time (a torch without _set_memory_metadata): a ring. */
#define RING 65536u
typedef struct change {
    uint64_t time_ns;
    uint32_t scope;
} change;
static change *ring;
static uint64_t ring_next;         /* changes written in all */
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;

void mf_py_torch_scope_changed(void)
{
    uint32_t scope = mf_recorder_current_scope();
    if (ring && pthread_equal(pthread_self(), watched)) {
        uint64_t now = mf_clock_now();
        pthread_mutex_lock(&ring_lock);
        ring[ring_next++ % RING] = (change){ now, scope };
        pthread_mutex_unlock(&ring_lock);
    }
    if (!listener || scope == listened)
        return;
    listened = scope;
    const char *text = scope == MF_STRING_DEFAULT_SCOPE ? "" : mf_recorder_string(scope);
    PyObject *r = PyObject_CallFunction(listener, "s", text);
    if (r) {
        Py_DECREF(r);
        return;
    }
    PyErr_Clear();   /* never break the program: tensors keep the scope they had */
    Py_CLEAR(listener);
    mf_py_torch_watching = ring != NULL;
    fprintf(stderr, "memflow: torch's _set_memory_metadata failed; tensor scopes stop "
            "following the module scope\n");
}

/* The scope current at time_ns on the watched thread (the ring's last
 * change before it), <unk>: before the first one kept. */
static uint32_t scope_at(void *ctx, uint64_t time_ns)
{
    (void)ctx;
    uint32_t scope = MF_STRING_DEFAULT_SCOPE;
    pthread_mutex_lock(&ring_lock);
    if (!ring) {
        pthread_mutex_unlock(&ring_lock);
        return scope;
    }
    uint64_t first = ring_next > RING ? ring_next - RING : 0, lo = first, hi = ring_next;
    while (lo < hi) {   /* the first change after time_ns */
        uint64_t mid = lo + (hi - lo) / 2;
        if (ring[mid % RING].time_ns <= time_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > first)
        scope = ring[(lo - 1) % RING].scope;
    pthread_mutex_unlock(&ring_lock);
    return scope;
}

/* torch_scope_listener(fn, by_time): from now on the calling thread's
 * scope changes go to fn(scope) (the allocator's metadata; "" for
 * <unk>:), or are remembered by time (by_time); (None, False) stops. */
static PyObject *py_scope_listener(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *fn;
    int by_time;
    if (!PyArg_ParseTuple(args, "Op", &fn, &by_time))
        return NULL;
    if (by_time && !ring && !(ring = calloc(RING, sizeof *ring)))
        return PyErr_NoMemory();
    Py_XDECREF(listener);
    listener = fn == Py_None ? NULL : (Py_INCREF(fn), fn);
    listened = 0;
    watched = pthread_self();
    mf_py_torch_watching = listener != NULL || by_time;
    if (!by_time && ring) {
        pthread_mutex_lock(&ring_lock);
        free(ring);
        ring = NULL;
        ring_next = 0;
        pthread_mutex_unlock(&ring_lock);
    }
    if (mf_py_torch_watching)
        mf_py_torch_scope_changed();   /* the scope now */
    Py_RETURN_NONE;
}

/* ---- the sink: the recorder ---- */

static uint32_t sink_intern(void *ctx, const char *text, size_t len)
{
    (void)ctx;
    return mf_recorder_intern(text, len);
}

static uint32_t sink_frame(void *ctx, uint32_t function, uint32_t file, uint32_t line,
                           unsigned kind)
{
    (void)ctx;
    return mf_recorder_frame_ids(function, file, line, kind);
}

static uint32_t sink_stack(void *ctx, const uint64_t *entries, uint32_t depth)
{
    (void)ctx;
    return mf_recorder_stack_of(entries, depth);
}

static void sink_alloc(void *ctx, uint16_t device, unsigned flags, uint64_t time_ns,
                       uint64_t addr, uint64_t requested, uint64_t actual, uint32_t scope,
                       uint32_t stack)
{
    (void)ctx;
    mf_recorder_alloc_with_stack(device, flags, time_ns, addr, requested, actual, scope, 0, 0,
                                 stack);
}

static void sink_free(void *ctx, uint16_t device, unsigned flags, uint64_t time_ns,
                      uint64_t addr)
{
    (void)ctx;
    mf_recorder_free_event(device, flags, time_ns, addr);
}

static void sink_trace(void *ctx, unsigned kind, uint64_t time_ns, uint64_t value, uint32_t arg)
{
    (void)ctx;
    mf_recorder_trace(kind, time_ns, value, 0, 0, arg);
}

static void sink_segment(void *ctx, uint16_t device, unsigned op, uint64_t time_ns,
                         uint64_t addr, uint64_t size)
{
    (void)ctx;
    mf_recorder_segment(device, op, time_ns, addr, size);
}

static void sink_oom(void *ctx, uint16_t device, unsigned route, uint64_t time_ns,
                     uint64_t requested, uint64_t device_free, uint32_t scope, uint32_t stack)
{
    (void)ctx;
    mf_recorder_oom(device, route, time_ns, requested, device_free, 0, scope, stack);
}

static void sink_note(void *ctx, unsigned code, uint64_t time_ns, uint64_t value)
{
    (void)ctx;
    mf_recorder_note_at(code, time_ns, value);
}

/* ---- the conversion ---- */

static mf_torch_convert *converter;   /* one per process: snapshots add up */
static pthread_mutex_t convert_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct bytes_source {
    const char *data;
    size_t len;
} bytes_source;

static mf_pickle_reader *open_bytes(void *arg, char *err, size_t errlen)
{
    bytes_source *b = arg;
    mf_pickle_reader *r = mf_pickle_reader_mem(b->data, b->len);
    if (!r)
        snprintf(err, errlen, "out of memory");
    return r;
}

static mf_torch_convert *converter_new(void)
{
    uint64_t mono, real;
    if (mf_recorder_clock_anchor(&mono, &real) < 0)
        return NULL;
    mf_torch_sink sink = {
        .intern = sink_intern, .frame = sink_frame, .stack = sink_stack,
        .alloc = sink_alloc, .free = sink_free, .trace = sink_trace, .segment = sink_segment,
        .oom = sink_oom, .note = sink_note, .scope_at = scope_at,
    };
    /* segments are records beside CUPTI's blocks when CUPTI records this
     * process's device memory (libmemflow knows: the driver loads the GPU
     * plugin RTLD_LOCAL, out of reach of a symbol lookup) */
    mf_torch_options opt = { .real_ns = real, .mono_ns = mono, .order_origin_ns = mono,
                             .segments_as_records = mf_cuda_capture_on(), .incremental = 1 };
    return mf_torch_convert_new(&sink, &opt);
}

/* The result as a dict (for tests and the Python side's messages). */
static PyObject *result_dict(const mf_torch_result *r)
{
    return Py_BuildValue("{sKsKsKsKsKsKsKsKsKsKsKsKsKsK}", "entries", r->entries, "skipped",
                         r->skipped, "tensors", r->tensors, "tensor_frees", r->tensor_frees,
                         "segments", r->segments, "segment_frees", r->segment_frees,
                         "before_tensors", r->before_tensors, "before_segments",
                         r->before_segments, "ooms", r->ooms, "inconsistent", r->inconsistent,
                         "damaged", r->damaged,
                         "event_order_devices", r->event_order_devices, "first_ns",
                         r->first_ns, "last_ns", r->last_ns);
}

/* torch_history(data): convert the pickled snapshot `data` (a bytes) into the
 * log; a dict of what it did.  ValueError when no log is open or the bytes
 * are not a snapshot memflow reads (the message has the offset). */
static PyObject *py_history(PyObject *self, PyObject *arg)
{
    (void)self;
    char *data;
    Py_ssize_t len;
    if (PyBytes_AsStringAndSize(arg, &data, &len) < 0)
        return NULL;
    Py_INCREF(arg);   /* its bytes are read with the GIL released */
    bytes_source src = { data, (size_t)len };
    char err[512] = "";
    mf_torch_result r;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    MF_INTERNAL_BEGIN();
    pthread_mutex_lock(&convert_lock);
    if (!converter)
        converter = converter_new();
    if (!converter) {
        snprintf(err, sizeof err, "no memflow log is open (start recording first)");
        rc = -1;
    } else {
        rc = mf_torch_convert_run(converter, open_bytes, &src, &r, err, sizeof err);
    }
    pthread_mutex_unlock(&convert_lock);
    MF_INTERNAL_END();
    Py_END_ALLOW_THREADS
    Py_DECREF(arg);
    if (rc != 0) {
        PyErr_Format(PyExc_ValueError, "memflow: PyTorch's allocator history: %s", err);
        return NULL;
    }
    return result_dict(&r);
}

/* torch_history_note(code, value): a NOTE now (MF_NOTE_TORCH_*). */
static PyObject *py_history_note(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned code;
    unsigned long long value;
    if (!PyArg_ParseTuple(args, "IK", &code, &value))
        return NULL;
    if (code < 40 || code > 49) {
        PyErr_Format(PyExc_ValueError, "torch_history_note: code %u is not PyTorch's (40..49)",
                     code);
        return NULL;
    }
    mf_recorder_note_at(code, 0, value);
    Py_RETURN_NONE;
}

/* torch_oom(device, requested, device_limit, device_free): torch's OOM
 * observer saw an allocation fail (the history off: no oom entry). */
static PyObject *py_oom(PyObject *self, PyObject *args)
{
    (void)self;
    int device;
    unsigned long long requested, limit, device_free;
    if (!PyArg_ParseTuple(args, "iKKK", &device, &requested, &limit, &device_free))
        return NULL;
    if (device < 0 || device > 255) {
        PyErr_Format(PyExc_ValueError, "torch_oom: no device %d", device);
        return NULL;
    }
    mf_recorder_oom(MF_DEVICE(MF_DEVICE_GPU, (unsigned)device), MF_OOM_TORCH_OBSERVER, 0,
                    requested, device_free, limit, 0, mf_recorder_stack(0));
    Py_RETURN_NONE;
}

/* The torch_history configuration key (the ring's entries; 0 = off). */
static PyObject *py_history_entries(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromUnsignedLongLong(mf_config_get()->torch_history);
}

PyMethodDef mf_py_torch_methods[] = {
    { "torch_history", py_history, METH_O,
      "torch_history(data): a pickled torch.cuda.memory._snapshot() into the log -> dict" },
    { "torch_history_note", py_history_note, METH_VARARGS,
      "torch_history_note(code, value): a NOTE of PyTorch's history (40..49)" },
    { "torch_oom", py_oom, METH_VARARGS,
      "torch_oom(device, requested, device_limit, device_free): an allocation failed" },
    { "torch_scope_listener", py_scope_listener, METH_VARARGS,
      "torch_scope_listener(fn, by_time): this thread's scope changes to fn, or by time" },
    { "torch_history_entries", py_history_entries, METH_NOARGS,
      "the torch_history configuration key" },
    { NULL, NULL, 0, NULL },
};
