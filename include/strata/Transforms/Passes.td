//===- Passes.td - Strata passes ---------------------------*- tablegen -*-===//

#ifndef STRATA_TRANSFORMS_PASSES_TD
#define STRATA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnnotateCostsPass : Pass<"strata-annotate-costs", "::mlir::ModuleOp"> {
  let summary = "Attach per-op and per-layer analytic costs for a target";
  let description = [{
    Loads a hardware description (`target=NAME` resolved in the target search
    path, or `target=PATH.json`) and asks every op implementing
    `CostOpInterface` for its FLOPs, bytes and roofline time on one device of
    that target. Each such op gets `strata.cost = #strata.cost<...>`; each
    function gets `strata.layer_costs`, one `#strata.layer_cost` per layer
    (sums over the layer's ops, the bytes of the parameters the layer owns and
    the bytes of activations it hands to later layers); the module gets
    `strata.target = "NAME"`.

    The target search path is `$STRATA_TARGET_PATH` (colon-separated), then
    the source tree's `targets/`, then the installed `share/strata/targets`.

    Example:

    ```
    strata-model gpt --preset gpt2-small |
      strata-opt --strata-annotate-costs="target=h100-sxm-8x"
    ```
  }];
  let options = [
    Option<"targetName", "target", "std::string", /*default=*/"\"\"",
           "Target description: a name from the search path or a JSON file">,
  ];
  let dependentDialects = ["::mlir::strata::StrataDialect"];
}

#endif // STRATA_TRANSFORMS_PASSES_TD
