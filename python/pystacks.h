/*
 * pystacks.h - Python call stacks of allocations (pystacks.c), part of the
 * memflow._memflow extension.
 */
#ifndef MEMFLOW_PYSTACKS_H
#define MEMFLOW_PYSTACKS_H

#include <Python.h>

/* Add python_stacks_start(), python_stacks() and the thread bootstrap to
 * the module.  0, or -1 with a Python error set. */
int mf_pystacks_add(PyObject *module);

#endif /* MEMFLOW_PYSTACKS_H */
