/*
 * The C baseline of optimizer.bench.ts: the float32 update rules as a C programmer writes them,
 * compiled by the bench with the machine's gcc (see c-baseline.ts for the flags).
 *
 *   kernels <elements> <calls per pass> <passes> [sgd|momentum|adagrad|adam]
 *
 * prints one line per kernel (all four, or the one named): its name and the seconds of each pass
 * (that many calls over arrays of that many elements), after one warm-up pass.
 *
 * The loops leave out weight decay, which the WebAssembly kernels compute even when it is zero
 * (clipping is off in both): SGD p -= lr*g; momentum v = mu*v - lr*g, p += v; Adagrad a += g*g,
 * p -= lr*g/(sqrt(a) + eps); Adam with its bias corrections folded into the step size and epsilon
 * as kernels.wat receives them, p -= lrT*m/(sqrt(v) + epsHat).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*kernel_fn)(long n);

static float *P, *G, *S1, *S2;
/* Volatile, so that gcc cannot fold the constants into the loops. */
static volatile float lr_in = 0.01f, mu_in = 0.9f, eps_in = 1e-8f, b1_in = 0.9f, b2_in = 0.999f;

__attribute__((noinline)) static void sgd(long n) {
  float *restrict p = P;
  const float *restrict g = G;
  const float lr = lr_in;
  for (long i = 0; i < n; i++) p[i] -= lr * g[i];
}

__attribute__((noinline)) static void momentum(long n) {
  float *restrict p = P, *restrict v = S1;
  const float *restrict g = G;
  const float lr = lr_in, mu = mu_in;
  for (long i = 0; i < n; i++) {
    v[i] = mu * v[i] - lr * g[i];
    p[i] += v[i];
  }
}

__attribute__((noinline)) static void adagrad(long n) {
  float *restrict p = P, *restrict a = S1;
  const float *restrict g = G;
  const float lr = lr_in, eps = eps_in;
  for (long i = 0; i < n; i++) {
    a[i] += g[i] * g[i];
    p[i] -= lr * (g[i] / (sqrtf(a[i]) + eps));
  }
}

/* Running products β1ᵗ and β2ᵗ, as the optimizer keeps them. */
static double beta1_power, beta2_power;

__attribute__((noinline)) static void adam(long n) {
  float *restrict p = P, *restrict m = S1, *restrict v = S2;
  const float *restrict g = G;
  const float b1 = b1_in, b2 = b2_in;
  beta1_power *= b1;
  beta2_power *= b2;
  const double c2 = sqrt(1 - beta2_power);
  const float lrT = (float)(lr_in * c2 / (1 - beta1_power));
  const float epsHat = (float)(eps_in * c2);
  const float omb1 = 1 - b1, omb2 = 1 - b2;
  for (long i = 0; i < n; i++) {
    m[i] = b1 * m[i] + omb1 * g[i];
    v[i] = b2 * v[i] + omb2 * (g[i] * g[i]);
    p[i] -= lrT * (m[i] / (sqrtf(v[i]) + epsHat));
  }
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static float *array(long n, float value) {
  float *a = aligned_alloc(64, ((n * sizeof(float) + 63) / 64) * 64);
  if (!a) {
    fprintf(stderr, "kernels: out of memory\n");
    exit(1);
  }
  for (long i = 0; i < n; i++) a[i] = value;
  return a;
}

static void measure(const char *name, kernel_fn fn, long n, int calls, int passes) {
  P = array(n, 0.5f);
  G = array(n, 1e-3f);
  S1 = array(n, 0);
  S2 = array(n, 0);
  beta1_power = beta2_power = 1;
  double times[64];
  for (int pass = -1; pass < passes; pass++) {
    const double start = now();
    for (int c = 0; c < calls; c++) fn(n);
    if (pass >= 0) times[pass] = now() - start;
  }
  printf("%s", name);
  for (int pass = 0; pass < passes; pass++) printf(" %.9f", times[pass]);
  printf("\n");
  fflush(stdout);
  free(P);
  free(G);
  free(S1);
  free(S2);
}

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: kernels <elements> <calls per pass> <passes> [kernel]\n");
    return 2;
  }
  const long n = atol(argv[1]);
  const int calls = atoi(argv[2]);
  const int passes = atoi(argv[3]);
  if (n < 1 || calls < 1 || passes < 1 || passes > 64) {
    fprintf(stderr, "kernels: elements and calls must be ≥ 1, passes in [1, 64]\n");
    return 2;
  }
  const char *only = argc == 5 ? argv[4] : NULL;
  const struct {
    const char *name;
    kernel_fn fn;
  } kernels[] = {{"sgd", sgd}, {"momentum", momentum}, {"adagrad", adagrad}, {"adam", adam}};
  int ran = 0;
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
    if (only && strcmp(only, kernels[i].name) != 0) continue;
    measure(kernels[i].name, kernels[i].fn, n, calls, passes);
    ran++;
  }
  if (!ran) {
    fprintf(stderr, "kernels: no kernel named %s\n", only);
    return 2;
  }
  return 0;
}
