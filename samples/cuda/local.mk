# samples/cuda/ - CUDA samples: the seed's MLP on the GPU, a caching
# allocator that reports its blocks, a timed cudaMalloc/cudaFree loop, and
# the probes of the GPU-machine procedure (bench/gpu-remote.sh): every memory
# kind, 100,000 allocations with flushes in flight, clock brackets.
# Compiled with nvcc when configure finds it; not installed and not run by
# make check (they need a GPU).  This file is ALREADY included from
# gpu/local.mk: do not include it again from samples/local.mk (automake would
# see every variable twice).  nvcc compiles each .cu to NAME_cu.o (not NAME.cu.o,
# which make's built-in "%: %.o" rule would take for the .cu's source); libtool
# links it with libmemflow and the CUDA runtime like any other program.
EXTRA_DIST += samples/cuda/mlp_gpu.cu samples/cuda/caching_allocator.cu samples/cuda/alloc_loop.cu \
	samples/cuda/memory_kinds.cu samples/cuda/alloc_stress.cu samples/cuda/clock_probe.cu

if HAVE_NVCC
noinst_PROGRAMS += samples/cuda/mlp_gpu samples/cuda/caching_allocator samples/cuda/alloc_loop \
	samples/cuda/memory_kinds samples/cuda/alloc_stress samples/cuda/clock_probe
CUDA_SAMPLE_NVCCFLAGS = -O2 -I$(builddir)/include
CUDA_SAMPLE_LIBS = libmemflow.la -L$(CUDA_DIR)/lib64 -lcudart -lstdc++ -lm
CUDA_SAMPLE_LINKFLAGS = -no-install -Wl,-rpath,$(CUDA_DIR)/lib64
# Compile samples/cuda/NAME.cu (the rule's first prerequisite) to NAME_cu.o.
CUDA_SAMPLE_COMPILE = $(AM_V_GEN)$(MKDIR_P) samples/cuda && \
	$(NVCC) $(CUDA_SAMPLE_NVCCFLAGS) -c -o $@

samples_cuda_mlp_gpu_SOURCES =
samples_cuda_mlp_gpu_LDADD = samples/cuda/mlp_gpu_cu.o $(CUDA_SAMPLE_LIBS)
samples_cuda_mlp_gpu_LDFLAGS = $(CUDA_SAMPLE_LINKFLAGS)
samples_cuda_mlp_gpu_DEPENDENCIES = samples/cuda/mlp_gpu_cu.o libmemflow.la
samples/cuda/mlp_gpu_cu.o: $(srcdir)/samples/cuda/mlp_gpu.cu include/memflow.h
	$(CUDA_SAMPLE_COMPILE) $(srcdir)/samples/cuda/mlp_gpu.cu

samples_cuda_caching_allocator_SOURCES =
samples_cuda_caching_allocator_LDADD = samples/cuda/caching_allocator_cu.o $(CUDA_SAMPLE_LIBS)
samples_cuda_caching_allocator_LDFLAGS = $(CUDA_SAMPLE_LINKFLAGS)
samples_cuda_caching_allocator_DEPENDENCIES = samples/cuda/caching_allocator_cu.o libmemflow.la
samples/cuda/caching_allocator_cu.o: $(srcdir)/samples/cuda/caching_allocator.cu \
		include/memflow.h
	$(CUDA_SAMPLE_COMPILE) $(srcdir)/samples/cuda/caching_allocator.cu

samples_cuda_alloc_loop_SOURCES =
samples_cuda_alloc_loop_LDADD = samples/cuda/alloc_loop_cu.o -L$(CUDA_DIR)/lib64 -lcudart -lstdc++
samples_cuda_alloc_loop_LDFLAGS = $(CUDA_SAMPLE_LINKFLAGS)
samples_cuda_alloc_loop_DEPENDENCIES = samples/cuda/alloc_loop_cu.o
samples/cuda/alloc_loop_cu.o: $(srcdir)/samples/cuda/alloc_loop.cu
	$(CUDA_SAMPLE_COMPILE) $(srcdir)/samples/cuda/alloc_loop.cu

samples_cuda_memory_kinds_SOURCES =
samples_cuda_memory_kinds_LDADD = samples/cuda/memory_kinds_cu.o $(CUDA_SAMPLE_LIBS)
samples_cuda_memory_kinds_LDFLAGS = $(CUDA_SAMPLE_LINKFLAGS)
samples_cuda_memory_kinds_DEPENDENCIES = samples/cuda/memory_kinds_cu.o libmemflow.la
samples/cuda/memory_kinds_cu.o: $(srcdir)/samples/cuda/memory_kinds.cu include/memflow.h
	$(CUDA_SAMPLE_COMPILE) $(srcdir)/samples/cuda/memory_kinds.cu

# alloc_stress calls memflow_dumps (libmemflow).
samples_cuda_alloc_stress_SOURCES =
samples_cuda_alloc_stress_LDADD = samples/cuda/alloc_stress_cu.o libmemflow.la \
	$(CUDA_SAMPLE_LIBS)
samples_cuda_alloc_stress_LDFLAGS = $(CUDA_SAMPLE_LINKFLAGS)
samples_cuda_alloc_stress_DEPENDENCIES = samples/cuda/alloc_stress_cu.o libmemflow.la
samples/cuda/alloc_stress_cu.o: $(srcdir)/samples/cuda/alloc_stress.cu include/memflow.h
	$(CUDA_SAMPLE_COMPILE) $(srcdir)/samples/cuda/alloc_stress.cu

samples_cuda_clock_probe_SOURCES =
samples_cuda_clock_probe_LDADD = samples/cuda/clock_probe_cu.o -L$(CUDA_DIR)/lib64 -lcudart -lstdc++
samples_cuda_clock_probe_LDFLAGS = $(CUDA_SAMPLE_LINKFLAGS)
samples_cuda_clock_probe_DEPENDENCIES = samples/cuda/clock_probe_cu.o
samples/cuda/clock_probe_cu.o: $(srcdir)/samples/cuda/clock_probe.cu
	$(CUDA_SAMPLE_COMPILE) $(srcdir)/samples/cuda/clock_probe.cu

CLEANFILES += samples/cuda/mlp_gpu_cu.o samples/cuda/caching_allocator_cu.o \
	samples/cuda/alloc_loop_cu.o samples/cuda/memory_kinds_cu.o samples/cuda/alloc_stress_cu.o \
	samples/cuda/clock_probe_cu.o
endif
