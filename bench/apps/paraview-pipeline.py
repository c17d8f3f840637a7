# A ParaView batch pipeline for scripts/bench-apps (run as `pvbatch paraview-pipeline.py`
# under mpirun, no display needed): a 161^3 wavelet cut into pieces, one a rank, contoured
# at three values, the triangles redistributed across the ranks by a kd-tree
# (vtkRedistributeDataSetFilter: DIY's MPI_Isend/MPI_Iprobe/MPI_Recv exchange of KB to
# MB pieces), ghost cells exchanged, normals generated and the surface integrated (a
# reduction to rank 0), six times over a changing field. Rank 0 drives the pipeline and
# broadcasts every proxy command to the others (MPI_Bcast, MPI_Barrier by the hundred).
from paraview.simple import (Contour, ExtractSurface, GenerateSurfaceNormals,
                             GhostCellsGenerator, IntegrateVariables,
                             RedistributeDataSet, Wavelet)
from paraview import servermanager as sm

w = Wavelet(WholeExtent=[-80, 80, -80, 80, -80, 80])
c = Contour(Input=w, ContourBy=['POINTS', 'RTData'], Isosurfaces=[100, 150, 200])
r = RedistributeDataSet(Input=c)
g = GhostCellsGenerator(Input=r)
n = GenerateSurfaceNormals(Input=ExtractSurface(Input=g))
iv = IntegrateVariables(Input=n)
for i in range(6):
    w.Maximum = 255 + 10 * i
    iv.UpdatePipeline()
d = sm.Fetch(iv)
# The same area with and without the layer, whatever the number of ranks.
print("area %.6f" % d.GetCellData().GetArray('Area').GetValue(0), flush=True)
