# tests/ - Check suites and end-to-end tests; `make check` runs them all.
include tests/core.mk
include tests/render.mk
include tests/svg.mk
include tests/gpu.mk
