//===- StrataRunTest.cpp - Exit codes and output of strata-run ------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Runs the strata-run binary (STRATA_RUN_PATH) without a shell.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <regex>

using namespace strata::rt;
using namespace strata::rt::test;

namespace {

class StrataRun : public ::testing::Test {
protected:
  /// Runs strata-run with `args`; returns its exit code.
  int run(std::vector<std::string> args) {
    args.insert(args.begin(), STRATA_RUN_PATH);
    return runProcess(args, out, err, scratch);
  }

  /// Lines of stdout starting with "step ".
  std::vector<std::string> stepLines() const {
    std::vector<std::string> lines;
    size_t begin = 0;
    while (begin < out.size()) {
      size_t end = out.find('\n', begin);
      if (end == std::string::npos)
        end = out.size();
      std::string line = out.substr(begin, end - begin);
      if (line.rfind("step ", 0) == 0)
        lines.push_back(line);
      begin = end + 1;
    }
    return lines;
  }

  /// The loss printed on a step line.
  static std::string lossOf(const std::string &line) {
    std::smatch m;
    std::regex_search(line, m, std::regex("loss (\\S+)"));
    return m.size() > 1 ? m[1].str() : "";
  }

  TempDir scratch;
  std::string out, err;
};

} // namespace

TEST_F(StrataRun, UsageErrorsExitWith2) {
  std::string plan = inputPath("mlp.json");
  struct Case {
    std::vector<std::string> args;
    const char *message;
  } cases[] = {
      {{}, "missing the PLAN argument"},
      {{plan, "--frobnicate"}, "unknown option '--frobnicate'"},
      {{plan, "--steps", "ten"}, "--steps: invalid number 'ten'"},
      {{plan, "--steps=1x"}, "--steps: invalid number '1x'"},
      {{plan, "--steps", "-1"}, "--steps must be non-negative, got -1"},
      {{plan, "--seed", "-3"}, "--seed: invalid number '-3'"},
      {{plan, "--threads", "two"}, "--threads: invalid number 'two'"},
      {{plan, "--log-every", "0"}, "--log-every must be at least 1"},
      {{plan, "--steps"}, "option '--steps' needs a value"},
      {{plan, "--quiet=yes"}, "option '--quiet' takes no value"},
      {{plan, "other.json"}, "unexpected argument 'other.json'"},
      {{plan, "--init", "a.safetensors", "--resume", "b.safetensors"},
       "--init and --resume cannot be combined"},
  };
  for (const Case &c : cases) {
    EXPECT_EQ(run(c.args), 2) << c.message;
    EXPECT_NE(err.find(std::string("strata-run: error: ") + c.message),
              std::string::npos)
        << "stderr: " << err;
    EXPECT_NE(err.find("strata-run --help"), std::string::npos);
  }
}

TEST_F(StrataRun, Help) {
  EXPECT_EQ(run({"--help"}), 0);
  EXPECT_NE(out.find("usage: strata-run PLAN"), std::string::npos);
  EXPECT_NE(out.find("--resume FILE"), std::string::npos);
}

TEST_F(StrataRun, InvalidPlanExitsWith3) {
  std::string text = readText(inputPath("mlp.json"));
  writeText(scratch.path("cut.json"), text.substr(0, 100));
  EXPECT_EQ(run({scratch.path("cut.json")}), 3);
  EXPECT_NE(err.find("cut.json: invalid JSON: parse error"), std::string::npos)
      << err;
  EXPECT_TRUE(out.empty()) << out;
}

TEST_F(StrataRun, MissingPlanExitsWith1) {
  EXPECT_EQ(run({scratch.path("nope.json")}), 1);
  EXPECT_NE(err.find("nope.json: cannot open"), std::string::npos) << err;
}

TEST_F(StrataRun, TrainsAndPrintsOneLinePerStep) {
  STRATA_SKIP_WITHOUT_KERNELS(inputPath("mlp.json"));
  EXPECT_EQ(run({inputPath("mlp.json"), "--steps", "4", "--threads=2"}), 0)
      << err;
  std::vector<std::string> lines = stepLines();
  ASSERT_EQ(lines.size(), 4u) << out;
  std::regex format(
      "step 3 loss [0-9]+\\.[0-9]{6} samples/s [0-9.]+ ms [0-9.]+");
  EXPECT_TRUE(std::regex_match(lines[2], format)) << lines[2];
  EXPECT_NE(out.find("summary: steps 1-4 mean ms "), std::string::npos) << out;
  EXPECT_TRUE(err.empty()) << err;

  EXPECT_EQ(run({inputPath("mlp.json"), "--steps", "10", "--log-every", "4",
                 "--threads", "2"}),
            0);
  lines = stepLines();
  ASSERT_EQ(lines.size(), 3u) << out;
  EXPECT_EQ(lines[0].rfind("step 4 ", 0), 0u);
  EXPECT_EQ(lines[2].rfind("step 10 ", 0), 0u);

  EXPECT_EQ(run({inputPath("mlp.json"), "--steps", "3", "--quiet"}), 0);
  EXPECT_TRUE(stepLines().empty()) << out;
  EXPECT_EQ(out.rfind("summary: ", 0), 0u) << out;
}

TEST_F(StrataRun, TokenModelsReportTokensPerSecond) {
  STRATA_SKIP_WITHOUT_KERNELS(inputPath("lm.json"));
  EXPECT_EQ(run({inputPath("lm.json"), "--steps", "2", "--threads", "2"}), 0)
      << err;
  EXPECT_NE(out.find(" tokens/s "), std::string::npos) << out;
}

TEST_F(StrataRun, SaveAndResumeContinueTheRun) {
  STRATA_SKIP_WITHOUT_KERNELS(inputPath("mlp.json"));
  std::string plan = inputPath("mlp.json");
  ASSERT_EQ(run({plan, "--steps", "6", "--threads", "2", "--seed", "3"}), 0);
  std::vector<std::string> straight = stepLines();
  std::string ck = scratch.path("ck.safetensors");
  ASSERT_EQ(run({plan, "--steps", "3", "--threads", "2", "--seed", "3",
                 "--save", ck}),
            0)
      << err;
  std::vector<std::string> head = stepLines();
  ASSERT_EQ(run({plan, "--steps", "3", "--threads", "2", "--resume", ck}), 0)
      << err;
  std::vector<std::string> tail = stepLines();
  ASSERT_EQ(straight.size(), 6u);
  ASSERT_EQ(head.size(), 3u);
  ASSERT_EQ(tail.size(), 3u);
  EXPECT_EQ(tail[0].rfind("step 4 ", 0), 0u) << tail[0];
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(lossOf(straight[i]), lossOf(head[i]));
    EXPECT_EQ(lossOf(straight[i + 3]), lossOf(tail[i]));
  }
}

TEST_F(StrataRun, BadCheckpointOrDataExitsWith3) {
  STRATA_SKIP_WITHOUT_KERNELS(inputPath("lm.json"));
  std::string plan = inputPath("mlp.json");
  writeText(scratch.path("junk.safetensors"), "this is not a checkpoint");
  EXPECT_EQ(run({plan, "--resume", scratch.path("junk.safetensors")}), 3);
  EXPECT_NE(err.find("junk.safetensors: header length"), std::string::npos)
      << err;
  EXPECT_EQ(run({plan, "--init", scratch.path("absent.safetensors")}), 1);
  writeText(scratch.path("short.txt"), "tiny");
  EXPECT_EQ(run({inputPath("lm.json"), "--data", scratch.path("short.txt")}),
            3);
  EXPECT_NE(err.find("short.txt: 4 bytes is too short"), std::string::npos)
      << err;
  EXPECT_EQ(run({plan, "--data", scratch.path("short.txt")}), 2);
}

TEST_F(StrataRun, DivergenceExitsWith1AndSavesNothing) {
  STRATA_SKIP_WITHOUT_KERNELS(inputPath("mlp.json"));
  auto plan = nlohmann::json::parse(readText(inputPath("mlp.json")));
  for (auto &inst : plan["ranks"][0]["program"])
    if (inst["op"] == "sgd_update")
      inst["attrs"]["lr"] = 1e30;
  writeText(scratch.path("diverge.json"), plan.dump());
  std::string ck = scratch.path("ck.safetensors");
  std::string trace = scratch.path("trace.json");
  EXPECT_EQ(run({scratch.path("diverge.json"), "--steps", "20", "--save", ck,
                 "--trace", trace}),
            1);
  EXPECT_NE(err.find("the loss is"), std::string::npos) << err;
  // The trace of the steps that ran is written; no checkpoint, no temporary.
  EXPECT_EQ(scratch.list(),
            (std::vector<std::string>{"diverge.json", "trace.json"}));
}
