/*
 * python_env.h - the environment `memflow run` gives a Python program so
 * that `import memflow` works in it and PyTorch modules become scopes with
 * no code change (python/startup/sitecustomize.py).
 */
#ifndef MEMFLOW_PYTHON_ENV_H
#define MEMFLOW_PYTHON_ENV_H

/*
 * Put memflow's Python start-up folder first on PYTHONPATH and name the
 * folder holding the memflow package in MEMFLOW_PYTHONPATH: the build
 * tree's python/ when this memflow runs from a build tree, else the
 * installed ones.  Does nothing when memflow was built without Python.
 */
void cli_python_environment(void);

#endif
