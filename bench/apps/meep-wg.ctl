; Meep (FDTD electromagnetics), the tutorial's straight dielectric waveguide in 2D: a
; 32 x 16 cell at 20 pixels per unit (640 x 320), a continuous source, PML boundaries,
; 4,000 time steps, no field output. Meep splits the cell into one chunk per rank and
; exchanges the chunks' boundary fields every step (MPI_Isend/MPI_Irecv/MPI_Waitsome).
(set! geometry-lattice (make lattice (size 32 16 no-size)))
(set! geometry (list (make block (center 0 0) (size infinity 1 infinity)
                       (material (make dielectric (epsilon 12))))))
(set! sources (list (make source (src (make continuous-src (frequency 0.15)))
                      (component Ez) (center -14 0))))
(set! pml-layers (list (make pml (thickness 1.0))))
(set! resolution 20)
(run-until 100)
