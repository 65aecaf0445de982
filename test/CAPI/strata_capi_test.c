/* Tests the compiler's C API (include/strata-c/Strata.h) from plain C:
 * builds an MLP, runs the whole flow by name, exports the plan to memory and
 * to a file, and checks that every bad input is a failure with a message,
 * never an abort. Usage: strata-capi-test OUT_DIR */
#include "strata-c/Strata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond, what)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "FAILED: %s (line %d)\n", what, __LINE__);               \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

struct Buffer {
  char data[1 << 16];
  size_t size;
  size_t total;
};

static void append(MlirStringRef piece, void *userData) {
  struct Buffer *b = (struct Buffer *)userData;
  b->total += piece.length;
  size_t room = sizeof(b->data) - 1 - b->size;
  size_t n = piece.length < room ? piece.length : room;
  memcpy(b->data + b->size, piece.data, n);
  b->size += n;
  b->data[b->size] = 0;
}

static MlirStringRef str(const char *s) {
  return mlirStringRefCreateFromCString(s);
}

/* Expects `module` null and a message containing `expected`. */
static void expectNullModule(MlirModule module, struct Buffer *error,
                             const char *expected, const char *what) {
  CHECK(mlirModuleIsNull(module), what);
  CHECK(strstr(error->data, expected) != NULL, what);
  if (!strstr(error->data, expected))
    fprintf(stderr, "  message was: %s\n", error->data);
  error->size = 0;
  error->data[0] = 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  strataRegisterPasses();
  MlirContext ctx = mlirContextCreate();
  MlirDialectHandle strata = mlirGetDialectHandle__strata__();
  CHECK(
      mlirStringRefEqual(mlirDialectHandleGetNamespace(strata), str("strata")),
      "dialect handle namespace");
  mlirDialectHandleLoadDialect(strata, ctx);
  strataContextLoadDialects(ctx);

  static struct Buffer error, plan;
  MlirModule mlp = strataBuildModel(
      ctx, str("mlp"), str("batch=16 inputs=32 hidden=64 layers=3 classes=8"),
      append, &error);
  CHECK(!mlirModuleIsNull(mlp), "build an MLP");
  CHECK(mlirLogicalResultIsSuccess(strataRunPipeline(
            mlp, str("strata-train-pipeline{optimizer=sgd lr=0.1}"), append,
            &error)),
        "run the train pipeline");
  CHECK(mlirLogicalResultIsSuccess(
            strataExportPlan(mlp, str("cpu"), append, &plan, append, &error)),
        "export the plan");
  CHECK(plan.total > 100 && plan.data[0] == '{' &&
            strstr(plan.data, "\"buffers\"") != NULL,
        "the plan is JSON with buffers");
  char path[4096];
  snprintf(path, sizeof(path), "%s/mlp.plan.json", argv[1]);
  CHECK(mlirLogicalResultIsSuccess(
            strataExportPlanToFile(mlp, str("cpu"), str(path), append, &error)),
        "export the plan to a file");
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL, "the plan file exists");
  if (f) {
    fseek(f, 0, SEEK_END);
    CHECK((size_t)ftell(f) == plan.total, "the file holds the same plan");
    fclose(f);
  }
  CHECK(error.size == 0, "no error on the good path");
  if (error.size)
    fprintf(stderr, "  errors: %s\n", error.data);
  mlirModuleDestroy(mlp);

  /* Bad input: every case fails with a message. */
  expectNullModule(strataBuildModel(ctx, str("lstm"), str(""), append, &error),
                   &error, "unknown model kind 'lstm'", "unknown model kind");
  expectNullModule(
      strataBuildModel(ctx, str("mlp"), str("batch=many"), append, &error),
      &error, "batch=many is not an integer", "non-integer option");
  expectNullModule(
      strataBuildModel(ctx, str("mlp"), str("width=3"), append, &error), &error,
      "unknown mlp option 'width'", "unknown option");
  expectNullModule(
      strataBuildModel(ctx, str("mlp"), str("batch=0"), append, &error), &error,
      "batch", "invalid size");
  expectNullModule(
      strataBuildModel(ctx, str("gpt"), str("preset=gpt-5"), append, &error),
      &error, "unknown GPT preset 'gpt-5'", "unknown preset");
  expectNullModule(
      strataParseModule(ctx, str("module { func.func @f( }"), append, &error),
      &error, "strata-ir:1:", "malformed IR names its location");

  MlirModule gpt = strataBuildModel(
      ctx, str("gpt"),
      str("layers=1 hidden=16 heads=2 seq=8 vocab=32 positions=8 batch=2"),
      append, &error);
  CHECK(!mlirModuleIsNull(gpt), "build a GPT");
  CHECK(mlirLogicalResultIsFailure(
            strataRunPipeline(gpt, str("strata-no-such-pass"), append, &error)),
        "unknown pass fails");
  CHECK(strstr(error.data, "strata-no-such-pass") != NULL,
        "unknown pass is named");
  error.size = 0;
  error.data[0] = 0;
  CHECK(mlirLogicalResultIsFailure(
            strataExportPlan(gpt, str("cpu"), append, &plan, append, &error)),
        "exporting a model without a training step fails");
  CHECK(error.size > 0, "with a message");
  error.size = 0;
  error.data[0] = 0;
  CHECK(
      mlirLogicalResultIsFailure(strataRunPipeline(
          gpt, str("strata-train-pipeline{remat-budget=1K}"), append, &error)),
      "an impossible remat budget fails");
  CHECK(strstr(error.data, "cannot fit a memory budget of 1024 bytes") != NULL,
        "with the remat diagnostic");
  if (!strstr(error.data, "cannot fit a memory budget of 1024 bytes"))
    fprintf(stderr, "  message was: %s\n", error.data);
  mlirModuleDestroy(gpt);
  CHECK(mlirLogicalResultIsFailure(strataRunPipeline(
            (MlirModule){NULL}, str("strata-autodiff"), append, &error)),
        "a null module fails");
  mlirContextDestroy(ctx);
  printf("%s: %d failure(s)\n", argv[0], failures);
  return failures ? 1 : 0;
}
