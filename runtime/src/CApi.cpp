//===- CApi.cpp - The C API of the Strata runtime -------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// strata_rt.h over the C++ runtime: a session is a one-rank Executor plus the
// caller's bound inputs and the step counter. Every entry point runs inside
// `guarded`, which turns a Status or an exception into a status code and the
// thread's last error message.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/strata_rt.h"

#include "strata-rt/Checkpoint.h"
#include "strata-rt/Data.h"
#include "strata-rt/Executor.h"
#include "strata-rt/Plan.h"
#include "strata-rt/Train.h"

#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

using namespace strata::rt;

namespace {

/// A data or labels input and the caller's copy of it.
struct BoundInput {
  const Input *input = nullptr;
  std::vector<unsigned char> bytes;
  bool bound = false;
};

} // namespace

struct strata_rt_session {
  std::unique_ptr<Executor> executor;
  uint64_t seed = 0;
  /// The last completed step.
  int64_t step = 0;
  std::vector<BoundInput> inputs;
  std::string device;
};

namespace {

thread_local std::string lastError;

strata_rt_status fail(strata_rt_status code, std::string message) {
  lastError = std::move(message);
  return code;
}

strata_rt_status fail(const Status &status) {
  switch (status.code()) {
  case Status::Code::Ok:
    return STRATA_RT_OK;
  case Status::Code::Failure:
    return fail(STRATA_RT_ERROR_FAILURE, status.message());
  case Status::Code::Usage:
    return fail(STRATA_RT_ERROR_USAGE, status.message());
  case Status::Code::Invalid:
    return fail(STRATA_RT_ERROR_INVALID, status.message());
  }
  return fail(STRATA_RT_ERROR_INTERNAL, status.message());
}

strata_rt_status argumentError(std::string message) {
  return fail(STRATA_RT_ERROR_ARGUMENT, std::move(message));
}

/// Runs `body` with the last error cleared; no exception escapes.
template <typename Body> strata_rt_status guarded(Body &&body) noexcept {
  lastError.clear();
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(STRATA_RT_ERROR_INTERNAL, "out of memory");
  } catch (const std::exception &e) {
    return fail(STRATA_RT_ERROR_INTERNAL,
                std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(STRATA_RT_ERROR_INTERNAL, "internal error: unknown exception");
  }
}

/// A NULL handle or required pointer.
strata_rt_status nullError(const char *function, const char *what) {
  return argumentError(std::string(function) + ": " + what + " is NULL");
}

strata_rt_dtype toCDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return STRATA_RT_F32;
  case DType::I32:
    return STRATA_RT_I32;
  case DType::I8:
    return STRATA_RT_I8;
  }
  return STRATA_RT_F32;
}

const char *cDTypeName(strata_rt_dtype dtype) {
  switch (dtype) {
  case STRATA_RT_F32:
    return "f32";
  case STRATA_RT_I32:
    return "i32";
  case STRATA_RT_I8:
    return "i8";
  }
  return "an unknown dtype";
}

/// "f32 [16, 128]".
std::string describe(const TensorDesc &desc) {
  return std::string(dtypeName(desc.dtype)) + " " + formatShape(desc.shape);
}

/// Checks a caller buffer of `bytes` bytes of `dtype` against `desc`.
strata_rt_status checkBytes(const char *what, const std::string &name,
                            const TensorDesc &desc, strata_rt_dtype dtype,
                            size_t bytes) {
  std::string subject = std::string(what) + " '" + name + "'";
  if (dtype != toCDType(desc.dtype))
    return argumentError(subject + " is " + describe(desc) + ", got " +
                         cDTypeName(dtype) + " data");
  if (static_cast<int64_t>(bytes) != desc.bytes())
    return argumentError(subject + " needs " + std::to_string(desc.bytes()) +
                         " bytes (" + describe(desc) + "), got " +
                         std::to_string(bytes));
  return STRATA_RT_OK;
}

/// Resolves the device option as `strata-run --device` does.
Status chooseDevice(const char *text, const Plan &plan,
                    ExecutorOptions &options) {
  options.device = plan.ranks[0].device;
  DeviceOptions device;
  std::string name = text ? text : "";
  if (name == "cpu") {
    options.device = DeviceKind::Cpu;
  } else if (name == "cuda") {
    options.device = DeviceKind::Cuda;
  } else if (name.rfind("cuda:", 0) == 0) {
    std::string digits = name.substr(5);
    if (digits.empty() || digits.size() > 4 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      return Status::usage("device: invalid GPU number in '" + name + "'");
    options.device = DeviceKind::Cuda;
    device.ordinal = std::stoi(digits);
  } else if (!name.empty()) {
    return Status::usage("device must be cpu, cuda or cuda:N, got '" + name +
                         "'");
  }
  if (options.device != DeviceKind::Cuda)
    return Status::success();
  std::unique_ptr<DeviceBackend> backend;
  Status status = createCudaBackend(device, backend);
  options.backend = std::move(backend);
  return status;
}

/// Creates a session on a loaded plan.
strata_rt_status createSession(Plan plan, const strata_rt_options *given,
                               strata_rt_session **out) {
  strata_rt_options options;
  strata_rt_options_init(&options);
  if (given)
    options = *given;
  if (options.threads < 0 || options.threads > kMaxThreads)
    return fail(STRATA_RT_ERROR_USAGE,
                "threads must be between 0 and " + std::to_string(kMaxThreads) +
                    ", got " + std::to_string(options.threads));
  if (plan.worldSize() != 1)
    return fail(STRATA_RT_ERROR_USAGE,
                plan.path + " is a plan for " +
                    std::to_string(plan.worldSize()) +
                    " ranks; the C API runs one-rank plans");
  ExecutorOptions executorOptions;
  executorOptions.threads = options.threads;
  if (Status status = chooseDevice(options.device, plan, executorOptions);
      !status.ok())
    return fail(status);
  auto session = std::make_unique<strata_rt_session>();
  if (Status status =
          Executor::create(std::move(plan), executorOptions, session->executor);
      !status.ok())
    return fail(status);
  session->seed = options.seed;
  session->executor->initialize(options.seed);
  session->device = session->executor->describeDevice();
  for (const Input &input : session->executor->getPlan().inputs)
    if (input.role != InputRole::Step)
      session->inputs.push_back({&input, {}, false});
  *out = session.release();
  return STRATA_RT_OK;
}

const Buffer &bufferOf(const strata_rt_session *session, int64_t id) {
  return session->executor->getPlan().buffers[id];
}

void fillInfo(const Buffer &buffer, strata_rt_role role,
              strata_rt_tensor_info *info) {
  info->name = buffer.name.c_str();
  info->role = role;
  info->dtype = toCDType(buffer.desc.dtype);
  info->rank = buffer.desc.shape.size();
  info->shape = buffer.desc.shape.data();
  info->bytes = static_cast<size_t>(buffer.desc.bytes());
}

/// The parameter called `name`, or nullptr.
const Parameter *findParameter(const strata_rt_session *session,
                               const char *name) {
  for (const Parameter &param : session->executor->getPlan().parameters)
    if (param.name == name)
      return &param;
  return nullptr;
}

/// The bound input called `name`, or nullptr.
BoundInput *findInput(strata_rt_session *session, const char *name) {
  for (BoundInput &input : session->inputs)
    if (input.input->name == name)
      return &input;
  return nullptr;
}

std::string knownNames(const strata_rt_session *session, bool parameters) {
  std::string names;
  auto add = [&](const std::string &name) {
    names += (names.empty() ? "'" : ", '") + name + "'";
  };
  if (parameters)
    for (const Parameter &param : session->executor->getPlan().parameters)
      add(param.name);
  else
    for (const BoundInput &input : session->inputs)
      add(input.input->name);
  return names.empty() ? "none" : names;
}

/// Copies the bound inputs into the executor's input buffers (they are
/// copied before every step: the arena is the executor's to reuse).
strata_rt_status copyInputs(strata_rt_session *session) {
  for (const BoundInput &input : session->inputs) {
    if (!input.bound)
      return argumentError("input '" + input.input->name +
                           "' is not bound (strata_rt_bind_input)");
    const Tensor &tensor = session->executor->getTensor(input.input->buffer);
    std::memcpy(tensor.data, input.bytes.data(), input.bytes.size());
  }
  return STRATA_RT_OK;
}

strata_rt_status runStep(strata_rt_session *session, Executor::StepPart part,
                         float *loss) {
  if (strata_rt_status status = copyInputs(session))
    return status;
  int64_t step = session->step + (part == Executor::StepPart::All ? 1 : 0);
  float value = 0;
  if (Status status = session->executor->runStep(step, value, part);
      !status.ok())
    return fail(status);
  session->step = step;
  if (loss)
    *loss = value;
  return STRATA_RT_OK;
}

} // namespace

extern "C" {

const char *strata_rt_last_error(void) { return lastError.c_str(); }

const char *strata_rt_status_name(strata_rt_status status) {
  switch (status) {
  case STRATA_RT_OK:
    return "ok";
  case STRATA_RT_ERROR_FAILURE:
    return "failure";
  case STRATA_RT_ERROR_USAGE:
    return "usage";
  case STRATA_RT_ERROR_INVALID:
    return "invalid";
  case STRATA_RT_ERROR_ARGUMENT:
    return "argument";
  case STRATA_RT_ERROR_INTERNAL:
    return "internal";
  }
  return "unknown";
}

void strata_rt_options_init(strata_rt_options *options) {
  if (!options)
    return;
  options->threads = 0;
  options->seed = 0;
  options->device = nullptr;
}

strata_rt_status
strata_rt_session_create_from_file(const char *path,
                                   const strata_rt_options *options,
                                   strata_rt_session **session) {
  return guarded([&] {
    if (!session)
      return nullError("strata_rt_session_create_from_file", "session");
    *session = nullptr;
    if (!path)
      return nullError("strata_rt_session_create_from_file", "path");
    Plan plan;
    if (Status status = loadPlan(path, plan); !status.ok())
      return fail(status);
    return createSession(std::move(plan), options, session);
  });
}

strata_rt_status
strata_rt_session_create_from_memory(const char *json, size_t length,
                                     const strata_rt_options *options,
                                     strata_rt_session **session) {
  return guarded([&] {
    if (!session)
      return nullError("strata_rt_session_create_from_memory", "session");
    *session = nullptr;
    if (!json)
      return nullError("strata_rt_session_create_from_memory", "json");
    Plan plan;
    if (Status status = parsePlan(std::string(json, length), "<memory>", plan);
        !status.ok())
      return fail(status);
    return createSession(std::move(plan), options, session);
  });
}

void strata_rt_session_destroy(strata_rt_session *session) {
  try {
    delete session;
  } catch (...) {
    // Destructors do not throw; nothing may escape regardless.
  }
}

strata_rt_status strata_rt_session_device(const strata_rt_session *session,
                                          const char **device) {
  return guarded([&] {
    if (!session || !device)
      return nullError("strata_rt_session_device",
                       session ? "device" : "session");
    *device = session->device.c_str();
    return STRATA_RT_OK;
  });
}

strata_rt_status strata_rt_num_inputs(const strata_rt_session *session,
                                      size_t *count) {
  return guarded([&] {
    if (!session || !count)
      return nullError("strata_rt_num_inputs", session ? "count" : "session");
    *count = session->inputs.size();
    return STRATA_RT_OK;
  });
}

strata_rt_status strata_rt_input_info(const strata_rt_session *session,
                                      size_t index,
                                      strata_rt_tensor_info *info) {
  return guarded([&] {
    if (!session || !info)
      return nullError("strata_rt_input_info", session ? "info" : "session");
    if (index >= session->inputs.size())
      return argumentError("input index " + std::to_string(index) +
                           " out of range (the plan has " +
                           std::to_string(session->inputs.size()) + ")");
    const Input &input = *session->inputs[index].input;
    fillInfo(bufferOf(session, input.buffer),
             input.role == InputRole::Labels ? STRATA_RT_ROLE_LABELS
                                             : STRATA_RT_ROLE_DATA,
             info);
    return STRATA_RT_OK;
  });
}

strata_rt_status strata_rt_num_parameters(const strata_rt_session *session,
                                          size_t *count) {
  return guarded([&] {
    if (!session || !count)
      return nullError("strata_rt_num_parameters",
                       session ? "count" : "session");
    *count = session->executor->getPlan().parameters.size();
    return STRATA_RT_OK;
  });
}

strata_rt_status strata_rt_parameter_info(const strata_rt_session *session,
                                          size_t index,
                                          strata_rt_tensor_info *info) {
  return guarded([&] {
    if (!session || !info)
      return nullError("strata_rt_parameter_info",
                       session ? "info" : "session");
    const std::vector<Parameter> &params =
        session->executor->getPlan().parameters;
    if (index >= params.size())
      return argumentError("parameter index " + std::to_string(index) +
                           " out of range (the plan has " +
                           std::to_string(params.size()) + ")");
    fillInfo(bufferOf(session, params[index].buffer), STRATA_RT_ROLE_PARAMETER,
             info);
    info->name = params[index].name.c_str();
    return STRATA_RT_OK;
  });
}

strata_rt_status strata_rt_bind_input(strata_rt_session *session,
                                      const char *name, strata_rt_dtype dtype,
                                      const void *data, size_t bytes) {
  return guarded([&] {
    if (!session || !name || !data)
      return nullError("strata_rt_bind_input", !session ? "session"
                                               : !name  ? "name"
                                                        : "data");
    BoundInput *input = findInput(session, name);
    if (!input)
      return argumentError(
          "no input '" + std::string(name) +
          "' (the plan's inputs: " + knownNames(session, false) + ")");
    const TensorDesc &desc = bufferOf(session, input->input->buffer).desc;
    if (strata_rt_status status = checkBytes("input", name, desc, dtype, bytes))
      return status;
    const auto *begin = static_cast<const unsigned char *>(data);
    input->bytes.assign(begin, begin + bytes);
    input->bound = true;
    return STRATA_RT_OK;
  });
}

strata_rt_status strata_rt_bind_synthetic(strata_rt_session *session,
                                          int64_t step) {
  return guarded([&] {
    if (!session)
      return nullError("strata_rt_bind_synthetic", "session");
    if (step < 1)
      return argumentError("synthetic batches are numbered from 1, got " +
                           std::to_string(step));
    Executor &executor = *session->executor;
    std::unique_ptr<DataSource> source;
    if (Status status = DataSource::create(
            executor.getPlan(), DataOptions{session->seed, "", 0, nullptr},
            source);
        !status.ok())
      return fail(status);
    // The source fills views of the session's copies, not the arena.
    std::vector<Tensor> views = executor.getTensors();
    for (BoundInput &input : session->inputs) {
      input.bytes.assign(bufferOf(session, input.input->buffer).bytes, 0);
      views[input.input->buffer].data = input.bytes.data();
    }
    source->fill(step, views, &executor.getPool());
    for (BoundInput &input : session->inputs)
      input.bound = true;
    return STRATA_RT_OK;
  });
}

strata_rt_status strata_rt_step(strata_rt_session *session, float *loss) {
  return guarded([&] {
    if (!session)
      return nullError("strata_rt_step", "session");
    return runStep(session, Executor::StepPart::All, loss);
  });
}

strata_rt_status strata_rt_run_steps(strata_rt_session *session, int64_t steps,
                                     float *loss) {
  return guarded([&] {
    if (!session)
      return nullError("strata_rt_run_steps", "session");
    if (steps < 1)
      return argumentError("steps must be at least 1, got " +
                           std::to_string(steps));
    for (int64_t i = 0; i < steps; ++i)
      if (strata_rt_status status =
              runStep(session, Executor::StepPart::All, loss))
        return status;
    return STRATA_RT_OK;
  });
}

strata_rt_status strata_rt_forward(strata_rt_session *session, float *loss) {
  return guarded([&] {
    if (!session)
      return nullError("strata_rt_forward", "session");
    return runStep(session, Executor::StepPart::Forward, loss);
  });
}

strata_rt_status strata_rt_step_count(const strata_rt_session *session,
                                      int64_t *step) {
  return guarded([&] {
    if (!session || !step)
      return nullError("strata_rt_step_count", session ? "step" : "session");
    *step = session->step;
    return STRATA_RT_OK;
  });
}

/// The checks get_parameter and set_parameter share: non-null arguments, a
/// known parameter, the caller's byte count; then the device's newer values
/// are brought home. On success `id` is the parameter's buffer.
static strata_rt_status resolveParameter(strata_rt_session *session,
                                         const char *function, const char *name,
                                         const void *data, size_t bytes,
                                         int64_t &id) {
  if (!session || !name || !data)
    return nullError(function, !session ? "session" : !name ? "name" : "data");
  const Parameter *param = findParameter(session, name);
  if (!param)
    return argumentError(
        "no parameter '" + std::string(name) +
        "' (the plan's parameters: " + knownNames(session, true) + ")");
  const Buffer &buffer = bufferOf(session, param->buffer);
  if (strata_rt_status status = checkBytes("parameter", name, buffer.desc,
                                           toCDType(buffer.desc.dtype), bytes))
    return status;
  if (Status status = session->executor->syncToHost(); !status.ok())
    return fail(status);
  id = param->buffer;
  return STRATA_RT_OK;
}

strata_rt_status strata_rt_get_parameter(strata_rt_session *session,
                                         const char *name, void *data,
                                         size_t bytes) {
  return guarded([&] {
    int64_t id = 0;
    if (strata_rt_status status = resolveParameter(
            session, "strata_rt_get_parameter", name, data, bytes, id))
      return status;
    std::memcpy(data, session->executor->getTensor(id).data, bytes);
    return STRATA_RT_OK;
  });
}

strata_rt_status strata_rt_set_parameter(strata_rt_session *session,
                                         const char *name, const void *data,
                                         size_t bytes) {
  return guarded([&] {
    // The device's newer states come home first, so the host copy wins.
    int64_t id = 0;
    if (strata_rt_status status = resolveParameter(
            session, "strata_rt_set_parameter", name, data, bytes, id))
      return status;
    std::memcpy(session->executor->getTensor(id).data, data, bytes);
    session->executor->markHostModified();
    return STRATA_RT_OK;
  });
}

strata_rt_status strata_rt_save_checkpoint(strata_rt_session *session,
                                           const char *path) {
  return guarded([&] {
    if (!session || !path)
      return nullError("strata_rt_save_checkpoint",
                       session ? "path" : "session");
    return fail(
        saveCheckpoint(*session->executor, path, session->step, session->seed));
  });
}

strata_rt_status strata_rt_load_checkpoint(strata_rt_session *session,
                                           const char *path) {
  return guarded([&] {
    if (!session || !path)
      return nullError("strata_rt_load_checkpoint",
                       session ? "path" : "session");
    CheckpointInfo info;
    if (Status status = loadCheckpoint(*session->executor, path,
                                       CheckpointContents::Everything, info);
        !status.ok())
      return fail(status);
    session->step = info.step;
    session->seed = info.seed;
    return STRATA_RT_OK;
  });
}

strata_rt_status strata_rt_load_parameters(strata_rt_session *session,
                                           const char *path) {
  return guarded([&] {
    if (!session || !path)
      return nullError("strata_rt_load_parameters",
                       session ? "path" : "session");
    CheckpointInfo info;
    return fail(loadCheckpoint(*session->executor, path,
                               CheckpointContents::Parameters, info));
  });
}

} // extern "C"
