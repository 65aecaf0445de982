//===- Plan.cpp - Plan loader and validator -------------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Every check throws a PlanError naming the field; `parsePlan` catches it
// (and anything else), so no exception leaves this file.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Plan.h"
#include "strata-rt/Liveness.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <exception>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace strata::rt {

using json = nlohmann::json;

//===----------------------------------------------------------------------===//
// Enum names
//===----------------------------------------------------------------------===//

const char *bufferKindName(BufferKind kind) {
  switch (kind) {
  case BufferKind::Param:
    return "param";
  case BufferKind::Grad:
    return "grad";
  case BufferKind::State:
    return "state";
  case BufferKind::Input:
    return "input";
  case BufferKind::Activation:
    return "activation";
  }
  return "?";
}

bool parseBufferKind(const std::string &name, BufferKind &kind) {
  for (BufferKind k : {BufferKind::Param, BufferKind::Grad, BufferKind::State,
                       BufferKind::Input, BufferKind::Activation}) {
    if (name == bufferKindName(k)) {
      kind = k;
      return true;
    }
  }
  return false;
}

const char *initKindName(InitKind kind) {
  switch (kind) {
  case InitKind::Zeros:
    return "zeros";
  case InitKind::Ones:
    return "ones";
  case InitKind::Normal:
    return "normal";
  case InitKind::Uniform:
    return "uniform";
  case InitKind::XavierUniform:
    return "xavier_uniform";
  case InitKind::KaimingNormal:
    return "kaiming_normal";
  }
  return "?";
}

bool parseInitKind(const std::string &name, InitKind &kind) {
  for (InitKind k :
       {InitKind::Zeros, InitKind::Ones, InitKind::Normal, InitKind::Uniform,
        InitKind::XavierUniform, InitKind::KaimingNormal}) {
    if (name == initKindName(k)) {
      kind = k;
      return true;
    }
  }
  return false;
}

const char *inputRoleName(InputRole role) {
  switch (role) {
  case InputRole::Data:
    return "data";
  case InputRole::Labels:
    return "labels";
  case InputRole::Step:
    return "step";
  }
  return "?";
}

static bool parseInputRole(const std::string &name, InputRole &role) {
  for (InputRole r : {InputRole::Data, InputRole::Labels, InputRole::Step}) {
    if (name == inputRoleName(r)) {
      role = r;
      return true;
    }
  }
  return false;
}

const char *deviceKindName(DeviceKind kind) {
  return kind == DeviceKind::Cuda ? "cuda" : "cpu";
}

bool parseDeviceKind(const std::string &name, DeviceKind &kind) {
  if (name == "cpu")
    kind = DeviceKind::Cpu;
  else if (name == "cuda")
    kind = DeviceKind::Cuda;
  else
    return false;
  return true;
}

int64_t Plan::rankOf(int64_t stage, int64_t replica) const {
  for (const RankPlan &rank : ranks)
    if (rank.stage == stage && rank.replica == replica)
      return rank.rank;
  return -1;
}

const Input *Plan::findInput(InputRole role) const {
  for (const Input &input : inputs)
    if (input.role == role)
      return &input;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// JSON access with field paths
//===----------------------------------------------------------------------===//

namespace {

struct PlanError {
  std::string message;
};

[[noreturn]] void fail(const std::string &where, const std::string &what) {
  throw PlanError{where.empty() ? what : where + ": " + what};
}

std::string member(const std::string &where, const char *key) {
  return where.empty() ? std::string(key) : where + "." + key;
}

std::string element(const std::string &where, size_t index) {
  return where + "[" + std::to_string(index) + "]";
}

/// "string \"abc\"", "number 1.5", ... for messages.
std::string describe(const json &value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40)
    text = text.substr(0, 37) + "...";
  return std::string(value.type_name()) + " " + text;
}

const json *optionalField(const json &object, const char *key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const json &field(const json &object, const char *key,
                  const std::string &where) {
  if (const json *value = optionalField(object, key))
    return *value;
  fail(where, std::string("missing field '") + key + "'");
}

const json &expectObject(const json &value, const std::string &where) {
  if (!value.is_object())
    fail(where, "must be an object, got " + describe(value));
  return value;
}

const json &expectArray(const json &value, const std::string &where) {
  if (!value.is_array())
    fail(where, "must be an array, got " + describe(value));
  return value;
}

std::string readString(const json &value, const std::string &where) {
  if (!value.is_string())
    fail(where, "must be a string, got " + describe(value));
  return value.get<std::string>();
}

int64_t readInt(const json &value, const std::string &where) {
  if (value.is_number_unsigned()) {
    uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(where, "integer " + value.dump() + " is out of range");
    return static_cast<int64_t>(u);
  }
  if (!value.is_number_integer())
    fail(where, "must be an integer, got " + describe(value));
  return value.get<int64_t>();
}

int64_t readNonNegative(const json &value, const std::string &where) {
  int64_t v = readInt(value, where);
  if (v < 0)
    fail(where, "must be non-negative, got " + std::to_string(v));
  return v;
}

double readNumber(const json &value, const std::string &where) {
  if (value.is_boolean())
    return value.get<bool>() ? 1.0 : 0.0;
  if (!value.is_number())
    fail(where, "must be a number, got " + describe(value));
  return value.get<double>();
}

std::string readStringField(const json &object, const char *key,
                            const std::string &where) {
  return readString(field(object, key, where), member(where, key));
}

std::string optionalStringField(const json &object, const char *key,
                                const std::string &where,
                                const std::string &fallback = "") {
  const json *value = optionalField(object, key);
  return value ? readString(*value, member(where, key)) : fallback;
}

int64_t optionalIntField(const json &object, const char *key,
                         const std::string &where, int64_t fallback) {
  const json *value = optionalField(object, key);
  return value ? readInt(*value, member(where, key)) : fallback;
}

/// Product of non-negative dims, or -1 above 2^60 elements.
int64_t checkedNumel(const Shape &shape) {
  const int64_t limit = int64_t(1) << 60;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d != 0 && n > limit / d)
      return -1;
    n *= d;
  }
  return n;
}

//===----------------------------------------------------------------------===//
// The loader
//===----------------------------------------------------------------------===//

class PlanParser {
public:
  explicit PlanParser(Plan &plan) : plan(plan) {}

  void parse(const json &root) {
    expectObject(root, "");
    parseHeader(root);
    parseBuffers(expectArray(field(root, "buffers", ""), "buffers"));
    std::vector<const json *> programs =
        parseRanks(expectArray(field(root, "ranks", ""), "ranks"));
    parseGroups(root);
    parseParameters(expectArray(field(root, "parameters", ""), "parameters"));
    parseStates(expectArray(field(root, "states", ""), "states"));
    parseInputs(expectArray(field(root, "inputs", ""), "inputs"));
    checkEveryBufferClaimed();
    parseLoss(field(root, "loss", ""));
    for (size_t r = 0; r < programs.size(); ++r)
      if (programs[r])
        parseProgram(*programs[r], static_cast<int64_t>(r));
    checkPipeline();
    checkStaleness();
    checkBufferLifetimes();
  }

private:
  Plan &plan;
  /// Which parameters/states/inputs entry claimed each buffer ("" if none).
  std::vector<std::string> claimedBy;
  /// Parameter and state names: the keys of a checkpoint.
  std::set<std::string> checkpointNames;
  /// Parameter indices by name (parseParameters fills it).
  std::map<std::string, int64_t> parameterIndex;

  void parseHeader(const json &root);
  void parseBuffers(const json &buffers);
  Buffer parseBuffer(const json &entry, size_t index);
  /// A view (Buffer::viewOf) names an activation that is no view, with its
  /// offset and bytes.
  void checkView(const Buffer &view);
  /// Returns each rank's "program" (nullptr for a rank that shares one).
  std::vector<const json *> parseRanks(const json &ranks);
  void parseGroups(const json &root);
  void parseParameters(const json &params);
  void parseStates(const json &states);
  /// Checks a state with `"init": "param"` (a kept weight version): it
  /// names a parameter of its own shape and is no running statistic.
  void checkCopiesParam(const State &state, const Buffer &buffer,
                        const std::string &where);
  void parseInputs(const json &inputs);
  void checkEveryBufferClaimed();
  void parseLoss(const json &loss);
  void parseProgram(const json &program, int64_t rank);
  Instruction parseInstruction(const json &entry, size_t index,
                               const std::string &context);
  void checkCollective(const Instruction &inst, int64_t rank,
                       const std::string &where);
  /// Checks operand counts and aliasing and runs the kernel's verifier on
  /// the attributes as the plan spells them (`raw`); then decodes them.
  void checkOperands(Instruction &inst, const Attrs &raw,
                     const std::string &where);
  /// Stages cover every (stage, replica) once, and every send has the
  /// matching recv (same tag and bytes) on its peer stage and vice versa.
  void checkPipeline();
  /// Every all_reduce_start of a program is waited for by a later
  /// all_reduce_wait of the same bucket on the same buffers.
  void checkBuckets(const std::vector<Instruction> &program,
                    const std::string &context);
  /// Every swap slot of a program runs exactly swap_out, swap_out_wait,
  /// swap_in, swap_in_wait in that order, on matching buffers, and no
  /// instruction touches a buffer while a copy of it is in flight.
  void checkSwaps(const std::vector<Instruction> &program,
                  const std::string &context);
  /// Every compress of a program has a site of its own; every decompress
  /// follows the compress of its site, reads its output and carries its
  /// formats and budget.
  void checkCompression(const std::vector<Instruction> &program,
                        const std::string &context);
  /// Every all_reduce_start carries the same `staleness`; with s > 0 the
  /// lagging aggregation's preconditions hold (see docs/plan-format.md).
  void checkStaleness();
  /// No two buffers that are live at the same time (Liveness.h, over the
  /// plan's own programs) share a byte of the arena.
  void checkBufferLifetimes();

  /// Reads a buffer id and checks it names a `kind` buffer of `dtype`.
  const Buffer &readBufferRef(const json &value, const std::string &where,
                              BufferKind kind, const DType *dtype);
  /// Records that `where` owns `buffer` (each buffer has at most one owner).
  void claim(const Buffer &buffer, const std::string &where);
  void claimName(const std::string &name, const std::string &where);
  InitSpec parseInit(const json &entry, const std::string &where,
                     const Buffer &buffer, bool required);
};

void PlanParser::parseHeader(const json &root) {
  const json &format = field(root, "format", "");
  if (!format.is_string() || format.get<std::string>() != "strata-plan")
    fail("format", "must be \"strata-plan\", got " + describe(format));
  const json &version = field(root, "version", "");
  if (!version.is_number_integer() || readInt(version, "version") < 1 ||
      readInt(version, "version") > kPlanFormatVersion)
    fail("version", "unsupported version " + describe(version) +
                        " (this runtime reads versions 1 to " +
                        std::to_string(kPlanFormatVersion) + ")");
  plan.version = readInt(version, "version");
  plan.model = optionalStringField(root, "model", "");
  plan.producer = optionalStringField(root, "producer", "");
  if (const json *replicas = optionalField(root, "replicas")) {
    plan.replicas = readInt(*replicas, "replicas");
    if (plan.replicas < 1)
      fail("replicas",
           "must be at least 1, got " + std::to_string(plan.replicas));
  }
  if (const json *memory = optionalField(root, "memory_plan")) {
    expectObject(*memory, "memory_plan");
    plan.memoryPlanStrategy =
        optionalStringField(*memory, "strategy", "memory_plan");
  }
  if (const json *updates = optionalField(root, "updates_per_step")) {
    plan.updatesPerStep = readInt(*updates, "updates_per_step");
    if (plan.updatesPerStep < 1)
      fail("updates_per_step",
           "must be at least 1, got " + std::to_string(plan.updatesPerStep));
  }
  if (const json *optimizer = optionalField(root, "optimizer")) {
    expectObject(*optimizer, "optimizer");
    plan.optimizerKind = optionalStringField(*optimizer, "kind", "optimizer");
    for (auto it = optimizer->begin(); it != optimizer->end(); ++it)
      if (it.value().is_number() || it.value().is_boolean())
        plan.optimizer[it.key()] =
            readNumber(it.value(), member("optimizer", it.key().c_str()));
  }
}

void PlanParser::parseBuffers(const json &buffers) {
  for (size_t i = 0; i < buffers.size(); ++i)
    plan.buffers.push_back(parseBuffer(buffers[i], i));
  for (const Buffer &buffer : plan.buffers)
    if (buffer.viewOf >= 0)
      checkView(buffer);
  claimedBy.assign(plan.buffers.size(), "");
}

void PlanParser::checkView(const Buffer &view) {
  std::string where = member(element("buffers", view.id), "view_of");
  std::string of = std::to_string(view.viewOf);
  if (view.viewOf >= static_cast<int64_t>(plan.buffers.size()) ||
      view.viewOf == view.id)
    fail(where, "buffer " + of +
                    " out of range or the buffer itself (the "
                    "plan has " +
                    std::to_string(plan.buffers.size()) + " buffers)");
  const Buffer &viewed = plan.buffers[view.viewOf];
  if (viewed.viewOf >= 0)
    fail(where, "buffer " + of +
                    " is a view itself (name the buffer it "
                    "views, " +
                    std::to_string(viewed.viewOf) + ")");
  if (view.kind != BufferKind::Activation ||
      viewed.kind != BufferKind::Activation)
    fail(where, "only an activation may view an activation, got a " +
                    std::string(bufferKindName(view.kind)) + " viewing a " +
                    bufferKindName(viewed.kind));
  if (view.offset != viewed.offset || view.bytes != viewed.bytes)
    fail(where, "a view has the offset and bytes of buffer " + of + " (" +
                    std::to_string(viewed.offset) + ", " +
                    std::to_string(viewed.bytes) + "), got " +
                    std::to_string(view.offset) + ", " +
                    std::to_string(view.bytes));
}

Buffer PlanParser::parseBuffer(const json &entry, size_t index) {
  std::string where = element("buffers", index);
  expectObject(entry, where);
  Buffer buffer;
  buffer.id = readInt(field(entry, "id", where), member(where, "id"));
  if (buffer.id != static_cast<int64_t>(index))
    fail(member(where, "id"), "must be " + std::to_string(index) +
                                  " (ids are consecutive from 0), got " +
                                  std::to_string(buffer.id));
  buffer.name = readStringField(entry, "name", where);
  std::string kind = readStringField(entry, "kind", where);
  if (!parseBufferKind(kind, buffer.kind))
    fail(member(where, "kind"),
         "unknown kind \"" + kind +
             "\" (expected param, grad, state, input or activation)");
  std::string dtype = readStringField(entry, "dtype", where);
  if (dtype == "bf16")
    fail(member(where, "dtype"),
         "bf16 tensors are not supported: the runtime keeps f32 tensors and "
         "computes bf16 matmuls and convolutions on them; compile the model "
         "with strata-opt --strata-mixed-precision (before "
         "--strata-plan-buffers), or export it with strata-translate "
         "--export-plan, which widens an unplanned bf16 step itself");
  if (!parseDType(dtype, buffer.desc.dtype))
    fail(member(where, "dtype"),
         "unknown dtype \"" + dtype + "\" (expected f32 or i32)");
  std::string shapeWhere = member(where, "shape");
  const json &shape = expectArray(field(entry, "shape", where), shapeWhere);
  for (size_t d = 0; d < shape.size(); ++d)
    buffer.desc.shape.push_back(
        readNonNegative(shape[d], element(shapeWhere, d)));
  buffer.offset =
      readNonNegative(field(entry, "offset", where), member(where, "offset"));
  if (buffer.offset % strata_plan::kBufferAlignment != 0)
    fail(member(where, "offset"),
         "must be a multiple of 64, got " + std::to_string(buffer.offset));
  buffer.bytes =
      readNonNegative(field(entry, "bytes", where), member(where, "bytes"));
  if (const json *view = optionalField(entry, "view_of"))
    buffer.viewOf = readNonNegative(*view, member(where, "view_of"));
  int64_t numel = checkedNumel(buffer.desc.shape);
  if (numel < 0)
    fail(shapeWhere, formatShape(buffer.desc.shape) + " is too large");
  if (buffer.bytes != numel * dtypeSize(buffer.desc.dtype))
    fail(member(where, "bytes"),
         "must be " + std::to_string(numel * dtypeSize(buffer.desc.dtype)) +
             " (" + std::to_string(numel) + " elements of " + dtype +
             "), got " + std::to_string(buffer.bytes));
  return buffer;
}

std::vector<const json *> PlanParser::parseRanks(const json &ranks) {
  if (ranks.empty())
    fail("ranks", "must name at least one rank");
  if (plan.version == 1 && ranks.size() != 1)
    fail("ranks", "version 1 plans have exactly one rank, got " +
                      std::to_string(ranks.size()));
  std::vector<const json *> programs;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const std::string where = element("ranks", r);
    const json &entry = expectObject(ranks[r], where);
    RankPlan rank;
    rank.rank = readInt(field(entry, "rank", where), member(where, "rank"));
    if (rank.rank != static_cast<int64_t>(r))
      fail(member(where, "rank"), "must be " + std::to_string(r) +
                                      " (ranks are listed in order), got " +
                                      std::to_string(rank.rank));
    std::string device = readStringField(entry, "device", where);
    if (!parseDeviceKind(device, rank.device))
      fail(member(where, "device"), "unsupported device \"" + device +
                                        "\" (expected \"cpu\" or \"cuda\")");
    rank.replica = rank.rank;
    if (const json *replica = optionalField(entry, "replica"))
      rank.replica = readNonNegative(*replica, member(where, "replica"));
    if (const json *stage = optionalField(entry, "stage"))
      rank.stage = readNonNegative(*stage, member(where, "stage"));
    rank.arenaBytes = readNonNegative(field(entry, "arena_bytes", where),
                                      member(where, "arena_bytes"));
    for (const Buffer &buffer : plan.buffers) {
      if (buffer.offset > rank.arenaBytes ||
          buffer.bytes > rank.arenaBytes - buffer.offset)
        fail(element("buffers", buffer.id),
             "range [" + std::to_string(buffer.offset) + ", " +
                 std::to_string(buffer.offset + buffer.bytes) +
                 ") lies outside the arena of " +
                 std::to_string(rank.arenaBytes) + " bytes of " + where);
    }
    const json *program = optionalField(entry, "program");
    const json *programOf = optionalField(entry, "program_of");
    if ((program != nullptr) == (programOf != nullptr))
      fail(where, "needs exactly one of \"program\" and \"program_of\"");
    rank.programOf = rank.rank;
    if (programOf) {
      rank.programOf = readInt(*programOf, member(where, "program_of"));
      if (rank.programOf < 0 || rank.programOf >= rank.rank ||
          !programs[rank.programOf])
        fail(member(where, "program_of"),
             "must name an earlier rank that has its own program, got " +
                 std::to_string(rank.programOf));
    } else {
      expectArray(*program, member(where, "program"));
    }
    programs.push_back(program);
    plan.ranks.push_back(std::move(rank));
  }
  // A version 1 plan with replicas: every replica runs rank 0's program.
  if (plan.version == 1)
    for (int64_t r = 1; r < plan.replicas; ++r) {
      RankPlan rank = plan.ranks[0];
      rank.rank = rank.replica = r;
      rank.programOf = 0;
      plan.ranks.push_back(std::move(rank));
      programs.push_back(nullptr);
    }
  for (const RankPlan &rank : plan.ranks)
    if (rank.replica >= plan.replicas)
      fail(member(element("ranks", rank.rank), "replica"),
           "must be less than replicas (" + std::to_string(plan.replicas) +
               "), got " + std::to_string(rank.replica));
  return programs;
}

void PlanParser::parseGroups(const json &root) {
  const json *groups = optionalField(root, "groups");
  if (!groups) {
    CommGroup world{"world", {}};
    for (const RankPlan &rank : plan.ranks)
      world.ranks.push_back(rank.rank);
    plan.groups.push_back(std::move(world));
    return;
  }
  if (plan.version == 1)
    fail("groups", "needs plan version 2");
  expectArray(*groups, "groups");
  std::set<std::string> names;
  for (size_t g = 0; g < groups->size(); ++g) {
    const std::string where = element("groups", g);
    const json &entry = expectObject((*groups)[g], where);
    CommGroup group;
    group.name = readStringField(entry, "name", where);
    if (!names.insert(group.name).second)
      fail(member(where, "name"), "duplicate group \"" + group.name + "\"");
    const std::string ranksWhere = member(where, "ranks");
    const json &ranks = expectArray(field(entry, "ranks", where), ranksWhere);
    if (ranks.empty())
      fail(ranksWhere, "must name at least one rank");
    for (size_t i = 0; i < ranks.size(); ++i) {
      int64_t rank = readInt(ranks[i], element(ranksWhere, i));
      if (rank < 0 || rank >= plan.worldSize())
        fail(element(ranksWhere, i),
             "rank " + std::to_string(rank) + " out of range (the plan has " +
                 std::to_string(plan.worldSize()) + " ranks)");
      if (!group.ranks.empty() && rank <= group.ranks.back())
        fail(element(ranksWhere, i),
             "ranks must be distinct and ascending, got " +
                 std::to_string(rank) + " after " +
                 std::to_string(group.ranks.back()));
      group.ranks.push_back(rank);
    }
    plan.groups.push_back(std::move(group));
  }
}

const Buffer &PlanParser::readBufferRef(const json &value,
                                        const std::string &where,
                                        BufferKind kind, const DType *dtype) {
  int64_t id = readInt(value, where);
  if (id < 0 || id >= static_cast<int64_t>(plan.buffers.size()))
    fail(where, "buffer id " + std::to_string(id) +
                    " out of range (the plan has " +
                    std::to_string(plan.buffers.size()) + " buffers)");
  const Buffer &buffer = plan.buffers[id];
  if (buffer.kind != kind)
    fail(where, "buffer " + std::to_string(id) + " (\"" + buffer.name +
                    "\") must be of kind " + bufferKindName(kind) + ", got " +
                    bufferKindName(buffer.kind));
  if (dtype && buffer.desc.dtype != *dtype)
    fail(where, "buffer " + std::to_string(id) + " (\"" + buffer.name +
                    "\") must be " + dtypeName(*dtype) + ", got " +
                    dtypeName(buffer.desc.dtype));
  return buffer;
}

void PlanParser::claim(const Buffer &buffer, const std::string &where) {
  std::string &owner = claimedBy[buffer.id];
  if (!owner.empty())
    fail(where, "buffer " + std::to_string(buffer.id) + " (\"" + buffer.name +
                    "\") is already used by " + owner);
  owner = where;
}

void PlanParser::claimName(const std::string &name, const std::string &where) {
  if (name.empty())
    fail(where, "must not be empty");
  if (!checkpointNames.insert(name).second)
    fail(where, "duplicate name \"" + name +
                    "\" (parameter and state names must be unique)");
}

/// Fans above this are rejected (they would make no sensible init).
static constexpr int64_t kMaxFan = int64_t(1) << 40;

/// The fans the plan format defines for a shape, or false. A fan that would
/// overflow is returned as -1.
static bool fansFromShape(const Shape &shape, int64_t &fanIn, int64_t &fanOut) {
  switch (shape.size()) {
  case 1:
    fanIn = fanOut = shape[0];
    return true;
  case 2:
    fanIn = shape[0];
    fanOut = shape[1];
    return true;
  case 4:
    fanIn = checkedNumel({shape[1], shape[2], shape[3]});
    fanOut = checkedNumel({shape[0], shape[2], shape[3]});
    return true;
  default:
    return false;
  }
}

InitSpec PlanParser::parseInit(const json &entry, const std::string &where,
                               const Buffer &buffer, bool required) {
  InitSpec spec;
  const json *init = optionalField(entry, "init");
  if (!init && required)
    fail(where, "missing field 'init'");
  if (init) {
    std::string name = readString(*init, member(where, "init"));
    if (!parseInitKind(name, spec.kind))
      fail(member(where, "init"),
           "unknown init \"" + name +
               "\" (expected zeros, ones, normal, uniform, xavier_uniform or "
               "kaiming_normal)");
  }
  if (const json *scale = optionalField(entry, "scale"))
    spec.scale = readNumber(*scale, member(where, "scale"));
  bool derived = fansFromShape(buffer.desc.shape, spec.fanIn, spec.fanOut);
  const json *fanIn = optionalField(entry, "fan_in");
  const json *fanOut = optionalField(entry, "fan_out");
  if (fanIn)
    spec.fanIn = readNonNegative(*fanIn, member(where, "fan_in"));
  if (fanOut)
    spec.fanOut = readNonNegative(*fanOut, member(where, "fan_out"));
  bool xavier = spec.kind == InitKind::XavierUniform;
  if (!xavier && spec.kind != InitKind::KaimingNormal)
    return spec;
  std::string kind = initKindName(spec.kind);
  if (!derived && (!fanIn || !fanOut))
    fail(where, kind + " of a " + formatShape(buffer.desc.shape) +
                    " buffer needs 'fan_in' and 'fan_out'");
  if (spec.fanIn < 0 || spec.fanIn > kMaxFan || spec.fanOut < 0 ||
      spec.fanOut > kMaxFan)
    fail(where, kind + ": fan_in " + std::to_string(spec.fanIn) +
                    " or fan_out " + std::to_string(spec.fanOut) +
                    " is out of range");
  if (xavier ? spec.fanIn + spec.fanOut == 0 : spec.fanIn == 0)
    fail(where, kind + " needs a positive " +
                    (xavier ? "fan_in + fan_out" : "fan_in"));
  return spec;
}

void PlanParser::parseParameters(const json &params) {
  const DType f32 = DType::F32;
  for (size_t i = 0; i < params.size(); ++i) {
    std::string where = element("parameters", i);
    const json &entry = expectObject(params[i], where);
    Parameter param;
    param.name = readStringField(entry, "name", where);
    claimName(param.name, member(where, "name"));
    const Buffer &buffer =
        readBufferRef(field(entry, "buffer", where), member(where, "buffer"),
                      BufferKind::Param, &f32);
    claim(buffer, where);
    param.buffer = buffer.id;
    if (const json *grad = optionalField(entry, "grad")) {
      const Buffer &g =
          readBufferRef(*grad, member(where, "grad"), BufferKind::Grad, &f32);
      if (g.desc.shape != buffer.desc.shape)
        fail(member(where, "grad"), "gradient shape " +
                                        formatShape(g.desc.shape) +
                                        " differs from the parameter's " +
                                        formatShape(buffer.desc.shape));
      claim(g, where);
      param.grad = g.id;
    }
    param.layer = optionalIntField(entry, "layer", where, -1);
    param.init = parseInit(entry, where, buffer, /*required=*/true);
    parameterIndex[param.name] = static_cast<int64_t>(plan.parameters.size());
    plan.parameters.push_back(std::move(param));
  }
}

void PlanParser::checkCopiesParam(const State &state, const Buffer &buffer,
                                  const std::string &where) {
  if (state.running)
    fail(where, "\"param\": a running statistic is no weight version");
  if (state.param.empty())
    fail(where, "\"param\" needs the state's 'param' (the parameter to copy)");
  const Parameter &p = plan.parameters[state.paramIndex];
  if (plan.buffers[p.buffer].desc.shape != buffer.desc.shape)
    fail(where, "\"param\": the state's shape " +
                    formatShape(buffer.desc.shape) +
                    " differs from parameter \"" + state.param + "\"'s " +
                    formatShape(plan.buffers[p.buffer].desc.shape));
}

void PlanParser::parseStates(const json &states) {
  const DType f32 = DType::F32;
  for (size_t i = 0; i < states.size(); ++i) {
    std::string where = element("states", i);
    const json &entry = expectObject(states[i], where);
    State state;
    state.name = readStringField(entry, "name", where);
    claimName(state.name, member(where, "name"));
    std::string kind =
        optionalStringField(entry, "kind", where, std::string("optimizer"));
    if (kind != "optimizer" && kind != "running" && kind != "carry")
      fail(member(where, "kind"), "unknown kind \"" + kind +
                                      "\" (expected optimizer, running or "
                                      "carry)");
    state.running = kind == "running";
    state.carry = kind == "carry";
    // A carried value keeps its element type (e.g. i32 token ids).
    const Buffer &buffer =
        readBufferRef(field(entry, "buffer", where), member(where, "buffer"),
                      BufferKind::State, state.carry ? nullptr : &f32);
    claim(buffer, where);
    state.buffer = buffer.id;
    state.param = optionalStringField(entry, "param", where);
    if (!state.param.empty()) {
      auto named = parameterIndex.find(state.param);
      if (named == parameterIndex.end())
        fail(member(where, "param"),
             "no parameter is named \"" + state.param + "\"");
      state.paramIndex = named->second;
    }
    if (state.running && !state.param.empty())
      fail(member(where, "param"),
           "a running statistic belongs to no parameter");
    if (state.carry && !state.param.empty())
      fail(member(where, "param"), "a carried value belongs to no parameter");
    state.layer = optionalIntField(entry, "layer", where, -1);
    // "param": a copy of the parameter (kept weight versions).
    const json *init = optionalField(entry, "init");
    if (state.carry && init &&
        !(init->is_string() && init->get<std::string>() == "zeros"))
      fail(member(where, "init"), "a carried value starts as zeros");
    if (init && init->is_string() && init->get<std::string>() == "param") {
      checkCopiesParam(state, buffer, member(where, "init"));
      state.copiesParam = true;
    } else {
      state.init = parseInit(entry, where, buffer, /*required=*/false);
    }
    plan.states.push_back(std::move(state));
  }
}

void PlanParser::parseInputs(const json &inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string where = element("inputs", i);
    const json &entry = expectObject(inputs[i], where);
    Input input;
    std::string role = readStringField(entry, "role", where);
    if (!parseInputRole(role, input.role))
      fail(member(where, "role"),
           "unknown role \"" + role + "\" (expected data, labels or step)");
    if (plan.findInput(input.role))
      fail(member(where, "role"),
           "a plan has at most one \"" + role + "\" input");
    const Buffer &buffer =
        readBufferRef(field(entry, "buffer", where), member(where, "buffer"),
                      BufferKind::Input, nullptr);
    claim(buffer, where);
    input.buffer = buffer.id;
    input.name = optionalStringField(entry, "name", where, buffer.name);
    if (input.role == InputRole::Step &&
        (buffer.desc.dtype != DType::I32 || !buffer.desc.shape.empty()))
      fail(member(where, "buffer"),
           "the step input must be a scalar i32, got " +
               std::string(dtypeName(buffer.desc.dtype)) + " " +
               formatShape(buffer.desc.shape));
    plan.inputs.push_back(std::move(input));
  }
}

void PlanParser::checkEveryBufferClaimed() {
  for (const Buffer &buffer : plan.buffers) {
    if (!claimedBy[buffer.id].empty())
      continue;
    const char *list = nullptr;
    switch (buffer.kind) {
    case BufferKind::Param:
      list = "parameters";
      break;
    case BufferKind::State:
      list = "states";
      break;
    case BufferKind::Input:
      list = "inputs";
      break;
    case BufferKind::Grad:
    case BufferKind::Activation:
      continue;
    }
    fail(element("buffers", buffer.id),
         std::string(bufferKindName(buffer.kind)) + " buffer \"" + buffer.name +
             "\" has no entry in '" + list + "'");
  }
}

void PlanParser::parseLoss(const json &loss) {
  int64_t id = readInt(loss, "loss");
  if (id < 0 || id >= static_cast<int64_t>(plan.buffers.size()))
    fail("loss", "buffer id " + std::to_string(id) +
                     " out of range (the plan has " +
                     std::to_string(plan.buffers.size()) + " buffers)");
  const Buffer &buffer = plan.buffers[id];
  if (buffer.desc.dtype != DType::F32 || !buffer.desc.shape.empty())
    fail("loss", "buffer " + std::to_string(id) + " (\"" + buffer.name +
                     "\") must be a scalar f32, got " +
                     dtypeName(buffer.desc.dtype) + " " +
                     formatShape(buffer.desc.shape));
  plan.loss = id;
}

void PlanParser::parseProgram(const json &program, int64_t rank) {
  std::vector<Instruction> &out = plan.ranks[rank].program;
  // Rank 0's instructions read "instruction #3 (matmul)", other ranks'
  // "ranks[2]: instruction #3 (matmul)".
  std::string context = rank == 0 ? "" : element("ranks", rank) + ": ";
  for (size_t i = 0; i < program.size(); ++i)
    out.push_back(parseInstruction(program[i], i, context));
  // A `local` copy_into does not wait for the sends in flight: no send of
  // the program may read what it overwrites.
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].op != OpCode::CopyInto || !out[i].attrs.local)
      continue;
    int64_t written = plan.bytesOf(out[i].out[0]);
    for (size_t j = 0; j < out.size(); ++j)
      if (out[j].info().sends() && plan.bytesOf(out[j].in[0]) == written)
        fail(context + "instruction #" + std::to_string(i) + " (copy_into)",
             "is local, but instruction #" + std::to_string(j) +
                 " (send) sends the buffer it overwrites");
  }
  // Collectives must name groups the ranks sharing this program are in.
  for (size_t i = 0; i < out.size(); ++i)
    for (const RankPlan &user : plan.ranks)
      if (user.programOf == rank)
        checkCollective(out[i], user.rank,
                        context + "instruction #" + std::to_string(i) + " (" +
                            out[i].name() + ")");
  checkBuckets(out, context);
  checkSwaps(out, context);
  checkCompression(out, context);
}

void PlanParser::checkPipeline() {
  for (const RankPlan &rank : plan.ranks)
    plan.stages = std::max(plan.stages, rank.stage + 1);
  // Outside pipelines ranks may repeat a replica (independent groups).
  std::map<std::pair<int64_t, int64_t>, int64_t> owner;
  for (const RankPlan &rank : plan.ranks) {
    if (plan.stages == 1)
      break;
    auto [it, fresh] = owner.try_emplace({rank.stage, rank.replica}, rank.rank);
    if (!fresh)
      fail(element("ranks", rank.rank),
           "runs stage " + std::to_string(rank.stage) + " of replica " +
               std::to_string(rank.replica) + ", as rank " +
               std::to_string(it->second) + " does");
  }
  for (int64_t s = 0; plan.stages > 1 && s < plan.stages; ++s)
    for (int64_t r = 0; r < plan.replicas; ++r)
      if (!owner.count({s, r}))
        fail("ranks", "no rank runs stage " + std::to_string(s) +
                          " of replica " + std::to_string(r));
  // Transfers keyed by (from stage, to stage, tag) -> bytes, per replica.
  using Transfers = std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t>;
  for (int64_t r = 0; r < plan.replicas; ++r) {
    Transfers sent, received;
    std::map<std::tuple<int64_t, int64_t, int64_t>, std::string> where;
    for (const RankPlan &rank : plan.ranks) {
      if (rank.replica != r)
        continue;
      const std::vector<Instruction> &program = plan.programOf(rank.rank);
      std::string context = element("ranks", rank.rank) + ": ";
      for (size_t i = 0; i < program.size(); ++i) {
        const Instruction &inst = program[i];
        if (!inst.has(kPointToPoint))
          continue;
        std::string at = context + "instruction #" + std::to_string(i) + " (" +
                         inst.name() + ")";
        int64_t peer = inst.attrs.peer;
        int64_t tag = inst.attrs.tag;
        if (peer < 0 || peer >= plan.stages || peer == rank.stage)
          fail(at, "attribute 'peer' must name another of the plan's " +
                       std::to_string(plan.stages) + " stage(s), got " +
                       std::to_string(peer));
        bool send = inst.info().sends();
        const Buffer &buffer =
            plan.buffers[send ? inst.in.at(0) : inst.out.at(0)];
        auto key = send ? std::make_tuple(rank.stage, peer, tag)
                        : std::make_tuple(peer, rank.stage, tag);
        if (!(send ? sent : received).emplace(key, buffer.bytes).second)
          fail(at, "tag " + std::to_string(tag) + " is used twice between " +
                       "stages " + std::to_string(std::get<0>(key)) + " and " +
                       std::to_string(std::get<1>(key)));
        where[key] = at;
      }
    }
    for (auto &[key, bytes] : sent) {
      auto it = received.find(key);
      if (it == received.end())
        fail(where[key], "stage " + std::to_string(std::get<1>(key)) +
                             " never receives tag " +
                             std::to_string(std::get<2>(key)));
      if (it->second != bytes)
        fail(where[key], "sends " + std::to_string(bytes) +
                             " bytes but the recv with tag " +
                             std::to_string(std::get<2>(key)) + " takes " +
                             std::to_string(it->second));
    }
    for (auto &[key, bytes] : received)
      if (!sent.count(key))
        fail(where[key], "stage " + std::to_string(std::get<0>(key)) +
                             " never sends tag " +
                             std::to_string(std::get<2>(key)));
  }
}

void PlanParser::checkBuckets(const std::vector<Instruction> &program,
                              const std::string &context) {
  // Bucket number -> index of the all_reduce_start in flight.
  std::map<int64_t, size_t> open;
  for (size_t i = 0; i < program.size(); ++i) {
    const Instruction &inst = program[i];
    if (!inst.has(kAsyncStart) && !inst.has(kAsyncWait))
      continue;
    std::string where = context + "instruction #" + std::to_string(i) + " (" +
                        inst.name() + ")";
    int64_t bucket = inst.attrs.bucket;
    auto it = open.find(bucket);
    if (inst.has(kAsyncStart)) {
      if (it != open.end())
        fail(where, "bucket " + std::to_string(bucket) +
                        " is still in flight (started by instruction #" +
                        std::to_string(it->second) + ")");
      open[bucket] = i;
      continue;
    }
    if (it == open.end())
      fail(where, "bucket " + std::to_string(bucket) +
                      " was not started by an all_reduce_start before it");
    if (program[it->second].in != inst.in)
      fail(where, "in must be the buffers of bucket " + std::to_string(bucket) +
                      "'s all_reduce_start " + "(instruction #" +
                      std::to_string(it->second) + ")");
    open.erase(it);
  }
  if (!open.empty())
    fail(context + "instruction #" + std::to_string(open.begin()->second) +
             " (" + program[open.begin()->second].name() + ")",
         "bucket " + std::to_string(open.begin()->first) +
             " is never waited for (no all_reduce_wait in the step)");
}

void PlanParser::checkCompression(const std::vector<Instruction> &program,
                                  const std::string &context) {
  std::map<int64_t, size_t> compressOf;
  for (size_t i = 0; i < program.size(); ++i) {
    const Instruction &inst = program[i];
    if (inst.op != OpCode::Compress && inst.op != OpCode::Decompress)
      continue;
    std::string where = context + "instruction #" + std::to_string(i) + " (" +
                        inst.name() + ")";
    std::string site = "site " + std::to_string(inst.attrs.site);
    auto it = compressOf.find(inst.attrs.site);
    if (inst.op == OpCode::Compress) {
      if (it != compressOf.end())
        fail(where, site + " is compressed twice (first by instruction #" +
                        std::to_string(it->second) + ")");
      compressOf[inst.attrs.site] = i;
      continue;
    }
    if (it == compressOf.end())
      fail(where, site + " has no compress before it");
    const Instruction &compress = program[it->second];
    std::string of = " of " + site + "'s compress (instruction #" +
                     std::to_string(it->second) + ")";
    if (inst.in.at(0) != compress.out.at(0))
      fail(where, "in must be buffer " + std::to_string(compress.out.at(0)) +
                      ", the output" + of + ", got buffer " +
                      std::to_string(inst.in.at(0)));
    if (inst.attrs.format != compress.attrs.format ||
        inst.attrs.candidates != compress.attrs.candidates ||
        inst.attrs.budget != compress.attrs.budget)
      fail(where, "format, candidates and budget must be those" + of);
    if (plan.buffers[inst.out.at(0)].desc.shape !=
        plan.buffers[compress.in.at(0)].desc.shape)
      fail(where, "out must have the shape of the input" + of);
  }
}

void PlanParser::checkSwaps(const std::vector<Instruction> &program,
                            const std::string &context) {
  // The step of each slot's sequence it has reached, and where.
  enum class Stage { Out, OutDone, In, Done };
  struct SlotUse {
    Stage stage = Stage::Out;
    size_t out = 0, outWait = 0, in = 0, inWait = 0;
    /// The buffer the copy in flight reads (swap_out) or writes (swap_in).
    int64_t buffer = -1;
  };
  std::map<int64_t, SlotUse> slots;
  auto at = [&](size_t i) {
    return context + "instruction #" + std::to_string(i) + " (" +
           program[i].name() + ")";
  };
  auto slotName = [](int64_t slot) { return "slot " + std::to_string(slot); };
  for (size_t i = 0; i < program.size(); ++i) {
    const Instruction &inst = program[i];
    std::string where = at(i);
    // While a copy is in flight, no other instruction may write the buffer
    // it reads, or touch the buffer it writes.
    // By bytes: a view's are its source's. A reshape that writes a view
    // moves no byte, so it may run while its source is being copied out.
    for (const auto &[slot, use] : slots) {
      if (use.stage == Stage::Out)
        for (int64_t out : inst.out)
          if (plan.bytesOf(out) == plan.bytesOf(use.buffer) &&
              !(inst.has(kView) && plan.buffers[out].viewOf >= 0))
            fail(where, "writes buffer " + std::to_string(out) + ", which " +
                            slotName(slot) + "'s swap_out (instruction #" +
                            std::to_string(use.out) +
                            ") is still copying to the host");
      if (use.stage == Stage::In && !inst.has(kCopyWait)) {
        bool touches = false;
        for (int64_t id : inst.in)
          touches |= plan.bytesOf(id) == plan.bytesOf(use.buffer);
        for (int64_t id : inst.out)
          touches |= plan.bytesOf(id) == plan.bytesOf(use.buffer);
        if (touches && i != use.in)
          fail(where, "uses buffer " + std::to_string(use.buffer) + " before " +
                          slotName(slot) + "'s swap_in (instruction #" +
                          std::to_string(use.in) +
                          ") is waited for by a swap_in_wait");
      }
    }
    if (!inst.has(kCopyStart) && !inst.has(kCopyWait))
      continue;
    int64_t slot = inst.attrs.slot;
    if (slot < 0 || slot > static_cast<int64_t>(program.size()))
      fail(where, "attribute 'slot' must be in [0, " +
                      std::to_string(program.size()) +
                      "] (at most the number of instructions), got " +
                      std::to_string(slot));
    auto it = slots.find(slot);
    switch (inst.op) {
    case OpCode::SwapOut:
      if (it != slots.end())
        fail(where, slotName(slot) + " is swapped out twice (first by " +
                        "instruction #" + std::to_string(it->second.out) +
                        "); each slot is swapped out once per step");
      slots[slot] = {Stage::Out, i, 0, 0, 0, inst.in.at(0)};
      break;
    case OpCode::SwapOutWait:
      if (it == slots.end() || it->second.stage != Stage::Out)
        fail(where, slotName(slot) +
                        " has no swap_out in flight before it to wait for");
      if (inst.in.at(0) != it->second.buffer)
        fail(where, "in must be buffer " + std::to_string(it->second.buffer) +
                        ", the input of " + slotName(slot) +
                        "'s swap_out (instruction #" +
                        std::to_string(it->second.out) + "), got buffer " +
                        std::to_string(inst.in.at(0)));
      it->second.stage = Stage::OutDone;
      it->second.outWait = i;
      break;
    case OpCode::SwapIn: {
      if (it == slots.end())
        fail(where, slotName(slot) + " was not swapped out before it");
      SlotUse &use = it->second;
      if (use.stage == Stage::Out)
        fail(where, slotName(slot) + "'s swap_out (instruction #" +
                        std::to_string(use.out) +
                        ") is not waited for before the swap_in");
      if (use.stage != Stage::OutDone)
        fail(where, slotName(slot) + " is swapped in twice (first by " +
                        "instruction #" + std::to_string(use.in) + ")");
      const Buffer &from = plan.buffers[program[use.out].in.at(0)];
      const Buffer &to = plan.buffers[inst.out.at(0)];
      if (to.bytes != from.bytes || to.desc.dtype != from.desc.dtype ||
          to.desc.shape != from.desc.shape)
        fail(where,
             "out (buffer " + std::to_string(to.id) + ", " +
                 dtypeName(to.desc.dtype) + " " + formatShape(to.desc.shape) +
                 ", " + std::to_string(to.bytes) + " bytes) must match " +
                 slotName(slot) + "'s swapped-out buffer " +
                 std::to_string(from.id) + " (" + dtypeName(from.desc.dtype) +
                 " " + formatShape(from.desc.shape) + ", " +
                 std::to_string(from.bytes) + " bytes)");
      use.stage = Stage::In;
      use.in = i;
      use.buffer = inst.out.at(0);
      break;
    }
    case OpCode::SwapInWait:
      if (it == slots.end() || it->second.stage != Stage::In)
        fail(where, slotName(slot) +
                        " has no swap_in in flight before it to wait for");
      if (inst.in.at(0) != it->second.buffer)
        fail(where, "in must be buffer " + std::to_string(it->second.buffer) +
                        ", the output of " + slotName(slot) +
                        "'s swap_in (instruction #" +
                        std::to_string(it->second.in) + "), got buffer " +
                        std::to_string(inst.in.at(0)));
      it->second.stage = Stage::Done;
      it->second.inWait = i;
      break;
    default:
      fail(where, "unexpected copy op");
    }
  }
  for (const auto &[slot, use] : slots)
    switch (use.stage) {
    case Stage::Out:
      fail(at(use.out), slotName(slot) +
                            " is never waited for (no swap_out_wait in the "
                            "step)");
      break;
    case Stage::OutDone:
      fail(at(use.outWait), slotName(slot) +
                                " is never swapped in (no swap_in in the "
                                "step)");
      break;
    case Stage::In:
      fail(at(use.in), slotName(slot) +
                           " is never waited for (no swap_in_wait in the "
                           "step)");
      break;
    case Stage::Done:
      break;
    }
}

void PlanParser::checkStaleness() {
  bool seen = false;
  for (const RankPlan &rank : plan.ranks) {
    std::string context =
        rank.rank == 0 ? "" : element("ranks", rank.rank) + ": ";
    for (size_t i = 0; i < rank.program.size(); ++i) {
      const Instruction &inst = rank.program[i];
      if (!inst.has(kAsyncStart))
        continue;
      std::string where = context + "instruction #" + std::to_string(i) + " (" +
                          inst.name() + ")";
      int64_t staleness = inst.attrs.staleness;
      if (seen && staleness != plan.staleness)
        fail(where, "attribute 'staleness' is " + std::to_string(staleness) +
                        " but an earlier all_reduce_start has " +
                        std::to_string(plan.staleness) +
                        " (every bucket of a plan lags alike)");
      seen = true;
      plan.staleness = staleness;
    }
  }
  if (plan.staleness == 0)
    return;
  for (const RankPlan &rank : plan.ranks) {
    std::string context =
        rank.rank == 0 ? "" : element("ranks", rank.rank) + ": ";
    for (size_t i = 0; i < rank.program.size(); ++i) {
      const Instruction &inst = rank.program[i];
      std::string where = context + "instruction #" + std::to_string(i) + " (" +
                          inst.name() + ")";
      // Collectives that start a reduction (not the waits).
      bool start = inst.has(kAsyncStart);
      if (!inst.has(kCollective) || inst.has(kAsyncWait))
        continue;
      if (start && inst.attrs.host)
        fail(where, "host accumulation cannot be combined with staleness > 0");
      if (start && !inst.attrs.mean)
        fail(where, "with staleness > 0 a bucket must be averaged (mean 1)");
      if (!start && (inst.out.size() != 1 || inst.out[0] != plan.loss))
        fail(where, "with staleness > 0 the only all_reduce may be the "
                    "loss's (a lagging replica cannot join any other)");
      if (inst.attrs.group != 0 ||
          static_cast<int64_t>(plan.groups[0].ranks.size()) != plan.worldSize())
        fail(where, "with staleness > 0 collectives must run over one group "
                    "of every rank");
    }
  }
}

void PlanParser::checkCollective(const Instruction &inst, int64_t rank,
                                 const std::string &where) {
  if (!inst.has(kCollective) || inst.has(kAsyncWait))
    return;
  int64_t group = inst.attrs.group;
  if (group < 0 || group >= static_cast<int64_t>(plan.groups.size()))
    fail(where, "attribute 'group' must index the plan's " +
                    std::to_string(plan.groups.size()) + " group(s), got " +
                    std::to_string(group));
  const CommGroup &g = plan.groups[static_cast<size_t>(group)];
  if (!std::binary_search(g.ranks.begin(), g.ranks.end(), rank))
    fail(where, "rank " + std::to_string(rank) +
                    " runs it but is not in group \"" + g.name + "\"");
  int64_t replicas = inst.attrs.replicas;
  if (replicas != static_cast<int64_t>(g.ranks.size()))
    fail(where, "attribute 'replicas' is " + std::to_string(replicas) +
                    " but group \"" + g.name + "\" has " +
                    std::to_string(g.ranks.size()) + " rank(s)");
}

static void parseAttrs(const json &attrs, const std::string &where,
                       Attrs &out) {
  expectObject(attrs, where);
  for (auto it = attrs.begin(); it != attrs.end(); ++it) {
    std::string name = member(where, it.key().c_str());
    const json &value = it.value();
    if (value.is_number() || value.is_boolean()) {
      out.numbers[it.key()] = readNumber(value, name);
      continue;
    }
    if (!value.is_array())
      fail(name,
           "must be a number or a list of integers, got " + describe(value));
    std::vector<int64_t> list;
    for (size_t i = 0; i < value.size(); ++i)
      list.push_back(readInt(value[i], element(name, i)));
    out.lists[it.key()] = std::move(list);
  }
}

static std::vector<int64_t> readIds(const json &value, const std::string &where,
                                    size_t numBuffers) {
  expectArray(value, where);
  std::vector<int64_t> ids;
  for (size_t i = 0; i < value.size(); ++i) {
    int64_t id = readInt(value[i], element(where, i));
    if (id < 0 || id >= static_cast<int64_t>(numBuffers))
      fail(element(where, i), "buffer id " + std::to_string(id) +
                                  " out of range (the plan has " +
                                  std::to_string(numBuffers) + " buffers)");
    ids.push_back(id);
  }
  return ids;
}

Instruction PlanParser::parseInstruction(const json &entry, size_t index,
                                         const std::string &context) {
  std::string where = context + "instruction #" + std::to_string(index);
  expectObject(entry, where);
  Instruction inst;
  std::string op = readStringField(entry, "op", where);
  if (!lookupOpCode(op, inst.op))
    fail(where, "unknown op \"" + op + "\"");
  inst.kernel = &kernelFor(inst.op);
  where += " (" + op + ")";
  // Fields of an instruction read "instruction #3 (matmul): in[1]: ...".
  std::string prefix = where + ": ";
  size_t numBuffers = plan.buffers.size();
  inst.in = readIds(field(entry, "in", where), prefix + "in", numBuffers);
  inst.out = readIds(field(entry, "out", where), prefix + "out", numBuffers);
  Attrs raw;
  if (const json *attrs = optionalField(entry, "attrs"))
    parseAttrs(*attrs, prefix + "attrs", raw);
  if (const json *layer = optionalField(entry, "layer"))
    inst.layer = readInt(*layer, prefix + "layer");
  if (const json *phase = optionalField(entry, "phase")) {
    std::string name = readString(*phase, prefix + "phase");
    if (!name.empty() && !parsePhase(name, inst.phase))
      fail(prefix + "phase",
           "unknown phase \"" + name +
               "\" (expected forward, backward, update or recompute)");
  }
  if (const json *previous = optionalField(entry, "previous_step")) {
    if (!previous->is_boolean())
      fail(prefix + "previous_step",
           "must be true or false, got " + describe(*previous));
    inst.previousStep = previous->get<bool>();
  }
  checkOperands(inst, raw, where);
  return inst;
}

static bool rangesOverlap(const Buffer &a, const Buffer &b) {
  return a.bytes > 0 && b.bytes > 0 && a.offset < b.offset + b.bytes &&
         b.offset < a.offset + a.bytes;
}

void PlanParser::checkOperands(Instruction &inst, const Attrs &raw,
                               const std::string &where) {
  const OpInfo &info = inst.info();
  if (info.numInputs >= 0 &&
      inst.in.size() != static_cast<size_t>(info.numInputs))
    fail(where, "expects " + std::to_string(info.numInputs) + " inputs, got " +
                    std::to_string(inst.in.size()));
  if (info.numOutputs >= 0 &&
      inst.out.size() != static_cast<size_t>(info.numOutputs))
    fail(where, "expects " + std::to_string(info.numOutputs) +
                    " outputs, got " + std::to_string(inst.out.size()));

  // Optimizer updates (and batch_norm's running statistics) name the
  // buffers they update as outputs.
  for (size_t o = 0; o < inst.out.size(); ++o) {
    const Buffer &out = plan.buffers[inst.out[o]];
    std::string name = "out[" + std::to_string(o) + "]";
    // A view is written by a reshape of the bytes it views, which moves none.
    bool view = out.viewOf >= 0;
    if (view && !(info.has(kView) && plan.bytesOf(inst.in[0]) == out.viewOf))
      fail(where, name + " (buffer " + std::to_string(out.id) +
                      ") is a view of buffer " + std::to_string(out.viewOf) +
                      ": only a reshape or flatten of that buffer (or of a "
                      "view of it) may write it");
    int updated = info.inPlaceInput(o);
    if (updated >= 0 && inst.out[o] != inst.in[updated])
      fail(where, name + ": updates in place, so it must be in[" +
                      std::to_string(updated) + "] (buffer " +
                      std::to_string(inst.in[updated]) + "), got buffer " +
                      std::to_string(out.id));
    for (size_t p = 0; p < o; ++p)
      if (rangesOverlap(out, plan.buffers[inst.out[p]]) ||
          inst.out[o] == inst.out[p])
        fail(where, name + " (buffer " + std::to_string(out.id) +
                        ") overlaps out[" + std::to_string(p) + "]");
    for (size_t i = 0; i < inst.in.size(); ++i) {
      bool same = inst.in[i] == inst.out[o];
      if ((same && static_cast<int>(i) == updated) || (view && i == 0))
        continue;
      if (same || rangesOverlap(out, plan.buffers[inst.in[i]]))
        fail(where, name + " (buffer " + std::to_string(out.id) +
                        ") aliases in[" + std::to_string(i) + "] (buffer " +
                        std::to_string(inst.in[i]) + ")" +
                        (same ? "" : " in the arena"));
    }
  }

  std::vector<TensorDesc> inputs, outputs;
  for (int64_t id : inst.in)
    inputs.push_back(plan.buffers[id].desc);
  for (int64_t id : inst.out)
    outputs.push_back(plan.buffers[id].desc);
  std::string message;
  try {
    message = inst.kernel->verify(inputs, outputs, raw);
  } catch (const std::exception &e) {
    message = std::string("verifier failed: ") + e.what();
  } catch (...) {
    message = "verifier failed";
  }
  if (!message.empty())
    fail(where, message);
  message = decodeAttrs(inst.op, raw, inst.attrs);
  if (!message.empty())
    fail(where, message);
}

void PlanParser::checkBufferLifetimes() {
  std::vector<std::vector<LiveInstruction>> programs;
  for (const RankPlan &rank : plan.ranks) {
    if (rank.programOf != rank.rank)
      continue;
    std::vector<LiveInstruction> &program = programs.emplace_back();
    // A view's uses are uses of the bytes it views; it has no lifetime of
    // its own.
    auto viewed = [&](std::vector<int64_t> ids) {
      for (int64_t &id : ids)
        id = plan.bytesOf(id);
      return ids;
    };
    for (const Instruction &inst : rank.program)
      program.push_back({viewed(inst.in), viewed(inst.out),
                         inst.waitsForSends(), inst.has(kReadsAfterReturn)});
  }
  std::vector<bool> persistent(plan.buffers.size());
  std::vector<int64_t> offsets, bytes;
  for (const Buffer &buffer : plan.buffers) {
    persistent[buffer.id] = buffer.kind != BufferKind::Activation;
    offsets.push_back(buffer.offset);
    bytes.push_back(buffer.bytes);
  }
  if (plan.loss >= 0)
    persistent[plan.bytesOf(plan.loss)] = true;
  std::vector<LiveInterval> intervals = computeLiveness(programs, persistent);
  if (intervals.size() != plan.buffers.size())
    fail("ranks", "an instruction names a buffer that does not exist");
  plan.liveLowerBound =
      liveBytesLowerBound(intervals, bytes, strata_plan::kBufferAlignment);
  std::string overlap = checkNoLiveOverlap(intervals, offsets, bytes);
  if (!overlap.empty())
    fail("buffers", overlap + " (the arena layout would corrupt data)");
}

/// nlohmann's messages start with "[json.exception.parse_error.101] ".
std::string stripJsonPrefix(const std::string &what) {
  if (what.rfind("[json.exception.", 0) == 0) {
    size_t close = what.find("] ");
    if (close != std::string::npos)
      return what.substr(close + 2);
  }
  return what;
}

} // namespace

Status parsePlan(const std::string &text, const std::string &path, Plan &plan) {
  plan = Plan();
  plan.path = path;
  try {
    json root = json::parse(text);
    PlanParser(plan).parse(root);
    return Status::success();
  } catch (const PlanError &e) {
    return Status::invalid(path + ": " + e.message);
  } catch (const json::parse_error &e) {
    return Status::invalid(path +
                           ": invalid JSON: " + stripJsonPrefix(e.what()));
  } catch (const json::exception &e) {
    return Status::invalid(path + ": " + stripJsonPrefix(e.what()));
  } catch (const std::bad_alloc &) {
    return Status::failure(path + ": out of memory while loading the plan");
  } catch (const std::exception &e) {
    return Status::invalid(path + ": " + e.what());
  }
}

Status loadPlan(const std::string &path, Plan &plan) {
  std::string text;
  Status status = readFile(path, text);
  if (!status.ok())
    return status;
  return parsePlan(text, path, plan);
}

std::vector<int64_t> updatedInPlace(const std::vector<Instruction> &program,
                                    bool forwardBackward) {
  std::set<int64_t> updated;
  for (const Instruction &inst : program)
    if (inst.has(kInPlace) && !(forwardBackward && inst.phase == Phase::Update))
      for (size_t o = 0; o < inst.out.size(); ++o)
        if (inst.info().inPlaceInput(o) >= 0)
          updated.insert(inst.out[o]);
  return {updated.begin(), updated.end()};
}

std::vector<size_t> multiTensorRuns(const std::vector<Instruction> &program) {
  std::vector<size_t> runs(program.size(), 1);
  for (size_t i = 0; i < program.size();) {
    const Instruction &first = program[i];
    size_t end = i + 1;
    // A member may not read what an earlier member writes (the pipeline
    // scheduler clones a grouped update into every window; two windows'
    // updates of one parameter must stay two kernels).
    std::set<int64_t> written(first.out.begin(), first.out.end());
    auto readsWritten = [&](const Instruction &inst) {
      return std::any_of(inst.in.begin(), inst.in.end(),
                         [&](int64_t value) { return written.count(value); });
    };
    if (first.attrs.multiTensor != 0)
      while (end < program.size() && program[end].op == first.op &&
             program[end].attrs.multiTensor == first.attrs.multiTensor &&
             !readsWritten(program[end])) {
        written.insert(program[end].out.begin(), program[end].out.end());
        ++end;
      }
    runs[i] = end - i;
    for (size_t j = i + 1; j < end; ++j)
      runs[j] = 0;
    i = end;
  }
  return runs;
}

} // namespace strata::rt
