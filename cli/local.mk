# cli/ - the `memflow` command (run, stats, render).
bin_PROGRAMS += memflow
memflow_SOURCES = cli/main.c cli/commands.h cli/cmd_run.c cli/cmd_stats.c \
	cli/cmd_render.c cli/load.c cli/options.c cli/options.h \
	cli/run.h cli/run_child.c cli/run_logs.c
memflow_LDADD = libmemflow-render.la libmemflow.la
