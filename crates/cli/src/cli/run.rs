//! `pmpi-predict run -- LAUNCHER ARGS...`: runs an MPI job under the layer. Finds the
//! build of the layer that matches the program's MPI (Open MPI or MPICH), passes it and
//! the output directory to every rank the way the launcher wants (`mpirun -x`, `mpiexec
//! -genv`, `srun --export`), and exits with the job's status.

use super::CliError;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Arguments of `run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Output directory of the run (default: pmpi-predict.<date>-<time> here).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Calibration profile for the predictions (PMPI_PREDICT_PROFILE).
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Penalty model overriding the profile's (PMPI_PREDICT_MODEL).
    #[arg(long)]
    pub model: Option<String>,
    /// The layer to load (default: the build beside this binary that matches the program's
    /// MPI; also PMPI_PREDICT_LIB).
    #[arg(long)]
    pub lib: Option<PathBuf>,
    /// The launcher and its arguments, e.g. `mpirun -np 4 ./a.out`.
    #[arg(last = true, required = true, num_args = 1..)]
    pub command: Vec<OsString>,
}

/// An MPI implementation family: what the layer must be built against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    OpenMpi,
    Mpich,
}

impl Family {
    fn name(self) -> &'static str {
        match self {
            Family::OpenMpi => "Open MPI",
            Family::Mpich => "MPICH",
        }
    }
}

/// How a launcher passes environment variables to the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// Open MPI's mpirun/mpiexec: `-x NAME=VALUE`.
    OpenMpi,
    /// MPICH's Hydra mpiexec: `-genv NAME VALUE`.
    Hydra,
    /// Slurm's srun: `--export=ALL,NAME=VALUE,...`.
    Srun,
}

/// The family of an MPI library from the names of the shared libraries a binary loads
/// (`ldd` output). MPICH first: its ABI-compatible builds name `libmpi.so.12`.
pub fn family_from_libs(ldd: &str) -> Option<Family> {
    if ldd.contains("libmpich") || ldd.contains("libmpi.so.12") {
        Some(Family::Mpich)
    } else if ldd.contains("libmpi.so")
        || ldd.contains("libmpi_mpifh")
        || ldd.contains("libopen-pal")
    {
        Some(Family::OpenMpi)
    } else {
        None
    }
}

/// The family a binary is linked against, from `ldd` (which lists indirect libraries too:
/// LAMMPS reaches libmpi through liblammps).
fn family_of(path: &Path) -> Option<Family> {
    let out = Command::new("ldd").arg(path).output().ok()?;
    family_from_libs(&String::from_utf8_lossy(&out.stdout))
}

/// The launcher kind and its MPI family, from its name and `--version`.
fn launcher_of(prog: &Path) -> Result<(Launcher, Option<Family>), CliError> {
    let name = prog
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name == "srun" {
        return Ok((Launcher::Srun, None));
    }
    let out = Command::new(prog)
        .arg("--version")
        .output()
        .map_err(|e| CliError::input(format!("cannot run the launcher {}: {e}", prog.display())))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if text.contains("Open MPI") || text.contains("OpenRTE") {
        Ok((Launcher::OpenMpi, Some(Family::OpenMpi)))
    } else if text.contains("HYDRA") || text.contains("MPICH") {
        Ok((Launcher::Hydra, Some(Family::Mpich)))
    } else {
        Err(CliError::input(format!(
            "{}: not a launcher this knows (Open MPI's mpirun, MPICH's mpiexec, srun)",
            prog.display()
        )))
    }
}

/// `name` as a path: itself when it has a slash, else looked up in PATH.
fn which(name: &std::ffi::OsStr) -> Option<PathBuf> {
    let p = Path::new(name);
    if p.components().count() > 1 {
        return p.is_file().then(|| p.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(p))
        .find(|c| c.is_file())
}

/// The family of the first argument that is a program linked against MPI (launcher
/// options and their values are skipped because they are not such programs).
fn program_family(args: &[OsString]) -> Option<Family> {
    args.iter()
        .filter(|a| !a.to_string_lossy().starts_with('-'))
        .filter_map(|a| which(a))
        .find_map(|p| family_of(&p))
}

/// Builds of the layer to consider, most likely first: beside this binary, the MPICH build
/// of this repository (`target/mpich/release`) or the Open MPI one seen from it, and an
/// installed `lib/pmpi-predict/{openmpi,mpich}`.
fn candidates(exe_dir: &Path) -> Vec<PathBuf> {
    let so = "libpmpi_predict.so";
    let mut v = vec![exe_dir.join(so)];
    if let Some(target) = exe_dir.parent().and_then(Path::parent) {
        v.push(target.join("mpich/release").join(so));
        v.push(target.join("release").join(so));
    }
    if let Some(prefix) = exe_dir.parent() {
        v.push(prefix.join("lib/pmpi-predict/openmpi").join(so));
        v.push(prefix.join("lib/pmpi-predict/mpich").join(so));
    }
    v
}

/// The layer for `family`.
fn find_layer(family: Family) -> Result<PathBuf, CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::internal(format!("cannot find this binary: {e}")))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let tried = candidates(dir);
    for c in &tried {
        if c.is_file() && family_of(c) == Some(family) {
            return Ok(c.clone());
        }
    }
    let build = match family {
        Family::OpenMpi => "cargo build --release",
        Family::Mpich => "MPICC=mpicc.mpich CARGO_TARGET_DIR=target/mpich cargo build --release",
    };
    Err(CliError::input(format!(
        "no build of the layer for {} (looked at {}); build one with `{build}` or pass --lib",
        family.name(),
        tried
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// The launcher's command line with `vars` passed to every rank.
pub fn launch_args(kind: Launcher, vars: &[(String, String)], rest: &[OsString]) -> Vec<OsString> {
    let mut v: Vec<OsString> = Vec::new();
    match kind {
        Launcher::OpenMpi => {
            for (k, x) in vars {
                v.push("-x".into());
                v.push(format!("{k}={x}").into());
            }
        }
        Launcher::Hydra => {
            for (k, x) in vars {
                v.extend(["-genv".into(), k.into(), x.into()]);
            }
        }
        Launcher::Srun => {
            let list: Vec<String> = vars.iter().map(|(k, x)| format!("{k}={x}")).collect();
            v.push(format!("--export=ALL,{}", list.join(",")).into());
        }
    }
    v.extend(rest.iter().cloned());
    v
}

/// `pmpi-predict.YYYYmmdd-HHMMSS` (local time) for now, as the layer names its default.
fn default_out() -> PathBuf {
    PathBuf::from(format!(
        "pmpi-predict.{}",
        crate::topo::clock::local_stamp()
    ))
}

/// Runs `run`: the job's exit status (128 + signal when a signal ended the launcher).
pub fn run(a: RunArgs) -> i32 {
    match run_job(&a) {
        Ok(code) => code,
        Err(e) => e.report(),
    }
}

fn run_job(a: &RunArgs) -> Result<i32, CliError> {
    let (prog, rest) = a
        .command
        .split_first()
        .ok_or_else(|| CliError::input("run: give the launcher and its arguments after --"))?;
    let prog_path =
        which(prog).ok_or_else(|| CliError::input(format!("launcher {:?} not found", prog)))?;
    let (kind, launcher_family) = launcher_of(&prog_path)?;
    let family = program_family(rest).or(launcher_family);
    let lib = match a
        .lib
        .clone()
        .or_else(|| std::env::var_os("PMPI_PREDICT_LIB").map(PathBuf::from))
    {
        Some(l) if l.is_file() => l,
        Some(l) => return Err(CliError::input(format!("layer {} not found", l.display()))),
        None => find_layer(family.ok_or_else(|| {
            CliError::input("cannot tell which MPI the program uses; pass --lib")
        })?)?,
    };
    let lib = std::fs::canonicalize(&lib).unwrap_or(lib);
    let out = a.out.clone().unwrap_or_else(default_out);
    std::fs::create_dir_all(&out)
        .map_err(|e| CliError::io(format!("cannot create {}: {e}", out.display())))?;
    let out = std::fs::canonicalize(&out).unwrap_or(out);
    let mut vars = vec![
        ("LD_PRELOAD".to_string(), lib.display().to_string()),
        ("PMPI_PREDICT_OUT".to_string(), out.display().to_string()),
    ];
    if let Some(p) = &a.profile {
        let p = std::fs::canonicalize(p)
            .map_err(|e| CliError::input(format!("profile {}: {e}", p.display())))?;
        vars.push(("PMPI_PREDICT_PROFILE".into(), p.display().to_string()));
    }
    if let Some(m) = &a.model {
        vars.push(("PMPI_PREDICT_MODEL".into(), m.clone()));
    }
    eprintln!(
        "pmpi-predict: running under {} with {} (output: {})",
        prog.to_string_lossy(),
        lib.display(),
        out.display()
    );
    let status = Command::new(&prog_path)
        .args(launch_args(kind, &vars, rest))
        .status()
        .map_err(|e| CliError::input(format!("cannot run {}: {e}", prog_path.display())))?;
    let code = match status.code() {
        Some(c) => c,
        None => {
            use std::os::unix::process::ExitStatusExt;
            128 + status.signal().unwrap_or(0)
        }
    };
    let recorded = std::fs::read_dir(&out).is_ok_and(|d| {
        d.filter_map(|e| e.ok())
            .any(|e| crate::trace::is_rank_file(&e.file_name().to_string_lossy()))
    });
    if out.join("summary.json").is_file() {
        eprintln!("pmpi-predict: report in {}", out.display());
    } else if !recorded {
        // Nothing to analyze either: say what the likely causes are.
        eprintln!(
            "pmpi-predict: no rank recorded anything in {}: the program never called MPI_Init under \
             the layer (is it an MPI program? `ldd` on it should list a libmpi), or the launcher \
             did not pass LD_PRELOAD to the ranks",
            out.display()
        );
    } else {
        eprintln!(
            "pmpi-predict: no report in {} (the job ended before MPI_Finalize, or no rank loaded the layer); \
             `pmpi-predict analyze {}` builds it from the spools there",
            out.display(),
            out.display()
        );
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_from_library_names() {
        assert_eq!(
            family_from_libs("\tlibmpi.so.40 => /lib/x86_64-linux-gnu/libmpi.so.40 (0x7f)"),
            Some(Family::OpenMpi)
        );
        assert_eq!(
            family_from_libs("\tlibmpich.so.12 => /lib/x86_64-linux-gnu/libmpich.so.12"),
            Some(Family::Mpich)
        );
        assert_eq!(family_from_libs("\tlibc.so.6 => /lib/libc.so.6"), None);
    }

    #[test]
    fn each_launcher_gets_its_own_syntax() {
        let vars = vec![
            ("LD_PRELOAD".to_string(), "/l.so".to_string()),
            ("PMPI_PREDICT_OUT".to_string(), "/o".to_string()),
        ];
        let rest: Vec<OsString> = vec!["-np".into(), "2".into(), "./a".into()];
        let s = |v: Vec<OsString>| {
            v.iter()
                .map(|x| x.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            s(launch_args(Launcher::OpenMpi, &vars, &rest)),
            [
                "-x",
                "LD_PRELOAD=/l.so",
                "-x",
                "PMPI_PREDICT_OUT=/o",
                "-np",
                "2",
                "./a"
            ]
        );
        assert_eq!(
            s(launch_args(Launcher::Hydra, &vars, &rest)),
            [
                "-genv",
                "LD_PRELOAD",
                "/l.so",
                "-genv",
                "PMPI_PREDICT_OUT",
                "/o",
                "-np",
                "2",
                "./a"
            ]
        );
        assert_eq!(
            s(launch_args(Launcher::Srun, &vars, &rest)),
            [
                "--export=ALL,LD_PRELOAD=/l.so,PMPI_PREDICT_OUT=/o",
                "-np",
                "2",
                "./a"
            ]
        );
    }

    #[test]
    fn default_output_is_dated() {
        let n = default_out().display().to_string();
        assert!(
            n.starts_with("pmpi-predict.20") && n.len() == "pmpi-predict.20261123-140000".len(),
            "{n}"
        );
    }
}
