# GEMM tiling search: the state space, G-BFS / N-A2C / random / exhaustive
# search, measured and analytic costs (Tune.h).
set(STRATA_RT_TUNE_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/Cost.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CostTable.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Search.cpp
  ${CMAKE_CURRENT_LIST_DIR}/TileSpace.cpp
  )
