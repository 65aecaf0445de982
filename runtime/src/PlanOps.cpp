//===- PlanOps.cpp - The plan's instruction table -------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/PlanOps.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace strata::rt {

namespace {

const std::array<AttrInfo, kNumAttrIds> &attrTable() {
  static const std::array<AttrInfo, kNumAttrIds> table = {{
#define STRATA_PLAN_ATTR(Enum, Name, Member, Kind) {Name, AttrKind::Kind},
#include "strata-rt/PlanOps.def"
  }};
  return table;
}

/// Output `output` of `info`'s op is the buffer of input `input`; the
/// outputs before it that no entry names are fresh (-1).
void setInPlace(OpInfo &info, int output, int input) {
  if (info.inPlace.size() <= static_cast<size_t>(output))
    info.inPlace.resize(output + 1, -1);
  info.inPlace[output] = input;
}

std::array<OpInfo, kNumOpCodes> buildOpTable() {
  std::array<OpInfo, kNumOpCodes> table = {{
#define STRATA_PLAN_OP(Enum, Name, NumIn, NumOut, Traits)                      \
  {OpCode::Enum, Name, NumIn, NumOut, Traits, {}, {}, {-1, -1, false, 0}},
#include "strata-rt/PlanOps.def"
  }};
  auto at = [&](OpCode op) -> OpInfo & {
    return table[static_cast<size_t>(op)];
  };
#define STRATA_PLAN_OP_ATTR(Op, Attr, Required, Default)                       \
  at(OpCode::Op).attrs.push_back({AttrId::Attr, Required, Default});
#include "strata-rt/PlanOps.def"
#define STRATA_PLAN_IN_PLACE(Op, Output, Input)                                \
  setInPlace(at(OpCode::Op), Output, Input);
#include "strata-rt/PlanOps.def"
#define STRATA_PLAN_INDEX_OPERAND(Op, Ids, Tensor, Output, Dim)                \
  at(OpCode::Op).indexOperand = {Ids, Tensor, Output, Dim};
#include "strata-rt/PlanOps.def"
  return table;
}

const std::array<OpInfo, kNumOpCodes> &opTable() {
  static const std::array<OpInfo, kNumOpCodes> table = buildOpTable();
  return table;
}

std::string formatValue(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

/// Stores an attribute (already checked against its kind) into the field of
/// `id`: `number` for Int, Float and Bool kinds, `list` for IntList.
void store(OpAttrs &out, AttrId id, double number,
           const std::vector<int64_t> &list) {
  switch (id) {
#define STRATA_PLAN_ATTR_SET_Int(Member)                                       \
  out.Member = static_cast<int64_t>(number);
#define STRATA_PLAN_ATTR_SET_Float(Member) out.Member = number;
#define STRATA_PLAN_ATTR_SET_Bool(Member) out.Member = number != 0;
#define STRATA_PLAN_ATTR_SET_IntList(Member) out.Member = list;
#define STRATA_PLAN_ATTR(Enum, Name, Member, Kind)                             \
  case AttrId::Enum:                                                           \
    STRATA_PLAN_ATTR_SET_##Kind(Member) break;
#include "strata-rt/PlanOps.def"
#undef STRATA_PLAN_ATTR_SET_Int
#undef STRATA_PLAN_ATTR_SET_Float
#undef STRATA_PLAN_ATTR_SET_Bool
#undef STRATA_PLAN_ATTR_SET_IntList
  }
}

/// Decodes one attribute of the op; returns an error message or "".
std::string decodeOne(const OpAttrSpec &spec, const Attrs &raw, OpAttrs &out) {
  const AttrInfo &info = attrInfo(spec.id);
  std::string quoted = std::string("attribute '") + info.name + "'";
  auto number = raw.numbers.find(info.name);
  auto list = raw.lists.find(info.name);
  bool isList = info.kind == AttrKind::IntList;
  if (number == raw.numbers.end() && list == raw.lists.end()) {
    if (spec.required)
      return "missing " + quoted;
    if (!isList)
      store(out, spec.id, spec.fallback, {});
    return "";
  }
  out.present |= uint64_t(1) << static_cast<unsigned>(spec.id);
  if (isList) {
    if (list == raw.lists.end())
      return quoted + " must be a list of integers, got a number";
    store(out, spec.id, 0, list->second);
    return "";
  }
  if (number == raw.numbers.end())
    return quoted + " must be " + attrKindName(info.kind) + ", got a list";
  double value = number->second;
  if (info.kind == AttrKind::Int && !isInt64(value))
    return quoted + " must be an integer, got " + formatValue(value);
  if (info.kind == AttrKind::Float && !std::isfinite(value))
    return quoted + " must be finite";
  store(out, spec.id, value, {});
  return "";
}

} // namespace

const char *attrKindName(AttrKind kind) {
  switch (kind) {
  case AttrKind::Int:
    return "an integer";
  case AttrKind::Float:
    return "a number";
  case AttrKind::Bool:
    return "a boolean";
  case AttrKind::IntList:
    return "a list of integers";
  }
  return "?";
}

const AttrInfo &attrInfo(AttrId id) {
  return attrTable()[static_cast<size_t>(id)];
}

const OpAttrSpec *OpInfo::attr(AttrId id) const {
  for (const OpAttrSpec &spec : attrs)
    if (spec.id == id)
      return &spec;
  return nullptr;
}

const OpInfo &opInfo(OpCode op) { return opTable()[static_cast<size_t>(op)]; }

bool lookupOpCode(const std::string &name, OpCode &op) {
  for (const OpInfo &info : opTable())
    if (name == info.name) {
      op = info.op;
      return true;
    }
  return false;
}

const char *phaseName(Phase phase) {
  switch (phase) {
  case Phase::None:
    return "";
  case Phase::Forward:
    return "forward";
  case Phase::Backward:
    return "backward";
  case Phase::Update:
    return "update";
  case Phase::Recompute:
    return "recompute";
  }
  return "";
}

bool parsePhase(const std::string &name, Phase &phase) {
  for (Phase p :
       {Phase::Forward, Phase::Backward, Phase::Update, Phase::Recompute})
    if (name == phaseName(p)) {
      phase = p;
      return true;
    }
  return false;
}

std::string decodeAttrs(OpCode op, const Attrs &raw, OpAttrs &out) {
  out = OpAttrs();
  for (const OpAttrSpec &spec : opInfo(op).attrs)
    if (std::string error = decodeOne(spec, raw, out); !error.empty())
      return error;
  return "";
}

OpAttrs decodeAttrsOrThrow(OpCode op, const Attrs &raw) {
  OpAttrs out;
  std::string error = decodeAttrs(op, raw, out);
  if (!error.empty())
    throw std::invalid_argument(std::string(opName(op)) + ": " + error);
  return out;
}

} // namespace strata::rt
