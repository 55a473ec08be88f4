//! pkg-config files for libmpi: `oxmpi.pc`, and the names Open MPI ships
//! for its C and C++ bindings (`ompi.pc`, `ompi-c.pc`, `ompi-cxx.pc`),
//! which Meson's MPI dependency looks for. Each gives the flags the
//! wrappers give: `-I` for `mpi.h`; `-L`, a run path and `-lmpi`.
//!
//! They are written for one install (its [`Dirs`]) into
//! `<libdir>/pkgconfig` by `mpicc -showme:pkgconfig`, which prints that
//! directory (for `PKG_CONFIG_PATH`).

use crate::Dirs;
use std::io;
use std::path::{Path, PathBuf};

/// The names of the files, without `.pc`, and what each stands for.
pub const NAMES: &[(&str, &str)] = &[
    ("oxmpi", "oxmpi"),
    ("ompi", "oxmpi, under Open MPI's name"),
    ("ompi-c", "oxmpi's C bindings, under Open MPI's name"),
    (
        "ompi-cxx",
        "oxmpi's C bindings for C++, under Open MPI's name",
    ),
];

/// The directory the files of an install go in: `<libdir>/pkgconfig`.
pub fn dir(dirs: &Dirs) -> PathBuf {
    dirs.lib.join("pkgconfig")
}

/// A path as a pkg-config value: blanks, `#`, `$` and backslashes escaped
/// (pkg-config splits flags at blanks and reads `${…}` as variables).
fn escape(p: &Path) -> String {
    let mut out = String::new();
    for c in p.display().to_string().chars() {
        match c {
            ' ' | '\t' | '#' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '$' => out.push_str("$$"),
            _ => out.push(c),
        }
    }
    out
}

/// The text of the file `name` (one of [`NAMES`]) for `dirs`, version
/// `version`.
pub fn contents(name: &str, dirs: &Dirs, version: &str) -> String {
    let what = NAMES
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("oxmpi", |(_, w)| w);
    format!(
        "# {name}.pc: {what}. Written by mpicc -showme:pkgconfig for this install.\n\
         includedir={}\n\
         libdir={}\n\
         \n\
         Name: {name}\n\
         Description: {what}: libmpi and mpi.h (MPI 3.1)\n\
         Version: {version}\n\
         Cflags: -I${{includedir}}\n\
         Libs: -L${{libdir}} -Wl,-rpath,${{libdir}} -lmpi\n",
        escape(&dirs.include),
        escape(&dirs.lib),
    )
}

/// Writes every file of [`NAMES`] for `dirs` into `to`, each only when it
/// is missing or says something else (so an install whose files are
/// current can be read-only). Each is written to a temporary file and
/// renamed, so a reader never sees half of one.
///
/// # Errors
///
/// The directory or a file could not be made, naming it.
pub fn write(to: &Path, dirs: &Dirs, version: &str) -> io::Result<()> {
    let named = |e: io::Error, p: &Path| io::Error::new(e.kind(), format!("{}: {e}", p.display()));
    for (name, _) in NAMES {
        let file = to.join(format!("{name}.pc"));
        let text = contents(name, dirs, version);
        if std::fs::read_to_string(&file).is_ok_and(|t| t == text) {
            continue;
        }
        std::fs::create_dir_all(to).map_err(|e| named(e, to))?;
        let tmp = to.join(format!(".{name}.pc.{}", std::process::id()));
        std::fs::write(&tmp, &text).map_err(|e| named(e, &tmp))?;
        std::fs::rename(&tmp, &file).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            named(e, &file)
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::dirs;

    #[test]
    fn a_file_names_the_directories_and_the_flags() {
        let t = contents("ompi-c", &dirs(), "1.2.3");
        assert!(t.contains("includedir=/p/include\nlibdir=/p/lib\n"), "{t}");
        assert!(
            t.contains("\nName: ompi-c\n") && t.contains("\nVersion: 1.2.3\n"),
            "{t}"
        );
        assert!(t.contains("\nCflags: -I${includedir}\n"), "{t}");
        assert!(
            t.contains("\nLibs: -L${libdir} -Wl,-rpath,${libdir} -lmpi\n"),
            "{t}"
        );
    }

    #[test]
    fn blanks_and_dollars_in_paths_are_escaped() {
        assert_eq!(escape(Path::new("/a b/c$d#e")), "/a\\ b/c$$d\\#e");
    }

    #[test]
    fn files_are_written_once_and_rewritten_when_stale() {
        let tmp = tempfile::tempdir().unwrap();
        let to = tmp.path().join("pkgconfig");
        write(&to, &dirs(), "1").unwrap();
        for (name, _) in NAMES {
            let t = std::fs::read_to_string(to.join(format!("{name}.pc"))).unwrap();
            assert_eq!(t, contents(name, &dirs(), "1"));
        }
        write(&to, &dirs(), "2").unwrap();
        let t = std::fs::read_to_string(to.join("oxmpi.pc")).unwrap();
        assert!(t.contains("\nVersion: 2\n"), "{t}");
        assert_eq!(std::fs::read_dir(&to).unwrap().count(), NAMES.len());
    }
}
