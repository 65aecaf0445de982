//===- PlanTest.cpp - Tests of the plan loader ----------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Every rejection names the file and the field (or instruction); the loader
// never crashes, whatever the bytes.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "strata-rt/Data.h"
#include "strata-rt/Executor.h"
#include "strata-rt/Plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <set>
#include <stdexcept>

using namespace strata::rt;
using namespace strata::rt::test;
using json = nlohmann::json;

namespace {

/// Loads a test plan, edits it and checks what the loader says.
class PlanRejection : public ::testing::Test {
protected:
  void SetUp() override {
    plan = json::parse(readText(inputPath("mlp.json")), nullptr, false);
    ASSERT_FALSE(plan.is_discarded());
  }

  /// The id of the buffer called `name`.
  int64_t bufferId(const std::string &name) const {
    for (const json &b : plan["buffers"])
      if (b["name"] == name)
        return b["id"].get<int64_t>();
    ADD_FAILURE() << "no buffer " << name;
    return 0;
  }
  json &buffer(const std::string &name) {
    return plan["buffers"][bufferId(name)];
  }
  json &program() { return plan["ranks"][0]["program"]; }

  /// Sets a buffer's shape and keeps its bytes consistent.
  void reshape(const std::string &name, const Shape &shape) {
    buffer(name)["shape"] = shape;
    buffer(name)["bytes"] = numElements(shape) * 4;
  }

  /// Expects the edited plan to be rejected with `substring` in the message.
  void expectRejected(const std::string &substring) {
    expectRejectedText(plan.dump(), substring);
  }

  static void expectRejectedText(const std::string &text,
                                 const std::string &substring) {
    Plan loaded;
    Status status = parsePlan(text, "mlp.json", loaded);
    ASSERT_FALSE(status.ok()) << "expected a rejection naming: " << substring;
    EXPECT_EQ(status.code(), Status::Code::Invalid);
    EXPECT_EQ(status.message().rfind("mlp.json: ", 0), 0u) << status.message();
    EXPECT_NE(status.message().find(substring), std::string::npos)
        << "message: " << status.message() << "\nexpected: " << substring;
  }

  json plan;
};

} // namespace

//===----------------------------------------------------------------------===//
// Valid plans
//===----------------------------------------------------------------------===//

TEST(PlanLoad, MlpLoads) {
  Plan plan;
  Status status = loadPlan(inputPath("mlp.json"), plan);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(plan.model, "mlp");
  EXPECT_EQ(plan.optimizerKind, "sgd");
  EXPECT_DOUBLE_EQ(plan.optimizer.at("lr"), 0.05);
  ASSERT_EQ(plan.ranks.size(), 1u);
  EXPECT_EQ(plan.ranks[0].device, DeviceKind::Cpu);
  EXPECT_EQ(plan.parameters.size(), 4u);
  EXPECT_EQ(plan.states.size(), 4u);
  EXPECT_EQ(plan.inputs.size(), 2u);

  const Parameter &w0 = plan.parameters[0];
  EXPECT_EQ(w0.name, "fc0.weight");
  EXPECT_EQ(w0.init.kind, InitKind::XavierUniform);
  EXPECT_EQ(w0.init.fanIn, 16);
  EXPECT_EQ(w0.init.fanOut, 32);
  EXPECT_EQ(plan.buffers[w0.grad].kind, BufferKind::Grad);
  EXPECT_EQ(plan.states[0].param, "fc0.weight");

  const Buffer &loss = plan.buffers[plan.loss];
  EXPECT_TRUE(loss.desc.shape.empty());
  for (const Instruction &inst : plan.ranks[0].program)
    EXPECT_NE(inst.kernel, nullptr);
  const Instruction &first = plan.ranks[0].program[0];
  EXPECT_EQ(first.op, OpCode::Matmul);
  EXPECT_EQ(first.phase, Phase::Forward);
  EXPECT_EQ(first.layer, 0);
  const Instruction &grad = plan.ranks[0].program[9];
  EXPECT_EQ(grad.op, OpCode::Matmul);
  EXPECT_TRUE(grad.attrs.transposeA);
  EXPECT_TRUE(grad.attrs.has(AttrId::TransposeA));
  EXPECT_FALSE(grad.attrs.has(AttrId::Mc));
  const Instruction &update = plan.ranks[0].program.back();
  EXPECT_EQ(update.op, OpCode::SgdUpdate);
  EXPECT_EQ(update.out, (std::vector<int64_t>{update.in[0], update.in[2]}));
  ASSERT_NE(plan.findInput(InputRole::Labels), nullptr);
  EXPECT_EQ(plan.findInput(InputRole::Step), nullptr);
}

TEST(PlanLoad, OtherTestPlansLoad) {
  for (const char *name : {"regression.json", "lm.json", "lm_v64.json"}) {
    Plan plan;
    Status status = loadPlan(inputPath(name), plan);
    EXPECT_TRUE(status.ok()) << status.message();
  }
  Plan plan;
  ASSERT_TRUE(loadPlan(inputPath("regression.json"), plan).ok());
  const Input *step = plan.findInput(InputRole::Step);
  ASSERT_NE(step, nullptr);
  // kaiming_normal without explicit fans takes them from the [in, out] shape.
  EXPECT_EQ(plan.parameters[0].init.kind, InitKind::KaimingNormal);
  EXPECT_EQ(plan.parameters[0].init.fanIn, 8);
}

TEST_F(PlanRejection, OverlappingBuffersAreLegal) {
  // Buffers never used by one instruction may share arena bytes.
  buffer("dlogits")["offset"] = buffer("fc0.mm")["offset"];
  Plan loaded;
  Status status = parsePlan(plan.dump(), "mlp.json", loaded);
  EXPECT_TRUE(status.ok()) << status.message();
}

TEST_F(PlanRejection, OptionalFieldsMayBeOmitted) {
  for (json &inst : program()) {
    inst.erase("layer");
    inst.erase("phase");
  }
  plan.erase("model");
  plan.erase("optimizer");
  plan.erase("producer");
  Plan loaded;
  Status status = parsePlan(plan.dump(), "mlp.json", loaded);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(loaded.ranks[0].program[0].layer, -1);
  EXPECT_EQ(loaded.ranks[0].program[0].phase, Phase::None);
}

//===----------------------------------------------------------------------===//
// Top level
//===----------------------------------------------------------------------===//

TEST_F(PlanRejection, WrongFormat) {
  plan["format"] = "onnx";
  expectRejected("format: must be \"strata-plan\", got string \"onnx\"");
}

TEST_F(PlanRejection, MissingFormat) {
  plan.erase("format");
  expectRejected("missing field 'format'");
}

TEST_F(PlanRejection, BadVersion) {
  plan["version"] = 3;
  expectRejected("version: unsupported version number 3 (this runtime reads "
                 "versions 1 to 2)");
  plan["version"] = 0;
  expectRejected("version: unsupported version number 0");
}

//===----------------------------------------------------------------------===//
// Version 2: ranks, shared programs and communicator groups
//===----------------------------------------------------------------------===//

namespace {
/// mlp.json as a version 2 plan for `ranks` data-parallel ranks: rank 0 has
/// the program, the others share it; one group of every rank.
json multiRank(json plan, int ranks) {
  plan["version"] = 2;
  plan["replicas"] = ranks;
  json rank0 = plan["ranks"][0];
  for (int r = 1; r < ranks; ++r) {
    json entry = rank0;
    entry.erase("program");
    entry["rank"] = r;
    entry["program_of"] = 0;
    plan["ranks"].push_back(entry);
  }
  json group = {{"name", "dp"}, {"ranks", json::array()}};
  for (int r = 0; r < ranks; ++r)
    group["ranks"].push_back(r);
  plan["groups"] = json::array({group});
  return plan;
}
} // namespace

TEST_F(PlanRejection, Version2Loads) {
  plan = multiRank(plan, 3);
  plan["ranks"][2]["device"] = "cuda";
  Plan loaded;
  Status status = parsePlan(plan.dump(), "mlp.json", loaded);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(loaded.version, 2);
  ASSERT_EQ(loaded.worldSize(), 3);
  EXPECT_EQ(loaded.ranks[2].device, DeviceKind::Cuda);
  EXPECT_EQ(loaded.ranks[1].replica, 1);
  EXPECT_EQ(&loaded.programOf(2), &loaded.programOf(0));
  EXPECT_TRUE(loaded.ranks[1].program.empty());
  ASSERT_EQ(loaded.groups.size(), 1u);
  EXPECT_EQ(loaded.groups[0].name, "dp");
  EXPECT_EQ(loaded.groups[0].ranks, (std::vector<int64_t>{0, 1, 2}));
}

TEST_F(PlanRejection, Version1ReplicasExpandToRanks) {
  plan["replicas"] = 4;
  Plan loaded;
  Status status = parsePlan(plan.dump(), "mlp.json", loaded);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(loaded.worldSize(), 4);
  EXPECT_EQ(loaded.ranks[3].replica, 3);
  EXPECT_EQ(loaded.ranks[3].programOf, 0);
  ASSERT_EQ(loaded.groups.size(), 1u);
  EXPECT_EQ(loaded.groups[0].ranks.size(), 4u);
}

TEST_F(PlanRejection, GroupsNeedVersion2) {
  plan["groups"] = json::array();
  expectRejected("groups: needs plan version 2");
}

TEST_F(PlanRejection, RanksOutOfOrder) {
  plan = multiRank(plan, 2);
  plan["ranks"][1]["rank"] = 5;
  expectRejected("ranks[1].rank: must be 1 (ranks are listed in order), got 5");
}

TEST_F(PlanRejection, ProgramAndProgramOf) {
  plan = multiRank(plan, 2);
  plan["ranks"][1]["program"] = json::array();
  expectRejected(
      "ranks[1]: needs exactly one of \"program\" and \"program_of\"");
  plan["ranks"][1].erase("program");
  plan["ranks"][1].erase("program_of");
  expectRejected(
      "ranks[1]: needs exactly one of \"program\" and \"program_of\"");
}

TEST_F(PlanRejection, ProgramOfLaterRank) {
  plan = multiRank(plan, 3);
  plan["ranks"][1]["program_of"] = 2;
  expectRejected("ranks[1].program_of: must name an earlier rank that has its "
                 "own program, got 2");
}

TEST_F(PlanRejection, ReplicaOutOfRange) {
  plan = multiRank(plan, 2);
  plan["ranks"][1]["replica"] = 2;
  expectRejected("ranks[1].replica: must be less than replicas (2), got 2");
}

TEST_F(PlanRejection, GroupRankOutOfRange) {
  plan = multiRank(plan, 2);
  plan["groups"][0]["ranks"] = {0, 2};
  expectRejected("groups[0].ranks[1]: rank 2 out of range (the plan has 2 "
                 "ranks)");
}

TEST_F(PlanRejection, GroupRanksNotAscending) {
  plan = multiRank(plan, 2);
  plan["groups"][0]["ranks"] = {1, 1};
  expectRejected("groups[0].ranks[1]: ranks must be distinct and ascending");
}

TEST_F(PlanRejection, DuplicateGroup) {
  plan = multiRank(plan, 2);
  plan["groups"].push_back(plan["groups"][0]);
  expectRejected("groups[1].name: duplicate group \"dp\"");
}

TEST_F(PlanRejection, CollectiveGroupChecks) {
  // An all_reduce of the first gradient over the group.
  plan = multiRank(plan, 2);
  // From a gradient into its parameter's buffer (same shape; what it
  // computes does not matter to the loader).
  const json &param = plan["parameters"][0];
  json reduce = {{"op", "all_reduce"},
                 {"in", {param["grad"]}},
                 {"out", {param["buffer"]}},
                 {"attrs", json::object()}};
  json base = plan;
  auto withReduce = [&](json attrs) {
    plan = base;
    json inst = reduce;
    inst["attrs"] = attrs;
    program().insert(program().begin(), inst);
  };
  withReduce({{"mean", 1}, {"replicas", 2}, {"group", 1}});
  expectRejected("instruction #0 (all_reduce): attribute 'group' must index "
                 "the plan's 1 group(s), got 1");
  withReduce({{"mean", 1}, {"replicas", 3}, {"group", 0}});
  expectRejected("instruction #0 (all_reduce): attribute 'replicas' is 3 but "
                 "group \"dp\" has 2 rank(s)");
  withReduce({{"mean", 1}, {"replicas", 1}, {"group", 0}});
  base["groups"][0]["ranks"] = {1};
  plan["groups"][0]["ranks"] = {1};
  expectRejected("instruction #0 (all_reduce): rank 0 runs it but is not in "
                 "group \"dp\"");
}

TEST_F(PlanRejection, RootNotAnObject) {
  expectRejectedText("[1, 2]", "must be an object, got array");
}

TEST_F(PlanRejection, TwoRanks) {
  plan["ranks"].push_back(plan["ranks"][0]);
  expectRejected("ranks: version 1 plans have exactly one rank, got 2");
}

TEST_F(PlanRejection, UnsupportedDevice) {
  plan["ranks"][0]["device"] = "tpu";
  expectRejected("ranks[0].device: unsupported device \"tpu\"");
}

TEST_F(PlanRejection, LossNotScalar) {
  plan["loss"] = bufferId("dlogits");
  expectRejected("loss: buffer " + std::to_string(bufferId("dlogits")) +
                 " (\"dlogits\") must be a scalar f32, got f32 [32, 4]");
}

TEST_F(PlanRejection, LossOutOfRange) {
  plan["loss"] = 1000;
  expectRejected("loss: buffer id 1000 out of range");
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

TEST_F(PlanRejection, OffsetNotAligned) {
  plan["buffers"][3]["offset"] =
      plan["buffers"][3]["offset"].get<int64_t>() + 4;
  expectRejected("buffers[3].offset: must be a multiple of 64");
}

TEST_F(PlanRejection, OffsetOutsideArena) {
  int64_t arena = plan["ranks"][0]["arena_bytes"].get<int64_t>();
  plan["buffers"][2]["offset"] = (arena / 64) * 64;
  expectRejected("buffers[2]: range [");
  expectRejected("lies outside the arena of " + std::to_string(arena) +
                 " bytes");
}

TEST_F(PlanRejection, BytesMismatch) {
  plan["buffers"][2]["bytes"] = 12;
  expectRejected("buffers[2].bytes: must be");
  expectRejected("got 12");
}

TEST_F(PlanRejection, NegativeDimension) {
  plan["buffers"][0]["shape"][1] = -16;
  expectRejected("buffers[0].shape[1]: must be non-negative, got -16");
}

TEST_F(PlanRejection, HugeShape) {
  plan["buffers"][0]["shape"] = {int64_t(1) << 40, int64_t(1) << 40};
  expectRejected("buffers[0].shape: [1099511627776, 1099511627776] is too "
                 "large");
}

TEST_F(PlanRejection, IdsNotConsecutive) {
  plan["buffers"][5]["id"] = 6;
  expectRejected(
      "buffers[5].id: must be 5 (ids are consecutive from 0), got 6");
}

TEST_F(PlanRejection, UnknownDType) {
  plan["buffers"][0]["dtype"] = "f16";
  expectRejected("buffers[0].dtype: unknown dtype \"f16\"");
}

// bf16 buffers are refused with what to do: mixed precision keeps f32
// tensors and marks the products.
TEST_F(PlanRejection, Bf16DType) {
  plan["buffers"][0]["dtype"] = "bf16";
  expectRejected("buffers[0].dtype: bf16 tensors are not supported: the "
                 "runtime keeps f32 tensors and computes bf16 matmuls and "
                 "convolutions on them; compile the model with strata-opt "
                 "--strata-mixed-precision");
}

TEST_F(PlanRejection, UnknownKind) {
  plan["buffers"][0]["kind"] = "weights";
  expectRejected("buffers[0].kind: unknown kind \"weights\"");
}

TEST_F(PlanRejection, MissingBufferField) {
  plan["buffers"][4].erase("name");
  expectRejected("buffers[4]: missing field 'name'");
}

TEST_F(PlanRejection, StringWhereNumberBelongs) {
  plan["buffers"][1]["offset"] = "64";
  expectRejected("buffers[1].offset: must be an integer, got string \"64\"");
}

TEST_F(PlanRejection, FloatWhereIntegerBelongs) {
  plan["buffers"][1]["bytes"] = 128.5;
  expectRejected("buffers[1].bytes: must be an integer, got number 128.5");
}

TEST_F(PlanRejection, BuffersNotAnArray) {
  plan["buffers"] = json::object();
  expectRejected("buffers: must be an array, got object");
}

//===----------------------------------------------------------------------===//
// Parameters, states and inputs
//===----------------------------------------------------------------------===//

TEST_F(PlanRejection, ParameterOfWrongKind) {
  plan["parameters"][0]["buffer"] = bufferId("relu0");
  expectRejected("parameters[0].buffer: buffer " +
                 std::to_string(bufferId("relu0")) +
                 " (\"relu0\") must be of kind param, got activation");
}

TEST_F(PlanRejection, ParameterOfWrongDType) {
  buffer("fc0.weight")["dtype"] = "i32";
  expectRejected("parameters[0].buffer: buffer " +
                 std::to_string(bufferId("fc0.weight")) +
                 " (\"fc0.weight\") must be f32, got i32");
}

TEST_F(PlanRejection, UnknownInit) {
  plan["parameters"][1]["init"] = "orthogonal";
  expectRejected("parameters[1].init: unknown init \"orthogonal\"");
}

TEST_F(PlanRejection, MissingInit) {
  plan["parameters"][1].erase("init");
  expectRejected("parameters[1]: missing field 'init'");
}

TEST_F(PlanRejection, DuplicateName) {
  plan["states"][0]["name"] = "fc0.bias";
  expectRejected("states[0].name: duplicate name \"fc0.bias\"");
}

TEST_F(PlanRejection, BufferClaimedTwice) {
  plan["states"][1]["buffer"] = plan["states"][0]["buffer"];
  expectRejected("states[1]: buffer");
  expectRejected("is already used by states[0]");
}

TEST_F(PlanRejection, StateWithoutEntry) {
  plan["states"].erase(3);
  expectRejected("state buffer \"fc1.bias.velocity\" has no entry in 'states'");
}

TEST_F(PlanRejection, StateOfUnknownParameter) {
  plan["states"][0]["param"] = "fc9.weight";
  expectRejected("states[0].param: no parameter is named \"fc9.weight\"");
}

TEST_F(PlanRejection, StateCopyingItsParameter) {
  // A kept weight version of an asynchronous pipeline schedule: "init":
  // "param" copies the state's parameter, which must exist and have its
  // shape.
  plan["states"][0]["init"] = "param";
  plan["updates_per_step"] = 4;
  Plan loaded;
  ASSERT_TRUE(parsePlan(plan.dump(), "mlp.json", loaded).ok());
  EXPECT_TRUE(loaded.states[0].copiesParam);
  EXPECT_FALSE(loaded.states[1].copiesParam);
  EXPECT_EQ(loaded.updatesPerStep, 4);
  plan["states"][0]["param"] = "fc0.bias";
  expectRejected("states[0].init: \"param\": the state's shape");
  plan["states"][0].erase("param");
  expectRejected("states[0].init: \"param\" needs the state's 'param'");
  // A running statistic belongs to no parameter, so it copies none.
  plan["states"][0]["kind"] = "running";
  expectRejected(
      "states[0].init: \"param\": a running statistic is no weight version");
}

TEST_F(PlanRejection, CarriedValues) {
  // A value a pipeline carries over from one step to the next: no
  // parameter, zeros at first, any element type.
  plan["states"][0].erase("param");
  plan["states"][0]["kind"] = "carry";
  Plan loaded;
  ASSERT_TRUE(parsePlan(plan.dump(), "mlp.json", loaded).ok());
  EXPECT_TRUE(loaded.states[0].carry);
  EXPECT_FALSE(loaded.states[1].carry);
  plan["states"][0]["init"] = "ones";
  expectRejected("states[0].init: a carried value starts as zeros");
  plan["states"][0]["init"] = "zeros";
  plan["states"][0]["param"] = "fc0.weight";
  expectRejected("states[0].param: a carried value belongs to no parameter");
  plan["states"][0]["kind"] = "stash";
  expectRejected("states[0].kind: unknown kind \"stash\" (expected "
                 "optimizer, running or carry)");
}

TEST_F(PlanRejection, PreviousStepIsABoolean) {
  program()[0]["previous_step"] = true;
  Plan loaded;
  ASSERT_TRUE(parsePlan(plan.dump(), "mlp.json", loaded).ok());
  EXPECT_TRUE(loaded.ranks[0].program[0].previousStep);
  EXPECT_FALSE(loaded.ranks[0].program[1].previousStep);
  program()[0]["previous_step"] = 1;
  expectRejected("instruction #0 (matmul): previous_step: must be true or "
                 "false, got");
}

TEST_F(PlanRejection, LocalCopyIntoDoesNotWaitForSends) {
  // A local copy_into (a carried value) does not wait for the sends in
  // flight; a send of its buffer would race with it.
  json copy = {
      {"op", "copy_into"},
      {"in", {bufferId("fc0.weight"), bufferId("fc0.weight.velocity")}},
      {"out", {bufferId("fc0.weight.velocity")}},
      {"attrs", {{"local", 1}}},
      {"phase", "backward"}};
  program().push_back(copy);
  Plan loaded;
  ASSERT_TRUE(parsePlan(plan.dump(), "mlp.json", loaded).ok());
  EXPECT_FALSE(loaded.ranks[0].program.back().waitsForSends());
  plan["ranks"][0]["program"].back()["attrs"]["local"] = 0;
  ASSERT_TRUE(parsePlan(plan.dump(), "mlp.json", loaded).ok());
  EXPECT_TRUE(loaded.ranks[0].program.back().waitsForSends());
}

TEST_F(PlanRejection, UpdatesPerStepArePositive) {
  plan["updates_per_step"] = 0;
  expectRejected("updates_per_step: must be at least 1, got 0");
}

TEST_F(PlanRejection, UnknownInputRole) {
  plan["inputs"][0]["role"] = "images";
  expectRejected("inputs[0].role: unknown role \"images\"");
}

TEST_F(PlanRejection, StepInputNotScalar) {
  plan["inputs"][1]["role"] = "step";
  expectRejected("inputs[1].buffer: the step input must be a scalar i32, got "
                 "i32 [32]");
}

//===----------------------------------------------------------------------===//
// Instructions
//===----------------------------------------------------------------------===//

TEST_F(PlanRejection, UnknownOp) {
  program()[3]["op"] = "matmull";
  expectRejected("instruction #3: unknown op \"matmull\"");
}

TEST_F(PlanRejection, BadBufferId) {
  program()[0]["in"][1] = 999;
  expectRejected("instruction #0 (matmul): in[1]: buffer id 999 out of range");
}

TEST_F(PlanRejection, WrongOperandCount) {
  program()[0]["in"].push_back(0);
  expectRejected("instruction #0 (matmul): expects 2 inputs, got 3");
}

TEST_F(PlanRejection, ShapeMismatchCaughtByKernelVerify) {
  // fc0.mm is matmul(features [32, 16], fc0.weight [16, 32]): [32, 32].
  reshape("fc0.mm", {32, 31});
  expectRejected("instruction #0 (matmul): ");
}

TEST_F(PlanRejection, AttributeOfWrongType) {
  program()[9]["attrs"]["transpose_a"] = "yes";
  expectRejected("instruction #9 (matmul): attrs.transpose_a: must be a number "
                 "or a list of integers, got string \"yes\"");
}

TEST_F(PlanRejection, UnknownPhase) {
  program()[2]["phase"] = "sideways";
  expectRejected("instruction #2 (relu): phase: unknown phase \"sideways\"");
}

TEST_F(PlanRejection, MissingInstructionField) {
  program()[2].erase("out");
  expectRejected("instruction #2 (relu): missing field 'out'");
}

TEST_F(PlanRejection, OutputAliasesInput) {
  program()[2]["out"][0] = program()[2]["in"][0];
  expectRejected("instruction #2 (relu): out[0] (buffer " +
                 std::to_string(bufferId("fc0.out")) + ") aliases in[0]");
}

TEST_F(PlanRejection, OutputOverlapsInputInArena) {
  buffer("relu0")["offset"] = buffer("fc0.out")["offset"];
  expectRejected("instruction #2 (relu): out[0] (buffer " +
                 std::to_string(bufferId("relu0")) +
                 ") aliases in[0] (buffer " +
                 std::to_string(bufferId("fc0.out")) + ") in the arena");
}

TEST_F(PlanRejection, InPlaceUpdateMustWriteItsInputs) {
  json &update = program().back();
  update["out"][1] = bufferId("relu0");
  expectRejected("(sgd_update): out[1]: updates in place, so it must be in[2]");
}

//===----------------------------------------------------------------------===//
// Broken files
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Activation swapping (TestUtil.h, mlpWithSwap: #3 swap_out, #5
// swap_out_wait, #10 swap_in, #12 swap_in_wait of slot 0; 22 instructions)
//===----------------------------------------------------------------------===//

namespace {
/// The plan of PlanRejection with relu0 swapped out and back in.
class SwapRejection : public PlanRejection {
protected:
  void SetUp() override {
    PlanRejection::SetUp();
    plan = mlpWithSwap(plan);
  }
  json &inst(size_t i) { return program()[i]; }
  void erase(size_t i) { program().erase(i); }
};
} // namespace

TEST_F(SwapRejection, SwapPlanLoads) {
  Plan loaded;
  Status status = parsePlan(plan.dump(), "mlp.json", loaded);
  ASSERT_TRUE(status.ok()) << status.message();
  const std::vector<Instruction> &program = loaded.ranks[0].program;
  ASSERT_EQ(program.size(), 22u);
  EXPECT_EQ(program[3].op, OpCode::SwapOut);
  EXPECT_TRUE(program[3].has(kCopyStart));
  EXPECT_TRUE(program[12].has(kCopyWait));
  EXPECT_EQ(program[10].attrs.slot, 0);
  // The ops the loader checks as buckets are not involved.
  EXPECT_FALSE(program[3].has(kAsyncStart));
}

TEST_F(SwapRejection, SlotOutOfRange) {
  inst(3)["attrs"]["slot"] = -1;
  expectRejected("instruction #3 (swap_out): attribute 'slot' must be a "
                 "non-negative integer, got -1");
  SetUp();
  for (size_t i : {3, 5, 10, 12})
    inst(i)["attrs"]["slot"] = 23;
  expectRejected("instruction #3 (swap_out): attribute 'slot' must be in "
                 "[0, 22] (at most the number of instructions), got 23");
  SetUp();
  inst(5)["attrs"].erase("slot");
  expectRejected("instruction #5 (swap_out_wait): missing attribute 'slot'");
  SetUp();
  inst(10)["attrs"]["slot"] = 0.5;
  expectRejected("instruction #10 (swap_in): attribute 'slot'");
}

TEST_F(SwapRejection, SlotStartedTwice) {
  // A second swap_out of slot 0 once the first was waited for.
  json again = inst(3);
  program().insert(program().begin() + 6, again);
  expectRejected("instruction #6 (swap_out): slot 0 is swapped out twice "
                 "(first by instruction #3)");
}

TEST_F(SwapRejection, WaitWithoutStart) {
  erase(3);
  expectRejected("instruction #4 (swap_out_wait): slot 0 has no swap_out in "
                 "flight before it to wait for");
  SetUp();
  inst(12)["attrs"]["slot"] = 1;
  expectRejected("instruction #12 (swap_in_wait): slot 1 has no swap_in in "
                 "flight before it to wait for");
}

TEST_F(SwapRejection, NeverWaited) {
  // Only the swap_out: the backward matmul reads relu0 itself again.
  int64_t relu0 = bufferId("relu0");
  inst(13)["in"][0] = relu0;
  erase(12);
  erase(10);
  erase(5);
  buffer("fc1.out")["offset"] = 23232;
  expectRejected("instruction #3 (swap_out): slot 0 is never waited for (no "
                 "swap_out_wait in the step)");
  SetUp();
  erase(12);
  expectRejected("instruction #12 (matmul): uses buffer 24 before slot 0's "
                 "swap_in (instruction #10) is waited for");
  SetUp();
  erase(13);
  erase(12);
  erase(10);
  expectRejected("instruction #5 (swap_out_wait): slot 0 is never swapped "
                 "in (no swap_in in the step)");
}

TEST_F(SwapRejection, SwapInBeforeTheSwapOutIsWaited) {
  json wait = inst(5);
  erase(5);
  program().insert(program().begin() + 11, wait);
  expectRejected("instruction #9 (swap_in): slot 0's swap_out (instruction "
                 "#3) is not waited for before the swap_in");
}

TEST_F(SwapRejection, MismatchedBuffers) {
  inst(5)["in"][0] = bufferId("fc0.out");
  expectRejected("instruction #5 (swap_out_wait): in must be buffer 16, the "
                 "input of slot 0's swap_out (instruction #3), got buffer 15");
  SetUp();
  inst(12)["in"][0] = bufferId("relu0");
  expectRejected("instruction #12 (swap_in_wait): in must be buffer 24, the "
                 "output of slot 0's swap_in (instruction #10), got buffer "
                 "16");
}

TEST_F(SwapRejection, SwapInMustMatchTheSwappedOutBuffer) {
  // Same bytes, another shape.
  json other = buffer("relu0.swapped");
  other["id"] = plan["buffers"].size();
  other["name"] = "flat";
  other["shape"] = {1024};
  other["offset"] = plan["ranks"][0]["arena_bytes"];
  plan["ranks"][0]["arena_bytes"] =
      plan["ranks"][0]["arena_bytes"].get<int64_t>() + 4096;
  plan["buffers"].push_back(other);
  inst(10)["out"][0] = other["id"];
  inst(12)["in"][0] = other["id"];
  expectRejected("instruction #10 (swap_in): out (buffer 25, f32 [1024], "
                 "4096 bytes) must match slot 0's swapped-out buffer 16 (f32 "
                 "[32, 32], 4096 bytes)");
}

TEST_F(SwapRejection, WriteWhileCopyingOut) {
  json relu = inst(2);
  program().insert(program().begin() + 4, relu);
  expectRejected("instruction #4 (relu): writes buffer 16, which slot 0's "
                 "swap_out (instruction #3) is still copying to the host");
}

TEST_F(SwapRejection, AViewIsItsSourcesBytes) {
  // A view of relu0 (buffer 16, same shape), made by a reshape before the
  // swap_out, which then copies the view out.
  int64_t id = plan["buffers"].size();
  json view = plan["buffers"][16];
  view["id"] = id;
  view["name"] = "relu0.view";
  view["view_of"] = 16;
  plan["buffers"].push_back(view);
  program().insert(program().begin() + 3,
                   json{{"op", "reshape"}, {"in", {16}}, {"out", {id}}});
  for (size_t i : {4, 6}) // swap_out, swap_out_wait
    for (json &in : inst(i)["in"])
      if (in == 16)
        in = id;
  {
    Plan loaded;
    Status status = parsePlan(plan.dump(), "mlp.json", loaded);
    ASSERT_TRUE(status.ok()) << status.message();
  }
  // Another reshape writing a view of those bytes during the copy moves no
  // byte and is allowed; writing them through buffer 16 is not.
  program().insert(program().begin() + 5,
                   json{{"op", "reshape"}, {"in", {16}}, {"out", {id}}});
  {
    Plan loaded;
    Status status = parsePlan(plan.dump(), "mlp.json", loaded);
    ASSERT_TRUE(status.ok()) << status.message();
  }
  program()[5] = inst(2);
  expectRejected("instruction #5 (relu): writes buffer 16, which slot 0's "
                 "swap_out (instruction #4) is still copying to the host");
}

TEST_F(SwapRejection, OtherRanksNameTheRank) {
  // A corrupt second program is named by its rank.
  plan = multiRank(plan, 2);
  plan["ranks"][1].erase("program_of");
  plan["ranks"][1]["program"] = program();
  plan["ranks"][1]["program"].erase(12);
  expectRejected("ranks[1]: instruction #12 (matmul): uses buffer 24");
}

TEST(PlanFile, Missing) {
  Plan plan;
  Status status = loadPlan("/nonexistent/plan.json", plan);
  EXPECT_EQ(status.code(), Status::Code::Failure);
  EXPECT_NE(status.message().find("/nonexistent/plan.json: cannot open"),
            std::string::npos)
      << status.message();
}

TEST(PlanFile, Empty) {
  Plan plan;
  Status status = parsePlan("", "empty.json", plan);
  EXPECT_EQ(status.code(), Status::Code::Invalid);
  EXPECT_NE(status.message().find("empty.json: invalid JSON: "),
            std::string::npos)
      << status.message();
}

TEST(PlanFile, Truncated) {
  std::string text = readText(inputPath("mlp.json"));
  Plan plan;
  Status status = parsePlan(text.substr(0, text.size() / 2), "mlp.json", plan);
  EXPECT_EQ(status.code(), Status::Code::Invalid);
  EXPECT_NE(
      status.message().find("mlp.json: invalid JSON: parse error at line"),
      std::string::npos)
      << status.message();
}

/// Loads mutated text; anything but success or a clean rejection fails.
static void expectCleanResult(const std::string &text, const char *what) {
  Plan plan;
  Status status = parsePlan(text, "fuzz.json", plan);
  if (status.ok())
    return;
  EXPECT_EQ(status.code(), Status::Code::Invalid)
      << what << ": " << status.message();
  EXPECT_EQ(status.message().rfind("fuzz.json: ", 0), 0u) << status.message();
}

TEST(PlanFuzz, TruncationsNeverCrash) {
  for (const char *name : {"mlp.json", "lm.json"}) {
    std::string text = readText(inputPath(name));
    ASSERT_FALSE(text.empty());
    for (size_t cut = 0; cut < text.size(); ++cut) {
      Plan plan;
      Status status = parsePlan(text.substr(0, cut), "fuzz.json", plan);
      // Only whitespace may follow the closing brace.
      if (cut + 2 < text.size())
        EXPECT_EQ(status.code(), Status::Code::Invalid) << "cut at " << cut;
    }
  }
}

TEST(PlanFuzz, ByteFlipsNeverCrash) {
  std::mt19937 rng(12345);
  const std::string alphabet = "0123456789-.,:[]{}\"e aZ";
  for (const char *name : {"mlp.json", "regression.json", "lm.json"}) {
    std::string original = readText(inputPath(name));
    ASSERT_FALSE(original.empty());
    std::uniform_int_distribution<size_t> position(0, original.size() - 1);
    std::uniform_int_distribution<size_t> symbol(0, alphabet.size() - 1);
    std::uniform_int_distribution<int> byte(0, 255);
    for (int round = 0; round < 1500; ++round) {
      std::string text = original;
      int flips = 1 + round % 4;
      for (int f = 0; f < flips; ++f) {
        size_t at = position(rng);
        // Mostly JSON-ish symbols (which reach deeper validation), sometimes
        // arbitrary bytes.
        text[at] = round % 5 == 0 ? static_cast<char>(byte(rng))
                                  : alphabet[symbol(rng)];
      }
      expectCleanResult(text, "byte flip");
    }
  }
}

TEST(PlanFuzz, NumberMutationsNeverCrash) {
  // Replaces single numbers with extreme values, which reach the shape,
  // offset and kernel checks rather than the JSON parser.
  json plan = json::parse(readText(inputPath("mlp.json")));
  const std::vector<json> extremes = {0,
                                      -1,
                                      1,
                                      63,
                                      65,
                                      1 << 20,
                                      int64_t(1) << 40,
                                      INT64_MAX,
                                      INT64_MIN,
                                      json(UINT64_MAX),
                                      1e300,
                                      -0.5,
                                      nullptr,
                                      "7",
                                      json::array()};
  std::mt19937 rng(7);
  std::vector<json::json_pointer> numbers;
  std::function<void(const json &, const json::json_pointer &)> collect =
      [&](const json &value, const json::json_pointer &ptr) {
        if (value.is_number())
          numbers.push_back(ptr);
        if (value.is_array())
          for (size_t i = 0; i < value.size(); ++i)
            collect(value[i], ptr / i);
        if (value.is_object())
          for (auto it = value.begin(); it != value.end(); ++it)
            collect(it.value(), ptr / it.key());
      };
  collect(plan, json::json_pointer());
  ASSERT_GT(numbers.size(), 100u);
  for (const json::json_pointer &ptr : numbers) {
    for (int k = 0; k < 2; ++k) {
      json mutated = plan;
      mutated[ptr] = extremes[rng() % extremes.size()];
      expectCleanResult(mutated.dump(), ptr.to_string().c_str());
    }
  }
}

TEST(PlanFuzz, LoadablePlansRunWithoutCrashing) {
  // The loader's promise to the kernels: a plan it accepts can be executed.
  // Run one step of every number mutation that still loads.
  for (const char *name : {"mlp.json", "lm.json"}) {
    STRATA_SKIP_WITHOUT_KERNELS(inputPath(name));
    json original = json::parse(readText(inputPath(name)));
    std::vector<json::json_pointer> numbers;
    std::function<void(const json &, const json::json_pointer &)> collect =
        [&](const json &value, const json::json_pointer &ptr) {
          if (value.is_number())
            numbers.push_back(ptr);
          if (value.is_array())
            for (size_t i = 0; i < value.size(); ++i)
              collect(value[i], ptr / i);
          if (value.is_object())
            for (auto it = value.begin(); it != value.end(); ++it)
              collect(it.value(), ptr / it.key());
        };
    collect(original, json::json_pointer());
    std::mt19937 rng(3);
    const std::vector<json> values = {0, 1, 2, 3, 64, 128, -1, 1000, 1e9};
    int ran = 0;
    for (const json::json_pointer &ptr : numbers) {
      json mutated = original;
      mutated[ptr] = values[rng() % values.size()];
      Plan plan;
      if (!parsePlan(mutated.dump(), "fuzz.json", plan).ok())
        continue;
      std::unique_ptr<Executor> executor;
      ExecutorOptions options;
      options.threads = 1;
      if (!Executor::create(std::move(plan), options, executor).ok())
        continue;
      executor->initialize(0);
      std::unique_ptr<DataSource> data;
      if (DataSource::create(executor->getPlan(), DataOptions(), data).ok())
        data->fill(1, executor->getTensors(), nullptr);
      float loss = 0;
      Status status = executor->runStep(1, loss);
      if (!status.ok())
        EXPECT_EQ(status.code(), Status::Code::Failure) << status.message();
      ++ran;
    }
    // Mutated offsets that make live buffers share bytes are refused since
    // the loader checks lifetimes (Liveness.h); the rest still load and run.
    EXPECT_GT(ran, 40) << name;
  }
}

TEST_F(PlanRejection, AttributeOfWrongKindCaughtByDecoding) {
  // The kernel's verifier reads transpose_a as a number and so never saw a
  // list; the typed decoding does.
  program()[9]["attrs"]["transpose_a"] = json::array({1});
  expectRejected("instruction #9 (matmul): attribute 'transpose_a' must be a "
                 "boolean, got a list");
}

//===----------------------------------------------------------------------===//
// The op table (PlanOps.def) and typed attributes
//===----------------------------------------------------------------------===//

TEST(PlanOps, TableIsConsistent) {
  int starts = 0, waits = 0, copyStarts = 0, copyWaits = 0;
  for (int i = 0; i < kNumOpCodes; ++i) {
    OpCode op = static_cast<OpCode>(i);
    const OpInfo &info = opInfo(op);
    EXPECT_EQ(info.op, op);
    OpCode found;
    ASSERT_TRUE(lookupOpCode(info.name, found)) << info.name;
    EXPECT_EQ(found, op) << info.name;
    if (i > 0)
      EXPECT_LT(std::string(opName(static_cast<OpCode>(i - 1))),
                std::string(info.name));
    EXPECT_EQ(info.has(kInPlace), !info.inPlace.empty()) << info.name;
    for (int input : info.inPlace)
      EXPECT_LT(input, info.numInputs) << info.name;
    // A local update is an in-place op that does not hold sends back.
    if (info.has(kLocalUpdate))
      EXPECT_TRUE(info.has(kInPlace) && !info.waitsForSends()) << info.name;
    // Every in-place op updates at least one operand; outputs it does not
    // list are fresh (-1), and none past its last output.
    if (info.has(kInPlace)) {
      EXPECT_LE(static_cast<int>(info.inPlace.size()), info.numOutputs);
      EXPECT_TRUE(std::any_of(info.inPlace.begin(), info.inPlace.end(),
                              [](int input) { return input >= 0; }))
          << info.name;
    }
    EXPECT_EQ(info.has(kIndexOperands), info.indexOperand.ids >= 0)
        << info.name;
    std::set<AttrId> ids;
    for (const OpAttrSpec &spec : info.attrs)
      EXPECT_TRUE(ids.insert(spec.id).second)
          << info.name << " lists " << attrInfo(spec.id).name << " twice";
    starts += info.has(kAsyncStart);
    waits += info.has(kAsyncWait);
    if (info.has(kAsyncStart) || info.has(kAsyncWait))
      EXPECT_TRUE(info.has(kCollective)) << info.name;
    copyStarts += info.has(kCopyStart);
    copyWaits += info.has(kCopyWait);
    // Host copies are neither collectives nor bucket transfers, and their
    // lifetimes follow from their operands alone.
    if (info.has(kCopyStart) || info.has(kCopyWait)) {
      EXPECT_FALSE(info.has(kCollective) || info.has(kAsyncStart) ||
                   info.has(kAsyncWait) || info.has(kReadsAfterReturn) ||
                   info.has(kInPlace))
          << info.name;
      const OpAttrSpec *slot = info.attr(AttrId::Slot);
      ASSERT_NE(slot, nullptr) << info.name;
      EXPECT_TRUE(slot->required) << info.name;
    }
    EXPECT_EQ(kernelFor(op).op, op);
  }
  EXPECT_EQ(starts, waits);
  EXPECT_EQ(copyStarts, 2);
  EXPECT_EQ(copyWaits, 2);
  OpCode none;
  EXPECT_FALSE(lookupOpCode("matmull", none));
  EXPECT_FALSE(lookupOpCode("", none));
}

TEST(PlanOps, DecodeFillsDefaultsPerOp) {
  OpAttrs adam, norm;
  Attrs raw;
  raw.numbers["lr"] = 0.5;
  ASSERT_EQ(decodeAttrs(OpCode::AdamUpdate, raw, adam), "");
  EXPECT_EQ(adam.lr, 0.5);
  EXPECT_EQ(adam.epsilon, 1e-8);
  EXPECT_EQ(adam.beta2, 0.999);
  EXPECT_TRUE(adam.has(AttrId::Lr));
  EXPECT_FALSE(adam.has(AttrId::Epsilon));
  ASSERT_EQ(decodeAttrs(OpCode::LayerNorm, Attrs{}, norm), "");
  EXPECT_EQ(norm.epsilon, 1e-5);
  // Attributes the op does not take are ignored.
  ASSERT_EQ(decodeAttrs(OpCode::Relu, raw, norm), "");
  EXPECT_EQ(norm.present, 0u);
}

TEST(PlanOps, DecodeChecksKinds) {
  OpAttrs out;
  Attrs raw;
  raw.numbers["bucket"] = 1.5;
  EXPECT_EQ(decodeAttrs(OpCode::AllReduceWait, raw, out),
            "attribute 'bucket' must be an integer, got 1.5");
  raw.numbers["bucket"] = 3;
  ASSERT_EQ(decodeAttrs(OpCode::AllReduceWait, raw, out), "");
  EXPECT_EQ(out.bucket, 3);
  EXPECT_EQ(decodeAttrs(OpCode::AllReduceWait, Attrs{}, out),
            "missing attribute 'bucket'");
  Attrs list;
  list.numbers["permutation"] = 1;
  EXPECT_EQ(decodeAttrs(OpCode::Transpose, list, out),
            "attribute 'permutation' must be a list of integers, got a number");
  list.numbers.clear();
  list.lists["permutation"] = {1, 0};
  ASSERT_EQ(decodeAttrs(OpCode::Transpose, list, out), "");
  EXPECT_EQ(out.permutation, (std::vector<int64_t>{1, 0}));
  Attrs flag;
  flag.numbers["transpose_b"] = 2;
  ASSERT_EQ(decodeAttrs(OpCode::Matmul, flag, out), "");
  EXPECT_TRUE(out.transposeB);
  EXPECT_FALSE(out.has(AttrId::Mc));
  EXPECT_THROW(decodeAttrsOrThrow(OpCode::Fill, Attrs{}),
               std::invalid_argument);
}

TEST(PlanOps, Phases) {
  Phase phase = Phase::None;
  for (const char *name : {"forward", "backward", "update", "recompute"}) {
    ASSERT_TRUE(parsePhase(name, phase)) << name;
    EXPECT_STREQ(phaseName(phase), name);
  }
  EXPECT_FALSE(parsePhase("sideways", phase));
  EXPECT_STREQ(phaseName(Phase::None), "");
  EXPECT_TRUE(isBackwardPhase(Phase::Backward));
  EXPECT_TRUE(isBackwardPhase(Phase::Recompute));
  EXPECT_FALSE(isBackwardPhase(Phase::Forward));
  EXPECT_FALSE(isBackwardPhase(Phase::Update));
}

//===----------------------------------------------------------------------===//
// Views: a reshape's output placed in its input's bytes
//===----------------------------------------------------------------------===//

namespace {

/// lm.json with its first reshape's output made a view of its input (as
/// --strata-lower-to-plan places it).
class PlanViews : public ::testing::Test {
protected:
  void SetUp() override {
    plan = json::parse(readText(inputPath("lm.json")), nullptr, false);
    ASSERT_FALSE(plan.is_discarded());
    json &program = plan["ranks"][0]["program"];
    for (size_t i = 0; i < program.size(); ++i)
      if (program[i]["op"] == "reshape") {
        index = i;
        break;
      }
    ASSERT_GE(index, 0);
    source = program[index]["in"][0].get<int64_t>();
    view = program[index]["out"][0].get<int64_t>();
    buffer(view)["offset"] = buffer(source)["offset"];
    buffer(view)["view_of"] = source;
  }

  json &buffer(int64_t id) { return plan["buffers"][id]; }
  json &instruction(size_t i) { return plan["ranks"][0]["program"][i]; }

  void expectRejected(const std::string &substring) {
    Plan loaded;
    Status status = parsePlan(plan.dump(), "lm.json", loaded);
    ASSERT_FALSE(status.ok()) << "expected a rejection naming: " << substring;
    EXPECT_EQ(status.code(), Status::Code::Invalid);
    EXPECT_NE(status.message().find(substring), std::string::npos)
        << "message: " << status.message() << "\nexpected: " << substring;
  }

  json plan;
  int64_t index = -1, source = -1, view = -1;
};

} // namespace

TEST_F(PlanViews, ViewLoads) {
  Plan loaded;
  Status status = parsePlan(plan.dump(), "lm.json", loaded);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(loaded.buffers[view].viewOf, source);
  EXPECT_EQ(loaded.buffers[source].viewOf, -1);
}

TEST_F(PlanViews, ViewMustShareTheBytes) {
  buffer(view)["offset"] = buffer(source)["offset"].get<int64_t>() + 64;
  expectRejected("buffers[" + std::to_string(view) +
                 "].view_of: a view has the offset and bytes of buffer " +
                 std::to_string(source));
}

TEST_F(PlanViews, ViewOutOfRange) {
  buffer(view)["view_of"] = plan["buffers"].size();
  expectRejected("out of range or the buffer itself");
  buffer(view)["view_of"] = view;
  expectRejected("out of range or the buffer itself");
}

TEST_F(PlanViews, ViewOfAViewNamesTheViewedBuffer) {
  buffer(source)["view_of"] = view;
  expectRejected("is a view itself");
}

TEST_F(PlanViews, OnlyActivationsAreViews) {
  // A parameter's bytes are written by the optimizer in place.
  int64_t param = -1;
  for (const json &b : plan["buffers"])
    if (b["kind"] == "param") {
      param = b["id"].get<int64_t>();
      break;
    }
  ASSERT_GE(param, 0);
  buffer(view)["view_of"] = param;
  expectRejected("only an activation may view an activation");
}

TEST_F(PlanViews, OnlyAReshapeOfTheViewedBufferWritesAView) {
  // The view's consumer writes a buffer that claims to view the view's
  // bytes: a real write into bytes another value still holds.
  json &next = instruction(index + 1);
  int64_t out = next["out"][0].get<int64_t>();
  buffer(out)["view_of"] = source;
  buffer(out)["offset"] = buffer(source)["offset"];
  buffer(out)["bytes"] = buffer(source)["bytes"];
  buffer(out)["shape"] = buffer(source)["shape"];
  expectRejected("is a view of buffer " + std::to_string(source) +
                 ": only a reshape or flatten of that buffer");
}

TEST_F(PlanViews, WithoutViewOfSharedBytesAlias) {
  // Without view_of the same layout is an output written over its input.
  buffer(view).erase("view_of");
  expectRejected("out[0] (buffer " + std::to_string(view) +
                 ") aliases in[0] (buffer " + std::to_string(source) +
                 ") in the arena");
}
