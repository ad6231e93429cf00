# samples/ - small real programs that show what memflow is for: the seed
# tutorials' MLP (per-layer scopes, forward and backward) and MXNet's
# "trace" example (first-run set-up).  They use only memflow's scope API and
# link the uninstalled libmemflow directly (-no-install: no libtool wrapper
# script), so `memflow run -- samples/mlp` profiles the program itself.
noinst_PROGRAMS += samples/mlp samples/trace

samples_mlp_SOURCES = samples/mlp.c
samples_mlp_LDADD = libmemflow.la -lm
samples_mlp_LDFLAGS = -no-install

samples_trace_SOURCES = samples/trace.c
samples_trace_LDADD = libmemflow.la
samples_trace_LDFLAGS = -no-install
