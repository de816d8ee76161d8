/*
 * The machine's fp32 FMA peak, for `npm run bench:engine`: every thread (one per core) runs a
 * tight loop of independent fused multiply-adds on the widest vectors the CPU has (AVX-512, else
 * AVX2+FMA). 16 independent accumulators cover the FMA latency (4 cycles) on both FMA ports, so
 * the loop is limited by FMA throughput alone — what the hardware can do at best; real kernels
 * also load, store and shuffle.
 *
 * Built at bench time with the system compiler: gcc -O3 -march=native -pthread fma_peak.c
 * Usage: fma_peak THREADS SECONDS REPS — prints one JSON line with the best GFLOP/s of the reps.
 *        fma_peak serve THREADS SECONDS REPS — the same once per line read from stdin, until EOF:
 *        a benchmark that measures the peak between its own repetitions starts this once, because
 *        every process it starts forks it, and after a fork each page the benchmark then writes
 *        faults again (measured: 132,000 faults, +1.3 s on a 0.4 s train step on these VMs).
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__AVX512F__)
typedef __m512 vec;
#define LANES 16
#define FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define SET1(x) _mm512_set1_ps(x)
#define ADD(a, b) _mm512_add_ps(a, b)
#define STORE(p, v) _mm512_storeu_ps(p, v)
#define ISA "avx512"
#elif defined(__FMA__) && defined(__AVX__)
typedef __m256 vec;
#define LANES 8
#define FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define SET1(x) _mm256_set1_ps(x)
#define ADD(a, b) _mm256_add_ps(a, b)
#define STORE(p, v) _mm256_storeu_ps(p, v)
#define ISA "avx2-fma"
#else
#error "needs AVX-512 or AVX2 with FMA (compile with -march=native on such a CPU)"
#endif

#define ACCUMULATORS 16

static long iterations;
static pthread_barrier_t start;

struct job {
  double began, ended; /* this thread's own clock around its loop */
  float result;
};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *work(void *arg) {
  struct job *job = arg;
  vec acc[ACCUMULATORS];
  for (int i = 0; i < ACCUMULATORS; i++) acc[i] = SET1(0.001f * (float)i);
  /* acc·a + b with a just below 1 stays finite for any number of iterations. */
  const vec a = SET1(0.9999999f), b = SET1(1e-7f);
  pthread_barrier_wait(&start);
  job->began = now();
  for (long n = 0; n < iterations; n++) {
    for (int i = 0; i < ACCUMULATORS; i++) acc[i] = FMA(acc[i], a, b);
  }
  job->ended = now();
  vec sum = acc[0];
  for (int i = 1; i < ACCUMULATORS; i++) sum = ADD(sum, acc[i]);
  float lanes[LANES];
  STORE(lanes, sum);
  job->result = lanes[0]; /* keeps the loop's result alive */
  return NULL;
}

/* Wall time for `threads` threads to run `iterations` each: first start to last end, as the threads saw it. */
static double run(int threads) {
  pthread_t ids[256];
  struct job jobs[256];
  pthread_barrier_init(&start, NULL, (unsigned)threads);
  for (int t = 0; t < threads; t++) pthread_create(&ids[t], NULL, work, &jobs[t]);
  for (int t = 0; t < threads; t++) pthread_join(ids[t], NULL);
  pthread_barrier_destroy(&start);
  double began = jobs[0].began, ended = jobs[0].ended;
  for (int t = 1; t < threads; t++) {
    if (jobs[t].began < began) began = jobs[t].began;
    if (jobs[t].ended > ended) ended = jobs[t].ended;
  }
  return ended - began;
}

static void measure(int threads, double seconds, int reps) {
  /* Calibrate the iteration count to about `seconds` per rep (from a run of some 20 ms). */
  iterations = 4000000;
  double t = run(threads);
  iterations = (long)((double)iterations * seconds / t) + 1;
  const double flops = 2.0 * LANES * ACCUMULATORS * (double)iterations * threads;
  double best = 0;
  for (int r = 0; r < reps; r++) {
    double g = flops / run(threads) / 1e9;
    if (g > best) best = g;
  }
  printf("{\"isa\":\"%s\",\"threads\":%d,\"gflops\":%.1f}\n", ISA, threads, best);
  fflush(stdout);
}

int main(int argc, char **argv) {
  const int serve = argc > 1 && strcmp(argv[1], "serve") == 0;
  char **args = serve ? argv + 1 : argv;
  const int count = serve ? argc - 1 : argc;
  int threads = count > 1 ? atoi(args[1]) : 1;
  double seconds = count > 2 ? atof(args[2]) : 0.3;
  int reps = count > 3 ? atoi(args[3]) : 3;
  if (threads < 1 || threads > 256 || seconds <= 0 || reps < 1) {
    fprintf(stderr, "usage: fma_peak [serve] THREADS SECONDS REPS\n");
    return 2;
  }
  if (!serve) {
    measure(threads, seconds, reps);
    return 0;
  }
  char line[256];
  while (fgets(line, sizeof line, stdin)) measure(threads, seconds, reps);
  return 0;
}
