//===- TestPrintCosts.cpp - Print per-layer cost tables -------------------===//

#include "TestPasses.h"
#include "strata/Analysis/CostModel.h"
#include "strata/Dialect/Strata/StrataOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::strata::test {
#define GEN_PASS_DEF_TESTPRINTCOSTSPASS
#include "TestPasses.h.inc"
} // namespace mlir::strata::test

using namespace mlir;
using namespace mlir::strata;

static void printRow(llvm::raw_ostream &os, StringRef layer, StringRef name,
                     const LayerCost &cost) {
  constexpr double mib = 1024.0 * 1024.0;
  os << llvm::format("%6s  %-16s %5lld %12.6g %12.6g %12.6g %12.6g %12.6g\n",
                     layer.str().c_str(), name.str().c_str(),
                     static_cast<long long>(cost.ops), cost.flops * 1e-9,
                     cost.bytes / mib, cost.seconds * 1e6,
                     cost.paramBytes / mib, cost.activationBytes / mib);
}

namespace {
struct TestPrintCostsPass
    : public strata::test::impl::TestPrintCostsPassBase<TestPrintCostsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto target =
        module->getAttrOfType<StringAttr>(StrataDialect::getTargetAttrName());
    llvm::raw_ostream &os = llvm::outs();
    module.walk([&](FunctionOpInterface func) {
      if (func.isExternal())
        return WalkResult::advance();
      auto costs = func->getAttrOfType<ArrayAttr>(
          StrataDialect::getLayerCostsAttrName());
      if (!costs) {
        func.emitError() << "no '" << StrataDialect::getLayerCostsAttrName()
                         << "'; run --strata-annotate-costs first";
        signalPassFailure();
        return WalkResult::interrupt();
      }
      auto names = func->getAttrOfType<ArrayAttr>(
          StrataDialect::getLayerNamesAttrName());
      os << "per-layer cost of @" << func.getName() << " on "
         << (target ? target.getValue() : StringRef("?")) << "\n";
      os << llvm::format("%6s  %-16s %5s %12s %12s %12s %12s %12s\n", "layer",
                         "name", "ops", "GFLOP", "MiB moved", "time(us)",
                         "param MiB", "act MiB");
      LayerCost total;
      for (auto attr : costs.getAsRange<LayerCostAttr>()) {
        LayerCost cost = LayerCost::fromAttr(attr);
        StringRef name = "-";
        if (names && cost.layer >= 0 &&
            cost.layer < static_cast<int64_t>(names.size()))
          name = cast<StringAttr>(names[cost.layer]).getValue();
        std::string index =
            cost.layer < 0 ? std::string("-") : std::to_string(cost.layer);
        printRow(os, index, name, cost);
        total.ops += cost.ops;
        total.flops += cost.flops;
        total.bytes += cost.bytes;
        total.seconds += cost.seconds;
        total.paramBytes += cost.paramBytes;
        total.activationBytes += cost.activationBytes;
      }
      printRow(os, "total", "", total);
      return WalkResult::advance();
    });
  }
};
} // namespace
