//===- StrataInterfaces.td - Strata op interfaces ----------*- tablegen -*-===//

#ifndef STRATA_DIALECT_STRATA_STRATAINTERFACES_TD
#define STRATA_DIALECT_STRATA_STRATAINTERFACES_TD

include "mlir/IR/OpBase.td"

def Strata_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::strata";
  let description = [{
    The analytic cost of one execution of an op: floating-point operations,
    bytes read and written, and a roofline time on a target description.
    Cost-driven passes (`--strata-annotate-costs`, the pipeline partitioner, the
    estimator) ask this interface and never switch over op names.

    By default an op reads every operand once and writes every result once;
    ops that touch less (a gather, say) override the byte counts. The default
    time is `max(flops / peak(dtype), bytes / bandwidth)` where `dtype` is the
    element type of the op's first floating-point result or operand.
  }];

  let methods = [
    InterfaceMethod<[{
        Returns the floating-point operations of one execution (a fused
        multiply-add counts two).
      }],
      "int64_t", "getFlops", (ins)>,
    InterfaceMethod<[{
        Returns the bytes read from memory by one execution.
      }],
      "int64_t", "getBytesRead", (ins), /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::strata::detail::getOperandBytes($_op);
      }]>,
    InterfaceMethod<[{
        Returns the bytes written to memory by one execution.
      }],
      "int64_t", "getBytesWritten", (ins), /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::strata::detail::getResultBytes($_op);
      }]>,
    InterfaceMethod<[{
        Returns the analytic time in seconds of one execution on `target`.
      }],
      "double", "estimateSeconds",
      (ins "const ::mlir::strata::TargetDescription &":$target),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::strata::detail::getRooflineSeconds($_op, target);
      }]>,
  ];
}

#endif // STRATA_DIALECT_STRATA_STRATAINTERFACES_TD
