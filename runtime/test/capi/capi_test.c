/*===- capi_test.c - The runtime's C API, compiled as C99
------------------===*\
|*                                                                            *|
|* Part of the Strata runtime tests.                                          *|
|*                                                                            *|
|*   capi_test MLP_PLAN OTHER_PLAN SCRATCH_DIR                               *|
|*                                                                            *|
|* Loads the MLP plan, binds deterministic batches, trains, reads and writes *|
|* a parameter, saves and restores a checkpoint, and checks that every       *|
|* error path returns a non-zero status and a message. OTHER_PLAN is a plan  *|
|* of another model (its checkpoints must not load into the MLP).            *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "strata-rt/strata_rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

#define EXPECT_OK(call)                                                        \
  do {                                                                         \
    strata_rt_status s_ = (call);                                              \
    if (s_ != STRATA_RT_OK) {                                                  \
      fprintf(stderr, "%s:%d: %s failed (%s): %s\n", __FILE__, __LINE__,       \
              #call, strata_rt_status_name(s_), strata_rt_last_error());       \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* The call fails with `code` and a message containing `text`. */
#define EXPECT_ERROR(call, code, text)                                         \
  expectError((call), (code), (text), #call, __LINE__)

static void expectError(strata_rt_status status, strata_rt_status code,
                        const char *text, const char *call, int line) {
  const char *message = strata_rt_last_error();
  if (status == code && message && strstr(message, text))
    return;
  fprintf(stderr,
          "%s:%d: %s: expected %s with a message containing \"%s\", got %s "
          "\"%s\"\n",
          __FILE__, line, call, strata_rt_status_name(code), text,
          strata_rt_status_name(status), message ? message : "(null)");
  ++failures;
}

enum { kBatch = 32, kFeatures = 16, kClasses = 4, kSteps = 20 };

static float features[kBatch * kFeatures];
static int32_t labels[kBatch];

/* A fixed batch: features from a linear congruential generator in [-1, 1),
 * the label the index of the largest of the first kClasses features. */
static void makeBatch(void) {
  uint32_t state = 12345u;
  for (int i = 0; i < kBatch * kFeatures; ++i) {
    state = state * 1664525u + 1013904223u;
    features[i] = (float)(state >> 8) / 8388608.0f - 1.0f;
  }
  for (int b = 0; b < kBatch; ++b) {
    int best = 0;
    for (int c = 1; c < kClasses; ++c)
      if (features[b * kFeatures + c] > features[b * kFeatures + best])
        best = c;
    labels[b] = best;
  }
}

static void bindBatch(strata_rt_session *session) {
  EXPECT_OK(strata_rt_bind_input(session, "features", STRATA_RT_F32, features,
                                 sizeof(features)));
  EXPECT_OK(strata_rt_bind_input(session, "labels", STRATA_RT_I32, labels,
                                 sizeof(labels)));
}

static strata_rt_session *openSession(const char *plan, uint64_t seed) {
  strata_rt_options options;
  strata_rt_options_init(&options);
  options.threads = 2;
  options.seed = seed;
  strata_rt_session *session = NULL;
  EXPECT_OK(strata_rt_session_create_from_file(plan, &options, &session));
  return session;
}

static char *readText(const char *path, size_t *length) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)size);
  *length = fread(text, 1, (size_t)size, f);
  fclose(f);
  return text;
}

/* Names, roles, dtypes and shapes of the MLP plan. */
static void testQueries(strata_rt_session *session) {
  size_t count = 0;
  strata_rt_tensor_info info;
  EXPECT_OK(strata_rt_num_inputs(session, &count));
  CHECK(count == 2);
  EXPECT_OK(strata_rt_input_info(session, 0, &info));
  CHECK(strcmp(info.name, "features") == 0);
  CHECK(info.role == STRATA_RT_ROLE_DATA && info.dtype == STRATA_RT_F32);
  CHECK(info.rank == 2 && info.shape[0] == kBatch &&
        info.shape[1] == kFeatures);
  CHECK(info.bytes == sizeof(features));
  EXPECT_OK(strata_rt_input_info(session, 1, &info));
  CHECK(strcmp(info.name, "labels") == 0);
  CHECK(info.role == STRATA_RT_ROLE_LABELS && info.dtype == STRATA_RT_I32);
  CHECK(info.rank == 1 && info.shape[0] == kBatch);
  EXPECT_OK(strata_rt_num_parameters(session, &count));
  CHECK(count == 4);
  EXPECT_OK(strata_rt_parameter_info(session, 0, &info));
  CHECK(strcmp(info.name, "fc0.weight") == 0);
  CHECK(info.role == STRATA_RT_ROLE_PARAMETER && info.rank == 2 &&
        info.shape[0] == kFeatures &&
        info.bytes == (size_t)(info.shape[0] * info.shape[1] * 4));
  EXPECT_OK(strata_rt_parameter_info(session, 3, &info));
  CHECK(info.rank == 1 && info.shape[0] == kClasses);
  const char *device = NULL;
  EXPECT_OK(strata_rt_session_device(session, &device));
  CHECK(device && strncmp(device, "cpu", 3) == 0);
}

/* The loss falls on a fixed batch; a session from the same plan text in
 * memory with the same seed gives bit-identical losses. */
static void testTraining(const char *plan) {
  strata_rt_session *session = openSession(plan, 7);
  if (!session)
    return;
  testQueries(session);
  bindBatch(session);
  float losses[kSteps];
  for (int i = 0; i < kSteps; ++i)
    EXPECT_OK(strata_rt_step(session, &losses[i]));
  printf("loss: step 1 %.6f, step %d %.6f\n", losses[0], kSteps,
         losses[kSteps - 1]);
  CHECK(losses[kSteps - 1] < 0.9f * losses[0]);
  int64_t step = 0;
  EXPECT_OK(strata_rt_step_count(session, &step));
  CHECK(step == kSteps);
  float forward = 0, again = 0;
  EXPECT_OK(strata_rt_forward(session, &forward));
  EXPECT_OK(strata_rt_forward(session, &again));
  CHECK(forward == again);
  EXPECT_OK(strata_rt_step_count(session, &step));
  CHECK(step == kSteps);
  strata_rt_session_destroy(session);

  size_t length = 0;
  char *text = readText(plan, &length);
  CHECK(text != NULL);
  strata_rt_options options;
  strata_rt_options_init(&options);
  options.threads = 1;
  options.seed = 7;
  EXPECT_OK(
      strata_rt_session_create_from_memory(text, length, &options, &session));
  free(text);
  if (!session)
    return;
  bindBatch(session);
  float last = 0;
  EXPECT_OK(strata_rt_run_steps(session, kSteps, &last));
  CHECK(memcmp(&last, &losses[kSteps - 1], sizeof(float)) == 0);
  strata_rt_session_destroy(session);
}

/* Reads a parameter, writes a changed copy, reads it back. */
static void testParameters(const char *plan) {
  strata_rt_session *session = openSession(plan, 3);
  if (!session)
    return;
  float weight[kFeatures * 32], changed[kFeatures * 32], back[kFeatures * 32];
  EXPECT_OK(
      strata_rt_get_parameter(session, "fc0.weight", weight, sizeof(weight)));
  int nonzero = 0;
  for (int i = 0; i < kFeatures * 32; ++i) {
    nonzero += weight[i] != 0;
    changed[i] = 0.5f * weight[i] + 0.01f * (float)(i % 7);
  }
  CHECK(nonzero > kFeatures * 32 / 2);
  EXPECT_OK(
      strata_rt_set_parameter(session, "fc0.weight", changed, sizeof(changed)));
  EXPECT_OK(strata_rt_get_parameter(session, "fc0.weight", back, sizeof(back)));
  CHECK(memcmp(back, changed, sizeof(back)) == 0);
  /* The written value is what the next step computes with. */
  bindBatch(session);
  float changedLoss = 0, originalLoss = 0;
  EXPECT_OK(strata_rt_forward(session, &changedLoss));
  EXPECT_OK(
      strata_rt_set_parameter(session, "fc0.weight", weight, sizeof(weight)));
  EXPECT_OK(strata_rt_forward(session, &originalLoss));
  CHECK(changedLoss != originalLoss);
  strata_rt_session_destroy(session);
}

/* A restored checkpoint continues bit for bit. */
static void testCheckpoint(const char *plan, const char *scratch) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/capi-test.safetensors", scratch);
  strata_rt_session *session = openSession(plan, 11);
  if (!session)
    return;
  bindBatch(session);
  EXPECT_OK(strata_rt_run_steps(session, 5, NULL));
  EXPECT_OK(strata_rt_save_checkpoint(session, path));
  float first[5], second[5];
  for (int i = 0; i < 5; ++i)
    EXPECT_OK(strata_rt_step(session, &first[i]));
  strata_rt_session_destroy(session);

  /* A fresh session with another seed: the checkpoint brings everything. */
  session = openSession(plan, 99);
  if (!session)
    return;
  EXPECT_OK(strata_rt_load_checkpoint(session, path));
  int64_t step = 0;
  EXPECT_OK(strata_rt_step_count(session, &step));
  CHECK(step == 5);
  bindBatch(session);
  for (int i = 0; i < 5; ++i)
    EXPECT_OK(strata_rt_step(session, &second[i]));
  CHECK(memcmp(first, second, sizeof(first)) == 0);
  /* Parameters only: the step counter stays. */
  EXPECT_OK(strata_rt_load_parameters(session, path));
  EXPECT_OK(strata_rt_step_count(session, &step));
  CHECK(step == 10);
  strata_rt_session_destroy(session);
  remove(path);
}

/* Every error returns a status and a message; nothing aborts. */
static void testErrors(const char *plan, const char *other,
                       const char *scratch) {
  strata_rt_session *session = (strata_rt_session *)&failures;
  EXPECT_ERROR(strata_rt_session_create_from_file("/nonexistent/plan.json",
                                                  NULL, &session),
               STRATA_RT_ERROR_FAILURE, "/nonexistent/plan.json");
  CHECK(session == NULL);
  const char *corrupt = "{\"format\": \"strata-plan\", \"version\": 1, [";
  EXPECT_ERROR(strata_rt_session_create_from_memory(corrupt, strlen(corrupt),
                                                    NULL, &session),
               STRATA_RT_ERROR_INVALID, "<memory>");
  EXPECT_ERROR(strata_rt_session_create_from_memory("{}", 2, NULL, &session),
               STRATA_RT_ERROR_INVALID, "<memory>");
  EXPECT_ERROR(strata_rt_session_create_from_memory(NULL, 0, NULL, &session),
               STRATA_RT_ERROR_ARGUMENT, "json is NULL");
  EXPECT_ERROR(strata_rt_session_create_from_file(plan, NULL, NULL),
               STRATA_RT_ERROR_ARGUMENT, "session is NULL");
  strata_rt_options options;
  strata_rt_options_init(&options);
  options.threads = -1;
  EXPECT_ERROR(strata_rt_session_create_from_file(plan, &options, &session),
               STRATA_RT_ERROR_USAGE, "threads");
  strata_rt_options_init(&options);
  options.device = "tpu";
  EXPECT_ERROR(strata_rt_session_create_from_file(plan, &options, &session),
               STRATA_RT_ERROR_USAGE, "device must be cpu, cuda or cuda:N");
  /* Without the CUDA backend or a GPU, "cuda" fails cleanly. */
  options.device = "cuda";
  strata_rt_status cuda =
      strata_rt_session_create_from_file(plan, &options, &session);
  if (cuda == STRATA_RT_OK) {
    printf("cuda: a GPU session was created\n");
    strata_rt_session_destroy(session);
  } else {
    printf("cuda: %s\n", strata_rt_last_error());
    CHECK(cuda == STRATA_RT_ERROR_FAILURE && *strata_rt_last_error());
  }

  session = openSession(plan, 0);
  if (!session)
    return;
  float loss = 0;
  EXPECT_ERROR(strata_rt_step(session, &loss), STRATA_RT_ERROR_ARGUMENT,
               "input 'features' is not bound");
  EXPECT_ERROR(strata_rt_bind_input(session, "features", STRATA_RT_F32,
                                    features, sizeof(features) / 2),
               STRATA_RT_ERROR_ARGUMENT,
               "input 'features' needs 2048 bytes (f32 [32, 16]), got 1024");
  EXPECT_ERROR(strata_rt_bind_input(session, "labels", STRATA_RT_F32, labels,
                                    sizeof(labels)),
               STRATA_RT_ERROR_ARGUMENT, "input 'labels' is i32 [32], got f32");
  EXPECT_ERROR(strata_rt_bind_input(session, "pixels", STRATA_RT_F32, features,
                                    sizeof(features)),
               STRATA_RT_ERROR_ARGUMENT,
               "no input 'pixels' (the plan's inputs: 'features', 'labels')");
  EXPECT_ERROR(strata_rt_bind_input(session, "features", STRATA_RT_F32, NULL,
                                    sizeof(features)),
               STRATA_RT_ERROR_ARGUMENT, "data is NULL");
  /* A label outside the classes fails the step, which does not count. */
  int32_t bad[kBatch];
  memcpy(bad, labels, sizeof(bad));
  bad[5] = kClasses;
  EXPECT_OK(strata_rt_bind_input(session, "features", STRATA_RT_F32, features,
                                 sizeof(features)));
  EXPECT_OK(
      strata_rt_bind_input(session, "labels", STRATA_RT_I32, bad, sizeof(bad)));
  EXPECT_ERROR(strata_rt_step(session, &loss), STRATA_RT_ERROR_FAILURE,
               "element 5 is 4, outside [0, 4)");
  int64_t count0 = -1;
  EXPECT_OK(strata_rt_step_count(session, &count0));
  CHECK(count0 == 0);
  float weight[kFeatures * 32];
  EXPECT_ERROR(
      strata_rt_get_parameter(session, "fc9.weight", weight, sizeof(weight)),
      STRATA_RT_ERROR_ARGUMENT, "no parameter 'fc9.weight'");
  EXPECT_ERROR(strata_rt_set_parameter(session, "fc0.weight", weight,
                                       sizeof(weight) - 4),
               STRATA_RT_ERROR_ARGUMENT,
               "parameter 'fc0.weight' needs 2048 bytes");
  EXPECT_ERROR(strata_rt_get_parameter(session, "fc0.weight", weight, 4),
               STRATA_RT_ERROR_ARGUMENT, "got 4");
  strata_rt_tensor_info info;
  EXPECT_ERROR(strata_rt_input_info(session, 2, &info),
               STRATA_RT_ERROR_ARGUMENT, "input index 2 out of range");
  EXPECT_ERROR(strata_rt_parameter_info(session, 4, &info),
               STRATA_RT_ERROR_ARGUMENT, "parameter index 4 out of range");
  EXPECT_ERROR(strata_rt_run_steps(session, 0, &loss), STRATA_RT_ERROR_ARGUMENT,
               "steps must be at least 1");
  EXPECT_ERROR(strata_rt_bind_synthetic(session, 0), STRATA_RT_ERROR_ARGUMENT,
               "numbered from 1");
  EXPECT_ERROR(strata_rt_load_checkpoint(session, "/nonexistent/ckpt"),
               STRATA_RT_ERROR_FAILURE, "/nonexistent/ckpt");
  char path[4096];
  snprintf(path, sizeof(path), "%s/capi-test-dir/sub/x.safetensors", scratch);
  EXPECT_ERROR(strata_rt_save_checkpoint(session, path),
               STRATA_RT_ERROR_FAILURE, "capi-test-dir");
  /* A checkpoint of another model does not fit, and changes nothing. */
  snprintf(path, sizeof(path), "%s/capi-test-other.safetensors", scratch);
  strata_rt_session *different = openSession(other, 0);
  if (different) {
    EXPECT_OK(strata_rt_save_checkpoint(different, path));
    strata_rt_session_destroy(different);
  }
  float before[kFeatures * 32], after[kFeatures * 32];
  EXPECT_OK(
      strata_rt_get_parameter(session, "fc0.weight", before, sizeof(before)));
  EXPECT_ERROR(strata_rt_load_checkpoint(session, path),
               STRATA_RT_ERROR_INVALID, path);
  EXPECT_OK(
      strata_rt_get_parameter(session, "fc0.weight", after, sizeof(after)));
  CHECK(memcmp(before, after, sizeof(before)) == 0);
  remove(path);
  /* A successful call clears the message. */
  size_t count = 0;
  EXPECT_OK(strata_rt_num_inputs(session, &count));
  CHECK(strcmp(strata_rt_last_error(), "") == 0);
  strata_rt_session_destroy(session);

  /* NULL handles and pointers. */
  EXPECT_ERROR(strata_rt_num_inputs(NULL, &count), STRATA_RT_ERROR_ARGUMENT,
               "strata_rt_num_inputs: session is NULL");
  EXPECT_ERROR(strata_rt_num_parameters(NULL, &count), STRATA_RT_ERROR_ARGUMENT,
               "session is NULL");
  EXPECT_ERROR(strata_rt_input_info(NULL, 0, &info), STRATA_RT_ERROR_ARGUMENT,
               "session is NULL");
  EXPECT_ERROR(strata_rt_parameter_info(NULL, 0, &info),
               STRATA_RT_ERROR_ARGUMENT, "session is NULL");
  EXPECT_ERROR(strata_rt_bind_input(NULL, "x", STRATA_RT_F32, features, 4),
               STRATA_RT_ERROR_ARGUMENT, "session is NULL");
  EXPECT_ERROR(strata_rt_bind_synthetic(NULL, 1), STRATA_RT_ERROR_ARGUMENT,
               "session is NULL");
  EXPECT_ERROR(strata_rt_step(NULL, &loss), STRATA_RT_ERROR_ARGUMENT,
               "strata_rt_step: session is NULL");
  EXPECT_ERROR(strata_rt_run_steps(NULL, 1, &loss), STRATA_RT_ERROR_ARGUMENT,
               "session is NULL");
  EXPECT_ERROR(strata_rt_forward(NULL, &loss), STRATA_RT_ERROR_ARGUMENT,
               "session is NULL");
  int64_t step = 0;
  EXPECT_ERROR(strata_rt_step_count(NULL, &step), STRATA_RT_ERROR_ARGUMENT,
               "session is NULL");
  EXPECT_ERROR(strata_rt_get_parameter(NULL, "w", weight, 4),
               STRATA_RT_ERROR_ARGUMENT, "session is NULL");
  EXPECT_ERROR(strata_rt_set_parameter(NULL, "w", weight, 4),
               STRATA_RT_ERROR_ARGUMENT, "session is NULL");
  EXPECT_ERROR(strata_rt_save_checkpoint(NULL, path), STRATA_RT_ERROR_ARGUMENT,
               "session is NULL");
  EXPECT_ERROR(strata_rt_load_checkpoint(NULL, path), STRATA_RT_ERROR_ARGUMENT,
               "session is NULL");
  EXPECT_ERROR(strata_rt_load_parameters(NULL, path), STRATA_RT_ERROR_ARGUMENT,
               "session is NULL");
  const char *device = NULL;
  EXPECT_ERROR(strata_rt_session_device(NULL, &device),
               STRATA_RT_ERROR_ARGUMENT, "session is NULL");
  strata_rt_session_destroy(NULL);
  strata_rt_options_init(NULL);
  CHECK(strcmp(strata_rt_status_name(STRATA_RT_ERROR_INVALID), "invalid") == 0);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: capi_test MLP_PLAN OTHER_PLAN SCRATCH_DIR\n");
    return 2;
  }
  makeBatch();
  testTraining(argv[1]);
  testParameters(argv[1]);
  testCheckpoint(argv[1], argv[3]);
  testErrors(argv[1], argv[2], argv[3]);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("all C API checks passed\n");
  return 0;
}
