/* train_mlp.c - Trains a Strata plan from C through the runtime's C API.
 *
 *   train_mlp PLAN [STEPS]
 *
 * PLAN is a classifier plan (f32 features [B, F], i32 class labels [B]),
 * e.g. runtime/test/driver/Inputs/mlp.json or what
 *   strata-model mlp ... | strata-opt --strata-autodiff=... \
 *     --strata-plan-buffers | strata-translate --export-plan -o mlp.plan.json
 * writes. The program makes its own deterministic data set (8 batches of
 * random features labelled by a fixed random linear "teacher"), trains STEPS
 * steps (default 100) cycling through it, and prints the loss every 10
 * steps. Build: see README.md next to this file.
 */

#include "strata-rt/strata_rt.h"

#include <stdio.h>
#include <stdlib.h>

enum { kBatches = 8 };

/* A small linear congruential generator: uniform in [-1, 1). */
static float uniform(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / 8388608.0f - 1.0f;
}

static int fail(const char *what) {
  fprintf(stderr, "train_mlp: %s: %s\n", what, strata_rt_last_error());
  return 1;
}

/* The data set: features and the teacher's labels for every batch. */
static void makeData(int64_t batch, int64_t width, int64_t classes,
                     float *features, int32_t *labels) {
  uint32_t state = 2024u;
  float *teacher = malloc((size_t)(width * classes) * sizeof(float));
  for (int64_t i = 0; i < width * classes; ++i)
    teacher[i] = uniform(&state);
  for (int64_t i = 0; i < kBatches * batch * width; ++i)
    features[i] = uniform(&state);
  for (int64_t s = 0; s < kBatches * batch; ++s) {
    int32_t best = 0;
    float bestScore = -1e30f;
    for (int64_t c = 0; c < classes; ++c) {
      float score = 0;
      for (int64_t j = 0; j < width; ++j)
        score += features[s * width + j] * teacher[j * classes + c];
      if (score > bestScore) {
        bestScore = score;
        best = (int32_t)c;
      }
    }
    labels[s] = best;
  }
  free(teacher);
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: train_mlp PLAN [STEPS]\n");
    return 2;
  }
  int steps = argc == 3 ? atoi(argv[2]) : 100;
  strata_rt_options options;
  strata_rt_options_init(&options);
  options.seed = 1;
  strata_rt_session *session = NULL;
  if (strata_rt_session_create_from_file(argv[1], &options, &session))
    return fail("loading the plan");

  /* The inputs: features [B, F] (f32) and labels [B] (i32); the classes are
   * the size of the last parameter (the output layer's bias). */
  strata_rt_tensor_info data, labels, last;
  size_t inputs = 0, params = 0;
  if (strata_rt_num_inputs(session, &inputs) ||
      strata_rt_num_parameters(session, &params) || inputs != 2 ||
      params == 0 || strata_rt_input_info(session, 0, &data) ||
      strata_rt_input_info(session, 1, &labels) ||
      strata_rt_parameter_info(session, params - 1, &last) ||
      data.dtype != STRATA_RT_F32 || data.rank != 2 ||
      labels.dtype != STRATA_RT_I32 || labels.rank != 1 || last.rank != 1) {
    fprintf(stderr, "train_mlp: %s is not a classifier plan\n", argv[1]);
    strata_rt_session_destroy(session);
    return 1;
  }
  int64_t batch = data.shape[0], width = data.shape[1];
  int64_t classes = last.shape[0];
  printf("plan %s: %s [%lld, %lld], %s [%lld], %lld classes, %zu "
         "parameters\n",
         argv[1], data.name, (long long)batch, (long long)width, labels.name,
         (long long)batch, (long long)classes, params);

  float *features = malloc((size_t)(kBatches * batch * width) * sizeof(float));
  int32_t *targets = malloc((size_t)(kBatches * batch) * sizeof(int32_t));
  makeData(batch, width, classes, features, targets);

  float first = 0, loss = 0;
  int status = 0;
  for (int step = 1; step <= steps && !status; ++step) {
    int64_t b = (step - 1) % kBatches;
    if (strata_rt_bind_input(session, data.name, STRATA_RT_F32,
                             features + b * batch * width, data.bytes) ||
        strata_rt_bind_input(session, labels.name, STRATA_RT_I32,
                             targets + b * batch, labels.bytes) ||
        strata_rt_step(session, &loss)) {
      status = fail("training");
      break;
    }
    if (step == 1)
      first = loss;
    if (step % 10 == 0)
      printf("step %d loss %.6f\n", step, loss);
  }
  if (!status)
    printf("first loss %.6f, final loss %.6f\n", first, loss);
  free(features);
  free(targets);
  strata_rt_session_destroy(session);
  return status;
}
