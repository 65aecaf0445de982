/*===- strata_rt.h - The C API of the Strata runtime --------------*- C -*-===*\
|*                                                                            *|
|* Part of the Strata runtime, which never includes an MLIR header.          *|
|*                                                                            *|
|* A plain C99 interface to load a plan (docs/plan-format.md), feed it       *|
|* batches from caller memory, run training steps, read and write            *|
|* parameters and save and restore checkpoints. It is what languages other   *|
|* than C++ bind to (python/strata uses it through ctypes); link             *|
|* libstrata_rt_c.so.                                                        *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

/* Conventions
 *
 * - Every entry point returns a strata_rt_status: STRATA_RT_OK (0) on
 *   success, a non-zero code otherwise. The message of a failed call is
 *   strata_rt_last_error(), kept per thread until the next call into this
 *   API on the same thread (every call clears it on entry). Nothing aborts
 *   or throws across this interface: C++ exceptions and runtime errors
 *   become status codes.
 * - Handles are opaque. strata_rt_session_destroy(NULL) does nothing; every
 *   other function given a NULL handle or a NULL required pointer returns
 *   STRATA_RT_ERROR_ARGUMENT.
 * - Strings and shapes returned through strata_rt_tensor_info belong to the
 *   session and stay valid until it is destroyed.
 * - Data crosses the interface by copy, in the plan's dtype (f32 or i32,
 *   native byte order, dense row-major); every copy checks the byte size.
 * - A session is not thread-safe: call it from one thread at a time.
 */

#ifndef STRATA_RT_STRATA_RT_H
#define STRATA_RT_STRATA_RT_H

#include <stddef.h>
#include <stdint.h>

/* The library is built with hidden visibility; only these are exported. */
#if defined(__GNUC__)
#define STRATA_RT_API __attribute__((visibility("default")))
#else
#define STRATA_RT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum strata_rt_status {
  STRATA_RT_OK = 0,
  /* A run-time failure: I/O, an id out of range, no usable device. */
  STRATA_RT_ERROR_FAILURE = 1,
  /* Contradictory or out-of-range options (threads, device). */
  STRATA_RT_ERROR_USAGE = 2,
  /* An invalid plan or checkpoint file. */
  STRATA_RT_ERROR_INVALID = 3,
  /* A bad argument: a NULL handle or pointer, an unknown name, a buffer of
   * the wrong size or dtype, an index out of range. */
  STRATA_RT_ERROR_ARGUMENT = 4,
  /* An unexpected internal error (out of memory, a C++ exception). */
  STRATA_RT_ERROR_INTERNAL = 5
} strata_rt_status;

typedef enum strata_rt_dtype {
  STRATA_RT_F32 = 0,
  STRATA_RT_I32 = 1,
  /* Raw bytes (packed compressed activations). */
  STRATA_RT_I8 = 2
} strata_rt_dtype;

typedef enum strata_rt_role {
  /* The plan's `data` input (features, tokens). */
  STRATA_RT_ROLE_DATA = 0,
  /* The plan's `labels` input (class ids or regression targets). */
  STRATA_RT_ROLE_LABELS = 1,
  /* A trainable parameter. */
  STRATA_RT_ROLE_PARAMETER = 2
} strata_rt_role;

/* A loaded plan with its executor, parameters, optimizer state, bound
 * inputs and step counter. */
typedef struct strata_rt_session strata_rt_session;

typedef struct strata_rt_options {
  /* Kernel worker threads, 1 to 1024; 0: one per hardware thread. */
  int threads;
  /* Seed of the parameter initialisation (and of strata_rt_bind_synthetic). */
  uint64_t seed;
  /* NULL or "": what the plan says (normally cpu); "cpu", "cuda" or
   * "cuda:N". A GPU device fails cleanly (STRATA_RT_ERROR_FAILURE) when the
   * runtime was built without CUDA or no GPU is usable. */
  const char *device;
} strata_rt_options;

/* Shape and type of an input or a parameter. */
typedef struct strata_rt_tensor_info {
  const char *name;
  strata_rt_role role;
  strata_rt_dtype dtype;
  size_t rank;
  /* `rank` dimensions. */
  const int64_t *shape;
  /* Bytes of the whole tensor (elements times 4). */
  size_t bytes;
} strata_rt_tensor_info;

/* The message of the last call on this thread, "" when it succeeded. Never
 * NULL. */
STRATA_RT_API const char *strata_rt_last_error(void);
/* "ok", "failure", "usage", "invalid", "argument", "internal". */
STRATA_RT_API const char *strata_rt_status_name(strata_rt_status status);

/* Fills `options` with the defaults (threads 0, seed 0, the plan's
 * device). */
STRATA_RT_API void strata_rt_options_init(strata_rt_options *options);

/* Loads and validates a plan, creates its executor and initialises every
 * parameter and state from the plan's initialisers with `options->seed`
 * (NULL options: the defaults). On failure `*session` is set to NULL. Plans
 * for more than one rank are refused. */
STRATA_RT_API strata_rt_status strata_rt_session_create_from_file(
    const char *path, const strata_rt_options *options,
    strata_rt_session **session);
/* As above, for plan JSON text of `length` bytes in memory. */
STRATA_RT_API strata_rt_status strata_rt_session_create_from_memory(
    const char *json, size_t length, const strata_rt_options *options,
    strata_rt_session **session);
/* Frees the session; NULL does nothing. */
STRATA_RT_API void strata_rt_session_destroy(strata_rt_session *session);
/* "cpu (N threads)" or the GPU's description; owned by the session. */
STRATA_RT_API strata_rt_status
strata_rt_session_device(const strata_rt_session *session, const char **device);

/* The data and labels inputs the caller binds (the plan's step counter is
 * not one of them), in plan order. */
STRATA_RT_API strata_rt_status
strata_rt_num_inputs(const strata_rt_session *session, size_t *count);
STRATA_RT_API strata_rt_status
strata_rt_input_info(const strata_rt_session *session, size_t index,
                     strata_rt_tensor_info *info);
/* The trainable parameters, in plan order. */
STRATA_RT_API strata_rt_status
strata_rt_num_parameters(const strata_rt_session *session, size_t *count);
STRATA_RT_API strata_rt_status
strata_rt_parameter_info(const strata_rt_session *session, size_t index,
                         strata_rt_tensor_info *info);

/* Copies `bytes` bytes of `dtype` elements into input `name` for the steps
 * that follow (until it is bound again). The dtype and the byte size must
 * be the input's: "input 'x' needs 8192 bytes (f32 [16, 128]), got 4096". */
STRATA_RT_API strata_rt_status strata_rt_bind_input(strata_rt_session *session,
                                                    const char *name,
                                                    strata_rt_dtype dtype,
                                                    const void *data,
                                                    size_t bytes);
/* Binds every input to the synthetic batch `strata-run` trains on at step
 * `step` (1-based) with the session's seed (runtime/include/strata-rt/
 * Data.h): the same seed and steps give strata-run's losses. */
STRATA_RT_API strata_rt_status
strata_rt_bind_synthetic(strata_rt_session *session, int64_t step);

/* Runs one training step (forward, backward, optimizer update) on the bound
 * inputs and stores its loss in `*loss` (may be NULL). Every input must be
 * bound. A non-finite loss is returned, not an error. */
STRATA_RT_API strata_rt_status strata_rt_step(strata_rt_session *session,
                                              float *loss);
/* Runs `steps` >= 1 training steps on the bound inputs; `*loss` (may be
 * NULL) is the loss of the last one. */
STRATA_RT_API strata_rt_status strata_rt_run_steps(strata_rt_session *session,
                                                   int64_t steps, float *loss);
/* Runs only the forward pass on the bound inputs (no gradients, no update,
 * the step counter unchanged) and stores the loss. */
STRATA_RT_API strata_rt_status strata_rt_forward(strata_rt_session *session,
                                                 float *loss);
/* The number of the last completed step (0 after creation; a loaded
 * checkpoint's step). */
STRATA_RT_API strata_rt_status
strata_rt_step_count(const strata_rt_session *session, int64_t *step);

/* Copies parameter `name` into `data` (`bytes` must be its size). */
STRATA_RT_API strata_rt_status strata_rt_get_parameter(
    strata_rt_session *session, const char *name, void *data, size_t bytes);
/* Overwrites parameter `name` from `data` (`bytes` must be its size). */
STRATA_RT_API strata_rt_status
strata_rt_set_parameter(strata_rt_session *session, const char *name,
                        const void *data, size_t bytes);

/* Writes a checkpoint (safetensors: every parameter and optimizer state,
 * the step and the seed; runtime/include/strata-rt/Checkpoint.h)
 * atomically. */
STRATA_RT_API strata_rt_status
strata_rt_save_checkpoint(strata_rt_session *session, const char *path);
/* Restores a checkpoint written for the same plan: parameters, states, the
 * step counter and the seed. A file that does not fit the plan changes
 * nothing. */
STRATA_RT_API strata_rt_status
strata_rt_load_checkpoint(strata_rt_session *session, const char *path);
/* Loads only the parameters of a safetensors file (strata-run --init);
 * states and the step counter are unchanged. */
STRATA_RT_API strata_rt_status
strata_rt_load_parameters(strata_rt_session *session, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_RT_STRATA_RT_H */
