/*
 * torch_live.h - PyTorch's allocator history in the running program's log:
 * the extension's side of memflow.torch_history (python/memflow/).  The
 * Python side takes `pickle.dumps(torch.cuda.memory._snapshot())` at
 * dump(), at exit and at an out-of-memory error and hands the bytes here;
 * the one conversion (common/torch/torch_convert.h) writes them through
 * the recorder.  Also the tensors' scopes: the allocator's user metadata
 * kept equal to the scope of the Python thread that changed scope last (the
 * modules' thread, or autograd's during the backward), or the scope changes
 * of the thread that runs the modules remembered with their times.
 */
#ifndef MEMFLOW_PY_TORCH_LIVE_H
#define MEMFLOW_PY_TORCH_LIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The module's functions of this file (torch_history, torch_history_note,
 * torch_oom, torch_scope_listener, torch_history_entries), NULL-ended. */
extern PyMethodDef mf_py_torch_methods[];

/* Nonzero when scope changes are watched (a listener or the time ring). */
extern int mf_py_torch_watching;

/* The calling thread's scope changed (binding.c calls it after every push
 * and pop when mf_py_torch_watching, with the GIL).  The listener hears
 * every thread's; the ring the modules' thread's.  A listener that raises
 * is dropped, said once on stderr: the program never sees the error. */
void mf_py_torch_scope_changed(void);

#endif /* MEMFLOW_PY_TORCH_LIVE_H */
