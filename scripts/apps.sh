# Real applications on the emulated cluster: the definitions that scripts/bench-apps and
# scripts/bench-whatif share (Debian packages, inputs, command line, a run's working
# directory). Sourced, not run; the caller is at the repository's root. The applications
# and their inputs are described in scripts/bench-apps's header.

# Where two applications' inputs are installed.
APPS_FOAM_CASE=/usr/share/doc/openfoam-examples/examples/incompressible/simpleFoam/pitzDaily
APPS_SCALAPACK_DIR=/usr/lib/x86_64-linux-gnu/scalapack
APPS_LIGGGHTS_CASE=/usr/share/doc/liggghts/examples/LIGGGHTS/Tutorials_public/chute_wear

# apps_install LIST: installs the Debian packages that the comma-separated applications
# of LIST need and this machine lacks (as root).
apps_install() {
    local a=,$1, need=()
    [[ $a == *,lammps,* ]] && ! command -v lmp >/dev/null && need+=(lammps)
    # The input is in lammps-examples, only a recommendation of lammps.
    [[ $a == *,lammps,* && ! -f /usr/share/lammps/examples/melt/in.melt ]] && need+=(lammps-examples)
    [[ $a == *,cp2k,* ]] && ! command -v cp2k.popt >/dev/null && need+=(cp2k)
    [[ $a == *,qe,* ]] && ! command -v pw.x >/dev/null && need+=(quantum-espresso)
    [[ $a == *,qe,* && ! -f /usr/share/espresso/pseudo/Si.pz-vbc.UPF ]] && need+=(quantum-espresso-data)
    [[ $a == *,nwchem,* ]] && ! command -v nwchem.openmpi >/dev/null && need+=(nwchem-openmpi)
    [[ $a == *,gromacs,* ]] && ! command -v gmx_mpi >/dev/null && need+=(gromacs)
    [[ $a == *,mpqc,* ]] && ! command -v mpqc >/dev/null && need+=(mpqc)
    [[ $a == *,elk,* ]] && ! command -v elk-lapw >/dev/null && need+=(elk-lapw)
    [[ $a == *,abinit,* ]] && ! command -v abinit >/dev/null && need+=(abinit)
    [[ $a == *,abinit,* && ! -d /usr/share/abinit/psp/Pseudodojo_nc_sr_04_pw_standard_psp8 ]] && need+=(abinit-data)
    [[ $a == *,abyss,* || $a == *,ray,* ]] && [[ ! -x /usr/lib/abyss/ABYSS-P ]] && need+=(abyss)
    [[ $a == *,ray,* ]] && ! command -v Ray >/dev/null && need+=(ray)
    [[ $a == *,openfoam,* ]] && ! command -v simpleFoam >/dev/null && need+=(openfoam)
    [[ $a == *,openfoam,* && ! -d $APPS_FOAM_CASE ]] && need+=(openfoam-examples)
    [[ $a == *,dolfinx* ]] && ! command -v dolfinx-scaling-test >/dev/null && need+=(fenicsx-performance-tests)
    [[ $a == *,examl,* ]] && ! command -v parse-examl >/dev/null && need+=(examl)
    [[ $a == *,scalapack* && ! -x $APPS_SCALAPACK_DIR/openmpi-tests/xdlu ]] && need+=(scalapack-mpi-test)
    [[ $a == *,meep,* ]] && ! command -v meep >/dev/null && need+=(meep-openmpi)
    [[ $a == *,liggghts,* ]] && ! command -v liggghts >/dev/null && need+=(liggghts)
    # The chute's meshes are in liggghts-doc, only a suggestion of liggghts.
    [[ $a == *,liggghts,* && ! -d $APPS_LIGGGHTS_CASE/meshes ]] && need+=(liggghts-doc)
    [[ $a == *,mpb,* ]] && ! command -v mpb-mpi >/dev/null && need+=(mpb-mpi)
    # GPAW's PAW setups are in gpaw-data, a dependency.
    [[ $a == *,gpaw,* ]] && ! command -v gpaw >/dev/null && need+=(gpaw)
    [[ $a == *,neuron,* ]] && ! command -v nrniv >/dev/null && need+=(neuron)
    [[ $a == *,hyphy,* && ! -x /usr/lib/hyphy/bin/HYPHYMPI ]] && need+=(hyphy-mpi)
    [[ $a == *,paraview,* ]] && ! command -v pvbatch >/dev/null && need+=(paraview)
    if [[ ${#need[@]} -gt 0 ]]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    fi
}

# apps_inputs OUT LIST REPORT_ONLY WHO: the inputs every run copies, in OUT/inputs (the
# GROMACS input is built only for a recording, REPORT_ONLY 0). WHO names the caller in
# messages. Fails where an application of LIST has no input.
apps_inputs() {
    local out=$1 a=,$2, report_only=$3 who=$4
    mkdir -p "$out/inputs"
    sed -e 's/block 0 10 0 10 0 10/block 0 20 0 20 0 20/' -e 's/^run\t\t250/run 500/' \
        /usr/share/lammps/examples/melt/in.melt >"$out/inputs/in.melt" 2>/dev/null || true
    if [[ $report_only -eq 0 && $a == *,lammps,* && ! -s $out/inputs/in.melt ]]; then
        echo "$who: no LAMMPS input (/usr/share/lammps/examples/melt/in.melt, package lammps-examples)" >&2
        return 1
    fi
    cp /usr/share/doc/hpcc/examples/_hpccinf.txt "$out/inputs/hpccinf.txt" 2>/dev/null || true
    cp bench/apps/h2o8.inp bench/apps/si8.in bench/apps/c6h6.nw bench/apps/si8kgb.abi bench/apps/ksh2o.in \
        bench/apps/meep-wg.ctl bench/apps/liggghts-chute.in bench/apps/mpb-diamond.ctl bench/apps/gpaw-si8.py bench/apps/neuron-net.hoc bench/apps/paraview-pipeline.py "$out/inputs/"
    # Elk reads elk.in from its working directory.
    cp bench/apps/elk-al.in "$out/inputs/elk.in"
    if [[ $report_only -eq 0 && $a == *,gromacs,* ]]; then
        mkdir -p "$out/inputs-gromacs"
        bench/apps/gromacs/make-tpr "$out/inputs-gromacs" \
            || { echo "$who: building the GROMACS input failed (see $out/inputs-gromacs/*.log)" >&2; return 1; }
        cp "$out/inputs-gromacs/water.tpr" "$out/inputs/"
    fi
}

# app_cmd APP OUT: sets the array `cmd` to APP's command line after the launcher's own
# options (some begin with mpirun options); fails for an unknown APP.
app_cmd() {
    local out=$2
    case $1 in
        hpcc) cmd=(/usr/bin/hpcc) ;;
        lammps) cmd=(lmp -in "$out/inputs/in.melt" -log none) ;;
        cp2k) cmd=(cp2k.popt -i h2o8.inp -o h2o8.out) ;;
        qe) cmd=(pw.x -in si8.in) ;;
        nwchem) cmd=(--mca osc pt2pt nwchem.openmpi c6h6.nw) ;;
        gromacs) cmd=(gmx_mpi -quiet mdrun -s water.tpr -ntomp 1 -notunepme -deffnm md) ;;
        mpqc) cmd=(mpqc -messagegrp "<MPIMessageGrp>:()" ksh2o.in) ;;
        elk) cmd=(elk-lapw) ;;
        abinit) cmd=(-x ABI_PSPDIR=/usr/share/abinit/psp abinit si8kgb.abi) ;;
        # ABYSS-P can deadlock (both ranks in a blocking MPI_Send to the other, 2 of
        # 10 runs on one node, without the layer): mpirun ends it after 10 minutes.
        abyss) cmd=(--timeout 600 /usr/lib/abyss/ABYSS-P -k25 -o contigs.fa reads1.fastq reads2.fastq) ;;
        ray) cmd=(--timeout 600 Ray -k 25 -p reads1.fastq reads2.fastq -o ray-out) ;;
        # Debian's OpenFOAM finds its etc/ through WM_PROJECT_DIR.
        openfoam) cmd=(-x WM_PROJECT_DIR=/usr/share/openfoam simpleFoam -parallel) ;;
        dolfinx) cmd=(--timeout 300 dolfinx-scaling-test --problem_type poisson --scaling_type strong --ndofs 200000) ;;
        dolfinx-el) cmd=(--timeout 300 dolfinx-scaling-test --problem_type elasticity --scaling_type strong --ndofs 300000) ;;
        # /usr/bin/examl picks the build for the CPU and runs mpirun itself: the build
        # is picked here instead.
        examl)
            local examl=/usr/lib/examl/bin/examl-sse2 simd
            for simd in avx2 avx sse4_1 ssse3; do
                if grep -qw "$simd" /proc/cpuinfo && [[ -x /usr/lib/examl/bin/examl-${simd/_/.} ]]; then
                    examl=/usr/lib/examl/bin/examl-${simd/_/.}; break
                fi
            done
            cmd=(--timeout 600 "$examl" -t 49.tree -m GAMMA -s 49.binary -n run) ;;
        meep) cmd=(meep meep-wg.ctl) ;;
        liggghts) cmd=(liggghts -in liggghts-chute.in) ;;
        mpb) cmd=(mpb-mpi mpb-diamond.ctl) ;;
        gpaw) cmd=(gpaw python gpaw-si8.py) ;;
        neuron) cmd=(nrniv -mpi -nobanner neuron-net.hoc) ;;
        # The binary itself: the HYPHYMPI wrapper passes its arguments on as one.
        hyphy) cmd=(/usr/lib/hyphy/bin/HYPHYMPI LIBPATH=/usr/share/hyphy fel
                    --alignment /usr/share/hyphy/TemplateBatchFiles/Miscellaneous/phylohandbook/datasets/H5N1_HA_5.nex
                    --output fel.json) ;;
        paraview) cmd=(pvbatch paraview-pipeline.py) ;;
        scalapack) cmd=("$APPS_SCALAPACK_DIR/openmpi-tests/xdlu") ;;
        scalapack-mpich) cmd=("$APPS_SCALAPACK_DIR/mpich-tests/xdlu") ;;
        *) return 1 ;;
    esac
}

# app_workdir APP NP DIR WHO: readies DIR, which holds a copy of the inputs, for a run of
# APP at NP ranks (a process grid, a decomposed case, unpacked reads).
app_workdir() {
    local app=$1 np=$2 dir=$3 who=$4 grid grids split sizes f
    case $app in
        abinit)
            # ABINIT's band-FFT grid must have as many processes as the run.
            case $np in
                2) grid=(2 1) ;;
                4) grid=(2 2) ;;
                *) grid=(4 2) ;;
            esac
            sed -i -e "s/^npband .*/npband ${grid[0]}/" -e "s/^npfft .*/npfft ${grid[1]}/" "$dir/si8kgb.abi" ;;
        abyss|ray)
            for f in reads1 reads2; do
                gzip -dc "/usr/share/doc/abyss/test-data/$f.fastq.gz" >"$dir/$f.fastq"
            done ;;
        liggghts)
            mkdir -p "$dir/post" && cp -r "$APPS_LIGGGHTS_CASE/meshes" "$dir/" \
                || echo "$who: copying LIGGGHTS's chute meshes into $dir failed" >&2 ;;
        examl)
            # The package's test alignment, in ExaML's binary form (a serial tool).
            (cd "$dir" && gzip -dc /usr/share/doc/examl/testData/49.gz >49.phy \
                && cp /usr/share/doc/examl/testData/49.tree . \
                && parse-examl -s 49.phy -m DNA -n 49 >parse.log 2>&1) \
                || echo "$who: preparing ExaML's input in $dir failed (see $dir/parse.log)" >&2 ;;
        openfoam)
            # The case, meshed and decomposed into np parts along x and y (not recorded:
            # serial tools, no MPI).
            cp -r "$APPS_FOAM_CASE"/. "$dir/"
            case $np in
                2) split="2 1 1" ;;
                4) split="2 2 1" ;;
                *) split="4 2 1" ;;
            esac
            printf 'FoamFile { version 2.0; format ascii; class dictionary; object decomposeParDict; }\nnumberOfSubdomains %s;\nmethod simple;\ncoeffs { n (%s); }\n' \
                "$np" "$split" >"$dir/system/decomposeParDict"
            (cd "$dir" && export WM_PROJECT_DIR=/usr/share/openfoam \
                && blockMesh >log.blockMesh 2>&1 && decomposePar >log.decomposePar 2>&1) \
                || echo "$who: preparing the OpenFOAM case in $dir failed (see $dir/log.*)" >&2 ;;
        scalapack*)
            case $np in
                2) grids=("1 2" "2 1") ;;
                4) grids=("2 2" "1 4") ;;
                *) grids=("2 4" "4 2") ;;
            esac
            sizes="800 820 840 860 880 780 760 740"
            printf "'ScaLAPACK LU, pmpi-predict battery'\n'MPI Machine'\n'LU.out'\n6\n8\n%s\n%s\n3\n32 64 16\n1\n1\n1\n1\n2\n%s %s\n%s %s\n1.0\nF\n" \
                "$sizes" "$sizes" "${grids[0]% *}" "${grids[1]% *}" "${grids[0]#* }" "${grids[1]#* }" \
                >"$dir/LU.dat" ;;
    esac
    return 0
}

# apps_calibrate_placed BIN INTO FROM LOG WHO: calibrates at 8 ranks two a host (the
# emulated cluster is up) into FROM, its output in LOG, and merges what that launch
# measures into the profile INTO (apps_placed_into). Fails with a message naming LOG.
apps_calibrate_placed() {
    local bin=$1 into=$2 from=$3 log=$4 who=$5
    scripts/emucluster run -- -np 8 --map-by node "$bin" calibrate --budget 150 -o "$from" >"$log" 2>&1 \
        || { echo "$who: calibrate at 8 ranks failed (see $log)" >&2; return 1; }
    apps_placed_into "$into" "$from"
}

# apps_placed_into INTO FROM: profile INTO takes the all-to-all as launched of profile FROM,
# and its path between two ranks of one host.
apps_placed_into() {
    python3 - "$1" "$2" <<'PY'
import json, sys
into, src = sys.argv[1], sys.argv[2]
p = json.load(open(into))
q = json.load(open(src))
p["alltoall_placed"] = q.get("alltoall_placed", [])
# The latency as launched at both sizes: the 4-rank calibration's and the 8-rank one's.
p["latency_placed"] = p.get("latency_placed", []) + q.get("latency_placed", [])
# The 4-rank calibration has no two ranks on a host, so no intra-node path: the 8-rank
# one's (ping-pong and eager limit). The emulated cluster runs Open MPI with
# `--mca btl tcp,self`, so two ranks of a host talk TCP over loopback (eager to 64 KiB),
# not shared memory (the library default of 4 KiB the engine would otherwise take).
p["hockney"]["intra"] = q["hockney"]["intra"]
if (q.get("eager") or {}).get("intra") is not None:
    p.setdefault("eager", {"source": q["eager"].get("source", "measured")})["intra"] = q["eager"]["intra"]
json.dump(p, open(into, "w"), indent=2)
PY
}
