//===- Strata.cpp - C API of the Strata compiler --------------------------===//
//
// include/strata-c/Strata.h. Each entry point catches the diagnostics of
// what it runs and hands them to the caller's callback; none aborts on bad
// input.
//
//===----------------------------------------------------------------------===//

#include "strata-c/Strata.h"

#include "strata/Conversion/Plan.h"
#include "strata/Dialect/Strata/StrataDialect.h"
#include "strata/Models/Models.h"
#include "strata/Transforms/Passes.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/CAPI/Support.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>

using namespace mlir;
using namespace mlir::strata;

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Strata, strata,
                                      mlir::strata::StrataDialect)

namespace {
/// Sends `message` to the caller's error callback, if any.
void report(MlirStringCallback onError, void *userData, StringRef message) {
  if (onError)
    onError(wrap(message), userData);
}

/// "file:line:col" for a file location, else MLIR's form of `loc`.
std::string formatLoc(Location loc) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    os << file.getFilename().getValue() << ":" << file.getLine() << ":"
       << file.getColumn();
  else
    os << loc;
  return text;
}

/// Collects the error diagnostics of its scope (with their locations and
/// notes) and reports them when it ends; remarks and warnings are dropped.
class ErrorCollector {
public:
  ErrorCollector(MLIRContext *context, MlirStringCallback onError,
                 void *userData)
      : handler(
            context,
            [this](Diagnostic &diag) {
              if (diag.getSeverity() != DiagnosticSeverity::Error)
                return success();
              llvm::raw_string_ostream os(messages);
              if (!messages.empty())
                os << "\n";
              os << formatLoc(diag.getLocation()) << ": error: " << diag;
              for (Diagnostic &note : diag.getNotes())
                if (!StringRef(note.str()).starts_with("see current operation"))
                  os << "\n"
                     << formatLoc(note.getLocation()) << ": note: " << note;
              return success();
            }),
        onError(onError), userData(userData) {}
  ~ErrorCollector() {
    if (!messages.empty())
      report(onError, userData, messages);
  }
  /// Reports `message` unless a diagnostic already said why.
  void fallback(StringRef message) {
    if (messages.empty())
      messages = message.str();
  }

private:
  std::string messages;
  ScopedDiagnosticHandler handler;
  MlirStringCallback onError;
  void *userData;
};

/// key=value pairs of `options`; false (with `error`) on a malformed pair or
/// a value that is not an integer where one is needed.
bool parseOptions(StringRef options, llvm::StringMap<std::string> &pairs,
                  std::string &error) {
  SmallVector<StringRef> words;
  options.split(words, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef word : words) {
    auto [key, value] = word.split('=');
    if (key.empty() || value.empty() || !word.contains('=')) {
      error = ("model option '" + word + "' is not key=value").str();
      return false;
    }
    pairs[key] = value.str();
  }
  return true;
}

/// Reads integer option `key` into `field`; false with `error` otherwise.
bool readInt(llvm::StringMap<std::string> &pairs, StringRef key, int64_t &field,
             std::string &error) {
  auto it = pairs.find(key);
  if (it == pairs.end())
    return true;
  if (StringRef(it->second).getAsInteger(10, field)) {
    error =
        ("model option " + key + "=" + it->second + " is not an integer").str();
    return false;
  }
  pairs.erase(it);
  return true;
}

/// Builds the model; null with `error` on bad options.
OwningOpRef<ModuleOp> buildModel(MLIRContext *context, StringRef kind,
                                 StringRef options, std::string &error) {
  llvm::StringMap<std::string> pairs;
  if (!parseOptions(options, pairs, error))
    return nullptr;
  auto finish = [&](llvm::Error invalid, auto build) -> OwningOpRef<ModuleOp> {
    if (invalid) {
      error = llvm::toString(std::move(invalid));
      return nullptr;
    }
    if (!pairs.empty()) {
      error = ("unknown " + kind + " option '" + pairs.begin()->first() + "'")
                  .str();
      return nullptr;
    }
    return build();
  };
  if (kind == "mlp") {
    MLPConfig c;
    for (auto [key, field] :
         {std::pair<StringRef, int64_t *>{"batch", &c.batch},
          {"inputs", &c.inputs},
          {"hidden", &c.hidden},
          {"layers", &c.layers},
          {"classes", &c.classes}})
      if (!readInt(pairs, key, *field, error))
        return nullptr;
    return finish(validateMLP(c), [&] { return buildMLP(context, c); });
  }
  if (kind == "gpt") {
    GPTConfig c;
    if (auto preset = pairs.find("preset"); preset != pairs.end()) {
      std::optional<GPTConfig> named = getGPTPreset(preset->second);
      if (!named) {
        error = "unknown GPT preset '" + preset->second + "'";
        return nullptr;
      }
      c = *named;
      pairs.erase(preset);
    }
    for (auto [key, field] :
         {std::pair<StringRef, int64_t *>{"batch", &c.batch},
          {"layers", &c.layers},
          {"hidden", &c.hidden},
          {"heads", &c.heads},
          {"seq", &c.seq},
          {"vocab", &c.vocab},
          {"positions", &c.positions}})
      if (!readInt(pairs, key, *field, error))
        return nullptr;
    return finish(validateGPT(c), [&] { return buildGPT(context, c); });
  }
  std::optional<CNNKind> cnn = llvm::StringSwitch<std::optional<CNNKind>>(kind)
                                   .Case("cnn-small", CNNKind::Small)
                                   .Case("vgg16", CNNKind::VGG16)
                                   .Case("resnet18", CNNKind::ResNet18)
                                   .Case("resnet50", CNNKind::ResNet50)
                                   .Default(std::nullopt);
  if (!cnn) {
    error = ("unknown model kind '" + kind +
             "' (mlp, gpt, cnn-small, vgg16, resnet18, resnet50)")
                .str();
    return nullptr;
  }
  CNNConfig c;
  c.kind = *cnn;
  for (auto [key, field] : {std::pair<StringRef, int64_t *>{"batch", &c.batch},
                            {"image-size", &c.imageSize},
                            {"channels", &c.channels},
                            {"classes", &c.classes}})
    if (!readInt(pairs, key, *field, error))
      return nullptr;
  return finish(validateCNN(c), [&] { return buildCNN(context, c); });
}
} // namespace

void strataRegisterPasses(void) {
  static std::once_flag once;
  std::call_once(once, [] {
    registerStrataPasses();
    registerStrataPipelines();
  });
}

void strataContextLoadDialects(MlirContext context) {
  unwrap(context)->loadDialect<StrataDialect, func::FuncDialect>();
}

MlirModule strataBuildModel(MlirContext context, MlirStringRef kind,
                            MlirStringRef options, MlirStringCallback onError,
                            void *userData) {
  MLIRContext *ctx = unwrap(context);
  ctx->loadDialect<StrataDialect, func::FuncDialect>();
  ErrorCollector errors(ctx, onError, userData);
  std::string error;
  OwningOpRef<ModuleOp> module =
      buildModel(ctx, unwrap(kind), unwrap(options), error);
  if (!module) {
    errors.fallback(error);
    return MlirModule{nullptr};
  }
  return wrap(module.release());
}

MlirModule strataParseModule(MlirContext context, MlirStringRef ir,
                             MlirStringCallback onError, void *userData) {
  MLIRContext *ctx = unwrap(context);
  ctx->loadDialect<StrataDialect, func::FuncDialect>();
  ErrorCollector errors(ctx, onError, userData);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(unwrap(ir), ParserConfig(ctx), "strata-ir");
  if (!module) {
    errors.fallback("the IR does not parse");
    return MlirModule{nullptr};
  }
  return wrap(module.release());
}

MlirLogicalResult strataRunPipeline(MlirModule module, MlirStringRef pipeline,
                                    MlirStringCallback onError,
                                    void *userData) {
  if (mlirModuleIsNull(module)) {
    report(onError, userData, "strataRunPipeline: null module");
    return mlirLogicalResultFailure();
  }
  strataRegisterPasses();
  ModuleOp op = unwrap(module);
  ErrorCollector errors(op.getContext(), onError, userData);
  // The pipeline runs on the module itself: an explicit builtin.module(...)
  // anchor is the same.
  StringRef text = unwrap(pipeline).trim();
  StringRef inner = text;
  if (inner.consume_front("builtin.module(") && inner.consume_back(")"))
    text = inner;
  PassManager pm(op.getContext(), ModuleOp::getOperationName());
  std::string parseError;
  llvm::raw_string_ostream parseStream(parseError);
  if (failed(parsePassPipeline(text, pm, parseStream))) {
    errors.fallback("invalid pass pipeline '" + text.str() +
                    "': " + parseError);
    return mlirLogicalResultFailure();
  }
  if (failed(pm.run(op))) {
    errors.fallback("the pass pipeline failed");
    return mlirLogicalResultFailure();
  }
  return mlirLogicalResultSuccess();
}

MlirLogicalResult strataExportPlan(MlirModule module, MlirStringRef device,
                                   MlirStringCallback onPlan, void *planData,
                                   MlirStringCallback onError, void *userData) {
  if (mlirModuleIsNull(module)) {
    report(onError, userData, "strataExportPlan: null module");
    return mlirLogicalResultFailure();
  }
  ModuleOp op = unwrap(module);
  ErrorCollector errors(op.getContext(), onError, userData);
  std::string plan;
  llvm::raw_string_ostream os(plan);
  if (failed(exportPlan(op, os, unwrap(device)))) {
    errors.fallback("the plan export failed");
    return mlirLogicalResultFailure();
  }
  if (onPlan)
    onPlan(wrap(StringRef(plan)), planData);
  return mlirLogicalResultSuccess();
}

MlirLogicalResult strataExportPlanToFile(MlirModule module,
                                         MlirStringRef device,
                                         MlirStringRef path,
                                         MlirStringCallback onError,
                                         void *userData) {
  std::string plan;
  MlirLogicalResult built = strataExportPlan(
      module, device,
      [](MlirStringRef piece, void *data) {
        static_cast<std::string *>(data)->append(piece.data, piece.length);
      },
      &plan, onError, userData);
  if (mlirLogicalResultIsFailure(built))
    return built;
  // A temporary file renamed over `path`: never half written.
  if (llvm::Error error = llvm::writeToOutput(
          unwrap(path), [&](llvm::raw_ostream &os) -> llvm::Error {
            os << plan;
            return llvm::Error::success();
          })) {
    report(onError, userData,
           "cannot write the plan to '" + unwrap(path).str() +
               "': " + llvm::toString(std::move(error)));
    return mlirLogicalResultFailure();
  }
  return mlirLogicalResultSuccess();
}
