# tests/svg.mk
