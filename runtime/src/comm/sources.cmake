# Communicators: link emulation, the local engine and the MPI engine
# (Mpi.cpp is a stub unless STRATA_HAVE_MPI is defined).
set(STRATA_RT_COMM_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/Comm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Mpi.cpp
  )
