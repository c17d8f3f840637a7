# GPAW: 8-atom cubic silicon cell, plane waves (300 eV), 2x2x2 k-points, the ranks
# splitting the plane-wave grid (domain), so that every FFT and projection communicates.
from ase.build import bulk
from gpaw import GPAW, PW
from gpaw.mpi import world
si = bulk('Si', 'diamond', a=5.43, cubic=True)
si.calc = GPAW(mode=PW(300), kpts=(2, 2, 2), txt='gpaw-si8.txt',
               parallel={'kpt': 1, 'domain': world.size},
               convergence={'energy': 1e-3})
e = si.get_potential_energy()
if world.rank == 0:
    print('energy %.6f eV' % e)
