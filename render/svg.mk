# render/svg.mk - the Cairo memory_flow renderer (owned by the svg work):
# svg.c draws, svg_layout.c places, svg_color.c colours, svg_blocks.c draws
# the blocks, svg_curve.c the occupancy curve, svg_legend.c the legend,
# svg_marks.c the title and axes, svg_overlay.c the hover layer,
# svg_group.c combines the processes past the panel limit into one panel.
# Text goes through the outputs' one sink and escaping module.
libmemflow_analysis_la_SOURCES += \
	render/svg.c \
	render/svg_layout.c render/svg_layout.h \
	render/svg_color.c render/svg_color.h \
	render/svg_blocks.c \
	render/svg_marks.c \
	render/svg_curve.c \
	render/svg_legend.c \
	render/svg_overlay.c \
	render/svg_group.c render/svg_group.h \
	render/svg_panel.h

