/*
 * mlp_gpu.cu - the seed tutorial's MLP on the GPU, the CUDA sample of
 * memflow's mission: which layer (scope) holds GPU memory, what the pool
 * does, what is never freed.
 *
 * Net (MXNet Gluon names): Dense 128 tanh, Dropout 0.5, Dense 64 tanh,
 * Dense 32, ReLU; forward and backward on a 16 x 10 batch, real float math
 * in small kernels.  Each layer's weights, bias and output are cudaMalloc'd
 * inside its memflow scope (net_dense0:, net_dropout0:, ...); the backward
 * pass runs in "backward:" with each layer appended (backward:net_dense0:).
 * Per-step temporaries come from stream-ordered pools (cudaMallocFromPoolAsync
 * on a pool of our own, cudaMallocAsync on the device's default pool),
 * the loss is read back through pinned host memory (cudaMallocHost), and the
 * ReLU output is deliberately never freed: the leak the outputs must show.
 *
 * Run: memflow run -o out -- samples/cuda/mlp_gpu   (needs a CUDA GPU)
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "memflow.h"

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t err_ = (call);                                                    \
        if (err_ != cudaSuccess) {                                                    \
            fprintf(stderr, "mlp_gpu: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,    \
                    cudaGetErrorString(err_));                                        \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

enum { BATCH = 16, INPUTS = 10, THREADS = 128 };

static unsigned blocks_for(int n)
{
    return (unsigned)((n + THREADS - 1) / THREADS);
}

/* ---- kernels ------------------------------------------------------------ */

/* y[b][o] = sum_i x[b][i] * w[i][o] + bias[o] */
__global__ void dense_forward(const float *x, const float *w, const float *bias, float *y,
                              int in, int out)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= BATCH * out)
        return;
    int b = k / out, o = k % out;
    float sum = bias[o];
    for (int i = 0; i < in; i++)
        sum += x[b * in + i] * w[i * out + o];
    y[k] = sum;
}

__global__ void tanh_forward(float *y, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n)
        y[k] = tanhf(y[k]);
}

__global__ void relu_forward(const float *x, float *y, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n)
        y[k] = x[k] > 0.0f ? x[k] : 0.0f;
}

/* Inverted dropout with a hash mask: keep with probability 1 - p. */
__global__ void dropout_forward(const float *x, float *y, float *mask, int n, float p,
                                unsigned seed)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n)
        return;
    unsigned h = (unsigned)k * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    float keep = (h & 0xffff) / 65536.0f >= p ? 1.0f / (1.0f - p) : 0.0f;
    mask[k] = keep;
    y[k] = x[k] * keep;
}

/* d = (y - target) for the squared-error loss; loss partial sums. */
__global__ void loss_grad(const float *y, float *d, float *loss, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n)
        return;
    float target = (k % 3 == 0) ? 1.0f : 0.0f;
    d[k] = y[k] - target;
    atomicAdd(loss, 0.5f * d[k] * d[k]);
}

__global__ void relu_backward(const float *y, float *d, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n && y[k] <= 0.0f)
        d[k] = 0.0f;
}

__global__ void tanh_backward(const float *y, float *d, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n)
        d[k] *= 1.0f - y[k] * y[k];
}

__global__ void mask_backward(const float *mask, float *d, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n)
        d[k] *= mask[k];
}

/* dw[i][o] = sum_b x[b][i] * dy[b][o];  db[o] = sum_b dy[b][o] */
__global__ void dense_backward_weights(const float *x, const float *dy, float *dw, float *db,
                                       int in, int out)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= in * out)
        return;
    int i = k / out, o = k % out;
    float sum = 0.0f, bias_sum = 0.0f;
    for (int b = 0; b < BATCH; b++) {
        sum += x[b * in + i] * dy[b * out + o];
        bias_sum += dy[b * out + o];
    }
    dw[k] = sum;
    if (i == 0)
        db[o] = bias_sum;
}

/* dx[b][i] = sum_o dy[b][o] * w[i][o] */
__global__ void dense_backward_input(const float *dy, const float *w, float *dx, int in, int out)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= BATCH * in)
        return;
    int b = k / in, i = k % in;
    float sum = 0.0f;
    for (int o = 0; o < out; o++)
        sum += dy[b * out + o] * w[i * out + o];
    dx[k] = sum;
}

/* ---- layers ------------------------------------------------------------- */

typedef struct dense {
    const char *scope;
    int in, out, activation_tanh;
    float *w, *bias, *y;     /* parameters and output, cudaMalloc'd */
    float *dw, *dbias, *dx;  /* gradients, cudaMalloc'd in backward: */
} dense;

/* What the program itself allocated, to compare with what memflow counted. */
static int allocations_made, frees_made;

static float *device_floats(size_t n)
{
    float *p = NULL;
    CHECK(cudaMalloc((void **)&p, n * sizeof(float)));
    allocations_made++;
    return p;
}

static void device_free(void *p)
{
    CHECK(cudaFree(p));
    frees_made++;
}

/* Deterministic small weights, copied up through a host buffer. */
static void dense_init(dense *layer, const char *scope, int in, int out, int activation_tanh)
{
    layer->scope = scope;
    layer->in = in;
    layer->out = out;
    layer->activation_tanh = activation_tanh;
    MEMFLOW_SCOPE(scope) {
        layer->w = device_floats((size_t)in * out);
        layer->bias = device_floats((size_t)out);
        layer->y = device_floats((size_t)BATCH * out);
    }
    float *host = (float *)malloc((size_t)in * out * sizeof(float));
    for (int k = 0; k < in * out; k++)
        host[k] = 0.1f * sinf(0.37f * (float)k + (float)out);
    CHECK(cudaMemcpy(layer->w, host, (size_t)in * out * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(layer->bias, 0, (size_t)out * sizeof(float)));
    free(host);
}

static void dense_forward_run(dense *layer, const float *x)
{
    int n = BATCH * layer->out;
    dense_forward<<<blocks_for(n), THREADS>>>(x, layer->w, layer->bias, layer->y, layer->in,
                                              layer->out);
    if (layer->activation_tanh)
        tanh_forward<<<blocks_for(n), THREADS>>>(layer->y, n);
}

/* dy (BATCH x out) in, gradients and dx (BATCH x in) out. */
static void dense_backward_run(dense *layer, const float *x, float *dy)
{
    int n = BATCH * layer->out;
    MEMFLOW_SCOPE_APPEND(layer->scope) {
        layer->dw = device_floats((size_t)layer->in * layer->out);
        layer->dbias = device_floats((size_t)layer->out);
        layer->dx = device_floats((size_t)BATCH * layer->in);
    }
    if (layer->activation_tanh)
        tanh_backward<<<blocks_for(n), THREADS>>>(layer->y, dy, n);
    dense_backward_weights<<<blocks_for(layer->in * layer->out), THREADS>>>(
        x, dy, layer->dw, layer->dbias, layer->in, layer->out);
    dense_backward_input<<<blocks_for(BATCH * layer->in), THREADS>>>(dy, layer->w, layer->dx,
                                                                     layer->in, layer->out);
}

static void dense_free(dense *layer)
{
    device_free(layer->w);
    device_free(layer->bias);
    device_free(layer->y);
    device_free(layer->dw);
    device_free(layer->dbias);
    device_free(layer->dx);
}

/* A stream-ordered pool for per-step temporaries (cudaMallocAsync). */
static cudaMemPool_t make_pool(int device)
{
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool;
    CHECK(cudaMemPoolCreate(&pool, &props));
    unsigned long long threshold = 1 << 20;
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    return pool;
}

int main(void)
{
    int device = 0;
    CHECK(cudaGetDevice(&device));
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    cudaMemPool_t pool = make_pool(device);

    float *x = NULL;
    MEMFLOW_SCOPE("data") {
        x = device_floats(BATCH * INPUTS);
    }
    float host_x[BATCH * INPUTS];
    for (int k = 0; k < BATCH * INPUTS; k++)
        host_x[k] = cosf(0.5f * (float)k);
    CHECK(cudaMemcpy(x, host_x, sizeof host_x, cudaMemcpyHostToDevice));

    dense dense0, dense1, dense2;
    dense_init(&dense0, "net_dense0", INPUTS, 128, 1);
    float *dropout_y = NULL, *dropout_mask = NULL, *relu_y = NULL;
    MEMFLOW_SCOPE("net_dropout0") {
        dropout_y = device_floats(BATCH * 128);
        dropout_mask = device_floats(BATCH * 128);
    }
    dense_init(&dense1, "net_dense1", 128, 64, 1);
    dense_init(&dense2, "net_dense2", 64, 32, 0);
    MEMFLOW_SCOPE("net_relu0") {
        relu_y = device_floats(BATCH * 32); /* never freed: the deliberate leak */
    }

    /* forward */
    dense_forward_run(&dense0, x);
    dropout_forward<<<blocks_for(BATCH * 128), THREADS>>>(dense0.y, dropout_y, dropout_mask,
                                                          BATCH * 128, 0.5f, 42u);
    dense_forward_run(&dense1, dropout_y);
    dense_forward_run(&dense2, dense1.y);
    relu_forward<<<blocks_for(BATCH * 32), THREADS>>>(dense2.y, relu_y, BATCH * 32);

    /* loss and its gradient: temporaries from the pool */
    float *d_out = NULL, *d_loss = NULL;
    MEMFLOW_SCOPE("loss") {
        CHECK(cudaMallocFromPoolAsync((void **)&d_out, BATCH * 32 * sizeof(float), pool, stream));
        CHECK(cudaMallocAsync((void **)&d_loss, sizeof(float), stream)); /* default pool */
        allocations_made += 2;
    }
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemset(d_loss, 0, sizeof(float)));
    loss_grad<<<blocks_for(BATCH * 32), THREADS>>>(relu_y, d_out, d_loss, BATCH * 32);
    relu_backward<<<blocks_for(BATCH * 32), THREADS>>>(relu_y, d_out, BATCH * 32);

    /* backward */
    memflow_scope_push("backward", 0);
    dense_backward_run(&dense2, dense1.y, d_out);
    dense_backward_run(&dense1, dropout_y, dense2.dx);
    mask_backward<<<blocks_for(BATCH * 128), THREADS>>>(dropout_mask, dense1.dx, BATCH * 128);
    dense_backward_run(&dense0, x, dense1.dx);
    memflow_scope_pop();

    float *host_loss = NULL;
    MEMFLOW_SCOPE("result") {
        CHECK(cudaMallocHost((void **)&host_loss, sizeof(float)));
        allocations_made++;
    }
    CHECK(cudaMemcpy(host_loss, d_loss, sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaDeviceSynchronize());
    printf("mlp_gpu: loss %.6f on device %d\n", *host_loss, device);

    CHECK(cudaFreeAsync(d_out, stream));
    CHECK(cudaFreeAsync(d_loss, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaFreeHost(host_loss));
    frees_made += 3;
    dense_free(&dense0);
    dense_free(&dense1);
    dense_free(&dense2);
    device_free(dropout_y);
    device_free(dropout_mask);
    device_free(x);
    CHECK(cudaMemPoolDestroy(pool));
    CHECK(cudaStreamDestroy(stream));
    printf("mlp_gpu: %d GPU allocations made, %d freed (the ReLU output is leaked)\n",
           allocations_made, frees_made);
    return 0;
}
