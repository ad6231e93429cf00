# cli/ - the `memflow` program (run, stats, render, compact, serve): the
# analysis (libmemflow-analysis: analyze/, render/), the common sources it
# shares with libmemflow (common/: the configuration compiled in here too)
# and what only the program does, memflow run's side of the staging area
# included (stage_drain.c).  It never links or loads libmemflow: a
# MEMFLOW_AUTOSTART=1 in its environment starts no recorder in it
# (tests/cli_no_recorder.sh).
bin_PROGRAMS += memflow
memflow_SOURCES = cli/main.c cli/commands.h cli/cmd_run.c cli/cmd_stats.c \
	cli/cmd_render.c cli/cmd_compact.c cli/cmd_serve.c cli/load.c cli/options.c cli/options.h \
	cli/python_env.c cli/python_env.h cli/run.h cli/run_child.c cli/run_logs.c \
	cli/run_ahead.c cli/run_stage.c cli/run_analysis.c cli/run_compact.c cli/run_idle.c cli/run_oom.c cli/recover.c \
	$(STAGE_DRAIN_SOURCES) $(CONFIG_SOURCES) cli/cmd_import.c cli/import_log.c cli/import_log.h \
	cli/progress.c cli/progress.h
memflow_LDADD = libmemflow-analysis.la libmemflow-torch.la
# memflow run's side of the staging area (and a reader's recovery of it):
# the memflow program's, tested in tests/check_runtime with the program's
# side.
STAGE_DRAIN_SOURCES = cli/stage_drain.c cli/stage_drain.h
