# render/svg.mk - the Cairo memory_flow renderer (owned by the svg work)
