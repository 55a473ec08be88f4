//! Where this process's segment lives and how many processes share the
//! node: what mpirun tells each rank through its environment.
//!
//! - `OXMPI_JOB_DIR`: the job's private directory (mode 0700, under
//!   `/dev/shm` when it is a tmpfs), which mpirun removes with everything
//!   in it when the job ends, however it ends.
//! - `OXMPI_COMM_WORLD_LOCAL_SIZE`: the number of the job's processes on
//!   this node. With it, the last process to map a segment unlinks its
//!   file; without it (another launcher) the files stay until the job
//!   directory is removed.

use oxmpi_framework_btl::module::JobIdentity;
use std::path::PathBuf;

/// The job directory's variable.
pub const JOB_DIR_VAR: &str = "OXMPI_JOB_DIR";

/// The variable with the number of the job's processes on this node.
pub const LOCAL_SIZE_VAR: &str = "OXMPI_COMM_WORLD_LOCAL_SIZE";

/// Where the segments are and how many processes of the job share the
/// node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The job directory.
    pub dir: PathBuf,
    /// Processes of the job on this node, if the launcher said.
    pub local_size: Option<u32>,
}

impl Place {
    /// This process's place, from its environment.
    ///
    /// # Errors
    ///
    /// Why sm has nothing to do here (the caller declines with it): the
    /// job has one process, or one on this node, or there is no job
    /// directory, or the variables are unreadable.
    pub fn of_process(identity: &JobIdentity) -> Result<Place, String> {
        Self::from_values(
            identity,
            std::env::var_os(JOB_DIR_VAR).map(PathBuf::from),
            std::env::var(LOCAL_SIZE_VAR).ok(),
        )
    }

    /// As [`Place::of_process`], from given values of the variables.
    ///
    /// # Errors
    ///
    /// As [`Place::of_process`].
    pub fn from_values(
        identity: &JobIdentity,
        dir: Option<PathBuf>,
        local_size: Option<String>,
    ) -> Result<Place, String> {
        if identity.size < 2 {
            return Err("the job has one process, so there is no peer to share memory with".into());
        }
        let local_size = match local_size {
            None => None,
            Some(text) => match text.trim().parse::<u32>() {
                Ok(0) | Err(_) => {
                    return Err(format!(
                        "{LOCAL_SIZE_VAR} is \"{text}\", not a number of processes; sm is not used"
                    ))
                }
                Ok(1) => {
                    return Err(format!(
                        "rank {} is the job's only process on this node ({LOCAL_SIZE_VAR} = 1)",
                        identity.rank
                    ))
                }
                Ok(n) => Some(n),
            },
        };
        let Some(dir) = dir else {
            return Err(format!(
                "there is no job directory ({JOB_DIR_VAR} is not set): sm keeps its segments in the directory oxmpi's mpirun makes for each job"
            ));
        };
        if !dir.is_dir() {
            return Err(format!(
                "the job directory {} ({JOB_DIR_VAR}) is not a directory",
                dir.display()
            ));
        }
        Ok(Place { dir, local_size })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(rank: u32, size: u32) -> JobIdentity {
        JobIdentity {
            job_id: 1,
            secret: [0; 2],
            rank,
            size,
        }
    }

    #[test]
    fn the_place_needs_peers_and_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let some = Some(dir.path().to_path_buf());
        assert_eq!(
            Place::from_values(&id(0, 4), some.clone(), Some("4".into())),
            Ok(Place {
                dir: dir.path().to_path_buf(),
                local_size: Some(4)
            })
        );
        assert_eq!(
            Place::from_values(&id(0, 4), some.clone(), None)
                .unwrap()
                .local_size,
            None
        );
        let why = |r| Place::from_values(&id(0, 4), some.clone(), r).unwrap_err();
        assert!(why(Some("1".into())).contains("only process on this node"));
        assert!(why(Some("x".into())).contains("not a number"));
        assert!(Place::from_values(&id(0, 1), some.clone(), None)
            .unwrap_err()
            .contains("one process"));
        assert!(Place::from_values(&id(0, 2), None, None)
            .unwrap_err()
            .contains("OXMPI_JOB_DIR is not set"));
        let file = dir.path().join("f");
        std::fs::write(&file, b"").unwrap();
        assert!(Place::from_values(&id(0, 2), Some(file), None)
            .unwrap_err()
            .contains("is not a directory"));
    }
}
