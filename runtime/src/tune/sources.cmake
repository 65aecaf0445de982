# strata_tune, the GEMM tiling search of strata-tune (strata-tune/Tune.h): the
# state space, G-BFS / N-A2C / random / exhaustive search, measured and
# analytic costs. Not part of strata_runtime.
set(STRATA_TUNE_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/Cost.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CostTable.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Search.cpp
  ${CMAKE_CURRENT_LIST_DIR}/TileSpace.cpp
  )
