# tests/render.mk
