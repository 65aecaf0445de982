/*===- strata-c/Strata.h - C API of the Strata compiler -----------*- C -*-===*\
|*                                                                            *|
|* The compiler half of Strata's embedding surface, in MLIR's C API style:    *|
|* the dialect handle, pass registration, models from the built-in            *|
|* generators or from IR text, pass pipelines by textual name (the whole flow *|
|* is `strata-train-pipeline`), and the plan export. Use it with MLIR's own   *|
|* C API (mlirContextCreate, mlirModuleDestroy, ...), which libStrataCAPI     *|
|* carries.                                                                   *|
|*                                                                            *|
|* Errors: every entry point that can fail takes `onError` and `userData`;    *|
|* on failure it calls `onError` (when not NULL) with the message, in one or  *|
|* more pieces, and returns a null module or a failed MlirLogicalResult. No   *|
|* entry point aborts the process on bad input.                               *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef STRATA_C_STRATA_H
#define STRATA_C_STRATA_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// mlirGetDialectHandle__strata__(): the strata dialect.
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Strata, strata);

/// Registers every Strata pass and the `strata-train-pipeline` pipeline with
/// MLIR's global registry (so that pipelines can name them). Idempotent.
MLIR_CAPI_EXPORTED void strataRegisterPasses(void);

/// Loads the dialects a Strata module uses (strata, func) into `context`.
MLIR_CAPI_EXPORTED void strataContextLoadDialects(MlirContext context);

/// A model from a built-in generator: `kind` is "mlp", "gpt", "cnn-small",
/// "vgg16", "resnet18" or "resnet50"; `options` is space-separated
/// key=value pairs with strata-model's option names (`batch=16 hidden=64`,
/// `preset=gpt-tiny`, `image-size=32`). A null module on error.
MLIR_CAPI_EXPORTED MlirModule strataBuildModel(MlirContext context,
                                               MlirStringRef kind,
                                               MlirStringRef options,
                                               MlirStringCallback onError,
                                               void *userData);

/// Parses and verifies Strata IR text. A null module on error (the
/// diagnostics, with locations, go to `onError`).
MLIR_CAPI_EXPORTED MlirModule strataParseModule(MlirContext context,
                                                MlirStringRef ir,
                                                MlirStringCallback onError,
                                                void *userData);

/// Runs the textual pass pipeline `pipeline` on `module` in place, e.g.
/// "strata-train-pipeline{optimizer=sgd lr=0.1}" or
/// "strata-autodiff,strata-plan-buffers" (the builtin.module anchor is
/// implied). Diagnostics go to `onError`; remarks are dropped.
MLIR_CAPI_EXPORTED MlirLogicalResult
strataRunPipeline(MlirModule module, MlirStringRef pipeline,
                  MlirStringCallback onError, void *userData);

/// Writes the plan of the module's training step (`device`: "cpu" or
/// "cuda") to `onPlan`, in pieces, only after the whole plan was built.
MLIR_CAPI_EXPORTED MlirLogicalResult strataExportPlan(
    MlirModule module, MlirStringRef device, MlirStringCallback onPlan,
    void *planData, MlirStringCallback onError, void *userData);

/// Writes the plan to the file `path` (replaced atomically: never half
/// written).
MLIR_CAPI_EXPORTED MlirLogicalResult strataExportPlanToFile(
    MlirModule module, MlirStringRef device, MlirStringRef path,
    MlirStringCallback onError, void *userData);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_C_STRATA_H */
