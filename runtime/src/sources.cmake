# Plan loader, initialisation, data, checkpoints, traces and the executor.
set(STRATA_RT_CORE_SOURCES
  )
