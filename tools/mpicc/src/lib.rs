//! The compiler wrappers `mpicc` and `mpicxx`: they run the C (C++)
//! compiler with the include directory of `mpi.h` and, when the command
//! links, libmpi's directory (also as a run path) and `-lmpi`.
//!
//! The compiler is `$OXMPI_CC` (`$OXMPI_CXX`), else `cc` (`c++`). Open
//! MPI's `-showme`, `-showme:compile`, `-showme:link`, `-showme:incdirs`,
//! `-showme:libdirs`, `-showme:version` (also with two dashes) and
//! MPICH's `-show`, `-compile_info`, `-link_info` print instead of
//! running. `-showme:pkgconfig` writes the install's pkg-config files
//! ([`pkgconfig`]) and prints their directory.

pub mod pkgconfig;

use oxmpi_mca::paths::{InstallPaths, Layout};
use std::ffi::OsString;
use std::path::PathBuf;

/// Which language a wrapper compiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// `mpicc`.
    C,
    /// `mpicxx`.
    Cxx,
}

impl Language {
    /// The wrapper's name.
    pub fn wrapper(self) -> &'static str {
        match self {
            Language::C => "mpicc",
            Language::Cxx => "mpicxx",
        }
    }

    /// The variable naming the compiler, and the default compiler.
    pub fn compiler_var(self) -> (&'static str, &'static str) {
        match self {
            Language::C => ("OXMPI_CC", "cc"),
            Language::Cxx => ("OXMPI_CXX", "c++"),
        }
    }
}

/// Where `mpi.h` and libmpi are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dirs {
    /// The directory of `mpi.h`.
    pub include: PathBuf,
    /// The directory of `libmpi.so`.
    pub lib: PathBuf,
}

impl Dirs {
    /// The directories of the install `paths`: a dev tree's `capi/include`
    /// and cargo output directory, else `<prefix>/include` and
    /// `<prefix>/lib`.
    pub fn of(paths: &InstallPaths) -> Dirs {
        match paths.layout {
            Layout::DevTree => Dirs {
                include: paths.prefix.join("capi").join("include"),
                lib: paths.bindir.clone(),
            },
            _ => Dirs {
                include: paths.prefix.join("include"),
                lib: paths.prefix.join("lib"),
            },
        }
    }
}

/// What the arguments ask the wrapper to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Run this command.
    Run(Vec<OsString>),
    /// Print this line.
    Print(String),
    /// Write the pkg-config files into this directory, then print it.
    PkgConfig(PathBuf),
}

/// Whether the arguments stop before linking (`-c`, `-E`, `-S`, `-M`,
/// `-MM`).
fn compiles_only(args: &[OsString]) -> bool {
    args.iter()
        .any(|a| matches!(a.to_str(), Some("-c" | "-E" | "-S" | "-M" | "-MM")))
}

/// The plan for `args` with `compiler` in `dirs`.
pub fn plan(lang: Language, compiler: &str, dirs: &Dirs, args: &[OsString]) -> Plan {
    let inc = format!("-I{}", dirs.include.display());
    let link = vec![
        format!("-L{}", dirs.lib.display()),
        format!("-Wl,-rpath,{}", dirs.lib.display()),
        "-lmpi".to_string(),
    ];
    let line = |parts: Vec<String>| parts.join(" ");
    // Open MPI's wrappers take `--showme…` as well as `-showme…` (Meson
    // asks with two dashes).
    if let Some(first) = args.first().and_then(|a| a.to_str()).map(|a| {
        a.strip_prefix('-')
            .filter(|a| a.starts_with("-showme"))
            .unwrap_or(a)
    }) {
        let rest: Vec<String> = args[1..]
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let mut all = vec![compiler.to_string(), inc.clone()];
        all.extend(rest.iter().cloned());
        if !compiles_only(&args[1..]) {
            all.extend(link.iter().cloned());
        }
        match first {
            "-showme" | "-show" => return Plan::Print(line(all)),
            "-showme:compile" | "-compile_info" => {
                let mut v = vec![inc];
                if first == "-compile_info" {
                    v.insert(0, compiler.to_string());
                }
                return Plan::Print(line(v));
            }
            "-showme:link" | "-link_info" => {
                let mut v = link;
                if first == "-link_info" {
                    v.insert(0, compiler.to_string());
                }
                return Plan::Print(line(v));
            }
            "-showme:incdirs" => return Plan::Print(dirs.include.display().to_string()),
            "-showme:libdirs" => return Plan::Print(dirs.lib.display().to_string()),
            "-showme:libs" => return Plan::Print("mpi".into()),
            "-showme:pkgconfig" => return Plan::PkgConfig(pkgconfig::dir(dirs)),
            "-showme:version" => {
                return Plan::Print(format!(
                    "{}: oxmpi {} (MPI 3.1), compiler {compiler}",
                    lang.wrapper(),
                    env!("CARGO_PKG_VERSION")
                ))
            }
            _ => {}
        }
    }
    let mut cmd: Vec<OsString> = vec![compiler.into(), inc.into()];
    cmd.extend(args.iter().cloned());
    if !compiles_only(args) {
        cmd.extend(link.into_iter().map(OsString::from));
    }
    Plan::Run(cmd)
}

/// Runs the wrapper for `lang` with the process's arguments and answers
/// its exit code.
pub fn main(lang: Language) -> i32 {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let exe = std::env::current_exe().ok();
    let prefix = std::env::var("OXMPI_PREFIX").ok();
    let dirs = Dirs::of(&InstallPaths::detect(exe.as_deref(), prefix.as_deref()));
    let (var, default) = lang.compiler_var();
    let compiler = std::env::var(var)
        .ok()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| default.to_string());
    if args.is_empty() {
        eprintln!(
            "{}: no input files; give the compiler's arguments (e.g. {} -o app app.c), or -showme",
            lang.wrapper(),
            lang.wrapper()
        );
        return 1;
    }
    match plan(lang, &compiler, &dirs, &args) {
        Plan::Print(line) => {
            println!("{line}");
            0
        }
        Plan::PkgConfig(to) => match pkgconfig::write(&to, &dirs, env!("CARGO_PKG_VERSION")) {
            Ok(()) => {
                println!("{}", to.display());
                0
            }
            Err(e) => {
                eprintln!(
                    "{}: cannot write the pkg-config files of this install ({e}); run {} \
                     -showme:pkgconfig once as a user who may write to {}",
                    lang.wrapper(),
                    lang.wrapper(),
                    to.display()
                );
                1
            }
        },
        Plan::Run(cmd) => match std::process::Command::new(&cmd[0]).args(&cmd[1..]).status() {
            Ok(status) => status.code().unwrap_or(1),
            Err(e) => {
                eprintln!(
                    "{}: cannot run the compiler '{compiler}': {e}; install it, or name another with {var}",
                    lang.wrapper()
                );
                1
            }
        },
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Install directories under `/p`, for the tests of this crate.
    pub(crate) fn dirs() -> Dirs {
        Dirs {
            include: "/p/include".into(),
            lib: "/p/lib".into(),
        }
    }

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn a_link_adds_the_library_and_a_compile_only_does_not() {
        let Plan::Run(cmd) = plan(Language::C, "gcc", &dirs(), &args(&["-o", "app", "app.c"]))
        else {
            panic!("runs")
        };
        assert_eq!(
            cmd,
            args(&[
                "gcc",
                "-I/p/include",
                "-o",
                "app",
                "app.c",
                "-L/p/lib",
                "-Wl,-rpath,/p/lib",
                "-lmpi"
            ])
        );
        let Plan::Run(cmd) = plan(Language::C, "gcc", &dirs(), &args(&["-c", "app.c"])) else {
            panic!("runs")
        };
        assert_eq!(cmd, args(&["gcc", "-I/p/include", "-c", "app.c"]));
    }

    #[test]
    fn showme_forms_print_what_they_name() {
        let p = |a: &[&str]| plan(Language::Cxx, "g++", &dirs(), &args(a));
        assert_eq!(
            p(&["-showme", "x.cc"]),
            Plan::Print("g++ -I/p/include x.cc -L/p/lib -Wl,-rpath,/p/lib -lmpi".into())
        );
        assert_eq!(
            p(&["-show", "-c", "x.cc"]),
            Plan::Print("g++ -I/p/include -c x.cc".into())
        );
        assert_eq!(p(&["-showme:compile"]), Plan::Print("-I/p/include".into()));
        assert_eq!(
            p(&["-showme:link"]),
            Plan::Print("-L/p/lib -Wl,-rpath,/p/lib -lmpi".into())
        );
        assert_eq!(
            p(&["-compile_info"]),
            Plan::Print("g++ -I/p/include".into())
        );
        assert_eq!(
            p(&["-link_info"]),
            Plan::Print("g++ -L/p/lib -Wl,-rpath,/p/lib -lmpi".into())
        );
        assert_eq!(p(&["-showme:incdirs"]), Plan::Print("/p/include".into()));
        assert_eq!(p(&["-showme:libdirs"]), Plan::Print("/p/lib".into()));
        assert_eq!(p(&["--showme:libdirs"]), Plan::Print("/p/lib".into()));
        assert_eq!(
            p(&["--showme:link"]),
            Plan::Print("-L/p/lib -Wl,-rpath,/p/lib -lmpi".into())
        );
        assert_eq!(
            p(&["-showme:pkgconfig"]),
            Plan::PkgConfig("/p/lib/pkgconfig".into())
        );
        let Plan::Print(v) = p(&["-showme:version"]) else {
            panic!("prints")
        };
        assert!(
            v.starts_with("mpicxx: oxmpi ") && v.ends_with("compiler g++"),
            "{v}"
        );
    }

    #[test]
    fn a_dev_tree_uses_the_checkout_and_the_cargo_directory() {
        let paths = InstallPaths {
            layout: Layout::DevTree,
            prefix: "/src/ox".into(),
            bindir: "/src/ox/target/debug".into(),
            sysconfdir: "/src/ox/etc".into(),
            component_dir: "/src/ox/target/debug".into(),
        };
        assert_eq!(
            Dirs::of(&paths),
            Dirs {
                include: "/src/ox/capi/include".into(),
                lib: "/src/ox/target/debug".into()
            }
        );
        let installed = InstallPaths {
            layout: Layout::Installed,
            prefix: "/opt/ox".into(),
            ..paths
        };
        assert_eq!(
            Dirs::of(&installed),
            Dirs {
                include: "/opt/ox/include".into(),
                lib: "/opt/ox/lib".into()
            }
        );
    }
}
