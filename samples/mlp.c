/*
 * mlp.c - sample: the seed tutorial's multi-layer perceptron in plain C.
 *
 * The network of MXNet's profiler tutorial, written out with real float math:
 *
 *     Dense(128, tanh) -> Dropout(0.5) -> Dense(64, tanh) -> Dense(32) -> ReLU
 *
 * One forward and one backward pass on a 16x10 input batch against a fixed
 * target with an L2 loss, then one line with the loss.  Every buffer is a
 * plain malloc made inside a memflow scope named as MXNet Gluon names the
 * layers of a net with prefix "net_" (net_dense0:, net_dropout0:, ...), so
 * `memflow run -- samples/mlp` shows which layer holds what.  The backward
 * pass runs inside "backward" with each layer pushed in append mode, giving
 * backward:net_dense0: and so on.  The program only uses memflow's scope
 * API; its mallocs are seen by the preload library of `memflow run` (run
 * plainly, the scopes are kept but nothing is recorded).
 *
 * What it allocates (malloc, in this order; float = 4 bytes):
 *   <unk>:                  input 16x10 (640 B), target 16x32 (2048 B)
 *   net_dense0:             weight 128x10 (5120), bias 128 (512), out 16x128 (8192)
 *   net_dropout0:           mask 16x128 (2048, bytes), out 16x128 (8192)
 *   net_dense1:             weight 64x128 (32768), bias 64 (256), out 16x64 (4096)
 *   net_dense2:             weight 32x64 (8192), bias 32 (128), out 16x32 (2048)
 *   net_relu0:              out 16x32 (2048)
 *   backward:               loss gradient 16x32 (2048)
 *   backward:net_relu0:     input gradient 16x32 (2048)
 *   backward:net_dense2:    weight grad (8192), bias grad (128), input grad 16x64 (4096)
 *   backward:net_dense1:    weight grad (32768), bias grad (256), input grad 16x128 (8192)
 *   backward:net_dropout0:  input gradient 16x128 (8192)
 *   backward:net_dense0:    weight grad (5120), bias grad (512) (the input needs no grad)
 * 25 allocations, 147,840 bytes requested.  All are freed at the end except
 * ONE DELIBERATE LEAK: the network's output (net_relu0:, 2048 bytes), so the
 * "leaks" part of memflow's outputs has something to show.  (stdio's own
 * buffer for the result line comes on top, in scope <unk>:.)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "memflow.h"

enum { BATCH = 16, IN = 10, H0 = 128, H1 = 64, OUT = 32 };

/* A tiny fixed-seed generator (xorshift32), so every run is identical. */
static unsigned rng_state = 2463534242u;

static float rng_uniform(void) /* in [-1, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return (float)(rng_state >> 8) / (float)(1u << 23) - 1.0f;
}

/* malloc that ends the program with a message when memory runs out. */
static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "mlp: out of memory allocating %zu bytes\n", bytes);
        exit(1);
    }
    return p;
}

static float *new_floats(size_t n)
{
    return xmalloc(n * sizeof(float));
}

static float *new_random(size_t n, float scale)
{
    float *v = new_floats(n);
    for (size_t i = 0; i < n; i++)
        v[i] = scale * rng_uniform();
    return v;
}

/* A fully connected layer y = act(x W^T + b), with its gradients. */
typedef struct dense {
    const char *name;
    int in, out, use_tanh;
    float *weight, *bias, *y; /* forward */
    float *dweight, *dbias;   /* backward */
} dense;

/* Dropout with p = 0.5: keep-mask and the scaled output. */
typedef struct dropout {
    unsigned char *mask;
    float *y;
} dropout;

/* Allocate a dense layer's parameters in its scope. */
static void dense_init(dense *d, const char *name, int in, int out, int use_tanh)
{
    d->name = name;
    d->in = in;
    d->out = out;
    d->use_tanh = use_tanh;
    MEMFLOW_SCOPE(name) {
        d->weight = new_random((size_t)out * in, 1.0f / sqrtf((float)in));
        d->bias = new_random((size_t)out, 0.1f);
    }
}

static void dense_forward(dense *d, const float *x)
{
    MEMFLOW_SCOPE(d->name) {
        d->y = new_floats((size_t)BATCH * d->out);
        for (int b = 0; b < BATCH; b++)
            for (int o = 0; o < d->out; o++) {
                float s = d->bias[o];
                for (int i = 0; i < d->in; i++)
                    s += x[b * d->in + i] * d->weight[o * d->in + i];
                d->y[b * d->out + o] = d->use_tanh ? tanhf(s) : s;
            }
    }
}

/*
 * Backward of a dense layer inside the current (backward:) scope: dy is the
 * gradient of its output (overwritten), x its input; returns the gradient
 * of the input, or NULL when need_dx is 0.
 */
static float *dense_backward(dense *d, const float *x, float *dy, int need_dx)
{
    float *dx = NULL;
    MEMFLOW_SCOPE_APPEND(d->name) {
        float *dz = dy; /* gradient before the activation, computed in place */
        if (d->use_tanh)
            for (int k = 0; k < BATCH * d->out; k++)
                dz[k] *= 1.0f - d->y[k] * d->y[k];
        d->dweight = new_floats((size_t)d->out * d->in);
        d->dbias = new_floats((size_t)d->out);
        for (int o = 0; o < d->out; o++) {
            float sb = 0;
            for (int b = 0; b < BATCH; b++)
                sb += dz[b * d->out + o];
            d->dbias[o] = sb;
            for (int i = 0; i < d->in; i++) {
                float sw = 0;
                for (int b = 0; b < BATCH; b++)
                    sw += dz[b * d->out + o] * x[b * d->in + i];
                d->dweight[o * d->in + i] = sw;
            }
        }
        if (need_dx) {
            dx = new_floats((size_t)BATCH * d->in);
            for (int b = 0; b < BATCH; b++)
                for (int i = 0; i < d->in; i++) {
                    float s = 0;
                    for (int o = 0; o < d->out; o++)
                        s += dz[b * d->out + o] * d->weight[o * d->in + i];
                    dx[b * d->in + i] = s;
                }
        }
    }
    return dx;
}

static void dense_free(dense *d)
{
    free(d->weight);
    free(d->bias);
    free(d->y);
    free(d->dweight);
    free(d->dbias);
}

static void dropout_forward(dropout *d, const float *x, int n)
{
    MEMFLOW_SCOPE("net_dropout0") {
        d->mask = xmalloc((size_t)n);
        d->y = new_floats((size_t)n);
        for (int k = 0; k < n; k++) {
            d->mask[k] = rng_uniform() >= 0.0f;
            d->y[k] = d->mask[k] ? 2.0f * x[k] : 0.0f; /* scale 1/(1-p) */
        }
    }
}

static float *dropout_backward(const dropout *d, const float *dy, int n)
{
    float *dx = NULL;
    MEMFLOW_SCOPE_APPEND("net_dropout0") {
        dx = new_floats((size_t)n);
        for (int k = 0; k < n; k++)
            dx[k] = d->mask[k] ? 2.0f * dy[k] : 0.0f;
    }
    return dx;
}

static float *relu_forward(const float *x, int n)
{
    float *y = NULL;
    MEMFLOW_SCOPE("net_relu0") {
        y = new_floats((size_t)n);
        for (int k = 0; k < n; k++)
            y[k] = x[k] > 0 ? x[k] : 0;
    }
    return y;
}

static float *relu_backward(const float *x, const float *dy, int n)
{
    float *dx = NULL;
    MEMFLOW_SCOPE_APPEND("net_relu0") {
        dx = new_floats((size_t)n);
        for (int k = 0; k < n; k++)
            dx[k] = x[k] > 0 ? dy[k] : 0;
    }
    return dx;
}

/* L2 loss 0.5 * mean over the batch of |y - t|^2; its gradient into dy. */
static float l2_loss(const float *y, const float *t, float *dy, int n)
{
    float loss = 0;
    for (int k = 0; k < n; k++) {
        float e = y[k] - t[k];
        loss += 0.5f * e * e;
        dy[k] = e / BATCH;
    }
    return loss / BATCH;
}

static float norm(const float *v, size_t n)
{
    double s = 0;
    for (size_t k = 0; k < n; k++)
        s += (double)v[k] * v[k];
    return (float)sqrt(s);
}

int main(void)
{
    float *x = new_random((size_t)BATCH * IN, 1.0f);
    float *target = new_random((size_t)BATCH * OUT, 0.5f);
    dense dense0, dense1, dense2;
    dropout drop0;

    dense_init(&dense0, "net_dense0", IN, H0, 1);
    dense_forward(&dense0, x);
    dropout_forward(&drop0, dense0.y, BATCH * H0);
    dense_init(&dense1, "net_dense1", H0, H1, 1);
    dense_forward(&dense1, drop0.y);
    dense_init(&dense2, "net_dense2", H1, OUT, 0);
    dense_forward(&dense2, dense1.y);
    float *out = relu_forward(dense2.y, BATCH * OUT);

    float loss = 0, *dout = NULL, *drelu = NULL, *d2 = NULL, *ddrop = NULL, *d1 = NULL;
    MEMFLOW_SCOPE("backward") {
        dout = new_floats((size_t)BATCH * OUT);
        loss = l2_loss(out, target, dout, BATCH * OUT);
        drelu = relu_backward(dense2.y, dout, BATCH * OUT);
        d2 = dense_backward(&dense2, dense1.y, drelu, 1);
        d1 = dense_backward(&dense1, drop0.y, d2, 1);
        ddrop = dropout_backward(&drop0, d1, BATCH * H0);
        dense_backward(&dense0, x, ddrop, 0);
    }

    printf("mlp: batch %dx%d -> %d, loss %.6f, |grad net_dense0 weight| %.6f\n", BATCH, IN,
           OUT, loss, norm(dense0.dweight, (size_t)H0 * IN));

    free(x);
    free(target);
    dense_free(&dense0);
    dense_free(&dense1);
    dense_free(&dense2);
    free(drop0.mask);
    free(drop0.y);
    free(dout);
    free(drelu);
    free(d2);
    free(d1);
    free(ddrop);
    /* `out` (net_relu0:, 2048 bytes) is deliberately leaked: see the top. */
    return 0;
}
