/* embed_mlp.c - Strata embedded from plain C: compile and train an MLP.
 *
 * Compiles an MLP with the compiler's C API (strata-c/Strata.h: the model
 * generator, strata-train-pipeline by name, the plan export to memory),
 * loads the plan into the runtime's C API (strata-rt/strata_rt.h), trains
 * 100 steps on a fixed synthetic batch and prints the loss every 10 steps.
 * Exit 0 when the loss fell, 1 on any error (with its message). */
#include "strata-c/Strata.h"
#include "strata-rt/strata_rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kBatch = 32, kInputs = 16, kClasses = 4 };

struct Text {
  char *data;
  size_t size;
};

static void append(MlirStringRef piece, void *userData) {
  struct Text *text = (struct Text *)userData;
  char *grown = realloc(text->data, text->size + piece.length + 1);
  if (!grown)
    return;
  memcpy(grown + text->size, piece.data, piece.length);
  text->data = grown;
  text->size += piece.length;
  text->data[text->size] = 0;
}

static MlirStringRef str(const char *s) {
  return mlirStringRefCreateFromCString(s);
}

/* The plan of an MLP trained with SGD, or NULL (the error printed). */
static struct Text compile(void) {
  struct Text plan = {NULL, 0}, error = {NULL, 0};
  strataRegisterPasses();
  MlirContext ctx = mlirContextCreate();
  strataContextLoadDialects(ctx);
  MlirModule module = strataBuildModel(
      ctx, str("mlp"), str("batch=32 inputs=16 hidden=64 layers=3 classes=4"),
      append, &error);
  if (mlirModuleIsNull(module) ||
      mlirLogicalResultIsFailure(strataRunPipeline(
          module, str("strata-train-pipeline{optimizer=sgd lr=0.1}"), append,
          &error)) ||
      mlirLogicalResultIsFailure(strataExportPlan(module, str("cpu"), append,
                                                  &plan, append, &error))) {
    fprintf(stderr, "embed_mlp: compile: %s\n",
            error.data ? error.data : "failed");
    free(plan.data);
    plan.data = NULL;
  }
  if (!mlirModuleIsNull(module))
    mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  free(error.data);
  return plan;
}

int main(void) {
  struct Text plan = compile();
  if (!plan.data)
    return 1;
  strata_rt_options options;
  strata_rt_options_init(&options);
  options.threads = 1;
  strata_rt_session *session = NULL;
  if (strata_rt_session_create_from_memory(plan.data, plan.size, &options,
                                           &session) != STRATA_RT_OK) {
    fprintf(stderr, "embed_mlp: load: %s\n", strata_rt_last_error());
    return 1;
  }
  free(plan.data);

  /* One fixed batch: features in [-1, 1), class = the largest of the first
   * four features. */
  static float x[kBatch * kInputs];
  static int32_t y[kBatch];
  uint32_t state = 7u;
  for (int i = 0; i < kBatch * kInputs; ++i) {
    state = state * 1664525u + 1013904223u;
    x[i] = (float)(state >> 8) / 8388608.0f - 1.0f;
  }
  for (int s = 0; s < kBatch; ++s) {
    int best = 0;
    for (int c = 1; c < kClasses; ++c)
      if (x[s * kInputs + c] > x[s * kInputs + best])
        best = c;
    y[s] = best;
  }
  if (strata_rt_bind_input(session, "x", STRATA_RT_F32, x, sizeof(x)) ||
      strata_rt_bind_input(session, "y", STRATA_RT_I32, y, sizeof(y))) {
    fprintf(stderr, "embed_mlp: bind: %s\n", strata_rt_last_error());
    strata_rt_session_destroy(session);
    return 1;
  }
  float first = 0, loss = 0;
  for (int step = 1; step <= 100; ++step) {
    if (strata_rt_step(session, &loss) != STRATA_RT_OK) {
      fprintf(stderr, "embed_mlp: step %d: %s\n", step, strata_rt_last_error());
      strata_rt_session_destroy(session);
      return 1;
    }
    if (step == 1)
      first = loss;
    if (step % 10 == 0)
      printf("step %d loss %.6f\n", step, loss);
  }
  strata_rt_session_destroy(session);
  printf("loss %.6f -> %.6f\n", first, loss);
  return loss < first ? 0 : 1;
}
