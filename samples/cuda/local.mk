# samples/cuda/ - CUDA samples, built with nvcc when configure finds it; not
# installed and not run by make check (this machine has no GPU).  Included
# from gpu/local.mk.
EXTRA_DIST += samples/cuda/mlp_gpu.cu samples/cuda/caching_allocator.cu
