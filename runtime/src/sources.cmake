# Plan loader, initialisation, data, checkpoints, traces and the executor.
set(STRATA_RT_CORE_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/Checkpoint.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Data.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Eval.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Executor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/GradCheck.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Init.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Npz.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Lagging.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Plan.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Profile.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Safetensors.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Schedule.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Support.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Trace.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Train.cpp
  )
