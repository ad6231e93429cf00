# cli/ - the `memflow` command (run, stats, render, serve).
bin_PROGRAMS += memflow
memflow_SOURCES = cli/main.c cli/commands.h cli/cmd_run.c cli/cmd_stats.c \
	cli/cmd_render.c cli/cmd_serve.c cli/load.c cli/options.c cli/options.h
memflow_LDADD = libmemflow-render.la libmemflow.la
