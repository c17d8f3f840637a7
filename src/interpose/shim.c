/* MPI constants that are macros in mpi.h and that mpi-sys does not export. */
#include <mpi.h>

void *const pmpi_predict_IN_PLACE = MPI_IN_PLACE;
void *const pmpi_predict_BOTTOM = MPI_BOTTOM;
const int pmpi_predict_MAX_LIBRARY_VERSION_STRING = MPI_MAX_LIBRARY_VERSION_STRING;
const MPI_Datatype pmpi_predict_BYTE = MPI_BYTE;
const MPI_Datatype pmpi_predict_DATATYPE_NULL = MPI_DATATYPE_NULL;
const int pmpi_predict_ERR_INTERN = MPI_ERR_INTERN;
const int pmpi_predict_CART = MPI_CART;
const int pmpi_predict_GRAPH = MPI_GRAPH;
const int pmpi_predict_DIST_GRAPH = MPI_DIST_GRAPH;
