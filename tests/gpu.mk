# tests/gpu.mk
