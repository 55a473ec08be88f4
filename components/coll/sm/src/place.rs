//! Where this job's segments go and whether its processes share this
//! node: what mpirun tells each rank through its environment.
//!
//! - `OXMPI_JOB_DIR`: the job's private directory (under `/dev/shm` when it
//!   is a tmpfs), which mpirun removes with everything in it when the job
//!   ends, however it ends;
//! - `OXMPI_JOB_ID`: the job's id (16 hexadecimal digits), part of every
//!   segment's name;
//! - `OXMPI_COMM_WORLD_SIZE` and `OXMPI_COMM_WORLD_LOCAL_SIZE`: the job's
//!   processes, and those on this node. sm serves a communicator only when
//!   every process of the job is on this node (mpirun launches on one node
//!   today); a communicator's members then share it for sure.

use std::path::PathBuf;

/// The job directory's variable.
pub const JOB_DIR_VAR: &str = "OXMPI_JOB_DIR";
/// The job id's variable.
pub const JOB_ID_VAR: &str = "OXMPI_JOB_ID";
/// The variable with the number of the job's processes.
pub const SIZE_VAR: &str = "OXMPI_COMM_WORLD_SIZE";
/// The variable with the number of the job's processes on this node.
pub const LOCAL_SIZE_VAR: &str = "OXMPI_COMM_WORLD_LOCAL_SIZE";

/// Where the job's segments go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The job directory.
    pub dir: PathBuf,
    /// The job id, as mpirun wrote it (part of the segments' names).
    pub job: String,
    /// The job's processes on this node (all of them).
    pub local_size: u32,
}

impl Place {
    /// This process's place, from its environment.
    ///
    /// # Errors
    ///
    /// Why sm cannot serve this process's communicators, as the reason its
    /// queries give.
    pub fn of_process() -> Result<Place, String> {
        let var = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
        Self::from_values(
            var(JOB_DIR_VAR),
            var(JOB_ID_VAR),
            var(SIZE_VAR),
            var(LOCAL_SIZE_VAR),
        )
    }

    /// As [`Place::of_process`], from given values of the variables (in
    /// the order of their constants above).
    ///
    /// # Errors
    ///
    /// As [`Place::of_process`].
    pub fn from_values(
        dir: Option<String>,
        job: Option<String>,
        size: Option<String>,
        local_size: Option<String>,
    ) -> Result<Place, String> {
        let count = |name: &str, value: Option<String>| -> Result<u32, String> {
            let Some(text) = value else {
                return Err(format!(
                    "{name} is not set, so sm cannot tell whether the job's processes share this \
                     node (oxmpi's mpirun sets it)"
                ));
            };
            match text.trim().parse::<u32>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(format!(
                    "{name} is \"{text}\", not a number of processes; sm is not used"
                )),
            }
        };
        let size = count(SIZE_VAR, size)?;
        let local_size = count(LOCAL_SIZE_VAR, local_size)?;
        if local_size < size {
            return Err(format!(
                "only {local_size} of the job's {size} processes are on this node \
                 ({LOCAL_SIZE_VAR} < {SIZE_VAR}); sm serves jobs whose processes all share one node"
            ));
        }
        let Some(dir) = dir.filter(|d| !d.is_empty()) else {
            return Err(format!(
                "there is no job directory ({JOB_DIR_VAR} is not set): sm keeps its segments in \
                 the directory oxmpi's mpirun makes for each job"
            ));
        };
        let dir = PathBuf::from(dir);
        if !dir.is_dir() {
            return Err(format!(
                "the job directory {} ({JOB_DIR_VAR}) is not a directory",
                dir.display()
            ));
        }
        let job = job.unwrap_or_default();
        if job.is_empty() || job.len() > 32 || !job.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!(
                "{JOB_ID_VAR} is \"{job}\", not a job id of hexadecimal digits (oxmpi's mpirun \
                 sets it); sm names its segments after it"
            ));
        }
        Ok(Place {
            dir,
            job,
            local_size,
        })
    }

    /// The path of the segment of the communicator with context id
    /// `context` created by job rank `creator`.
    pub fn segment_path(&self, context: u32, creator: u32) -> PathBuf {
        self.dir
            .join(format!("coll-sm-{}-{context}-{creator}", self.job))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn the_place_needs_every_process_here_a_directory_and_a_job_id() {
        let dir = tempfile::tempdir().unwrap();
        let d = || Some(dir.path().display().to_string());
        let place = Place::from_values(d(), s("00ab"), s("4"), s("4")).unwrap();
        assert_eq!(place.local_size, 4);
        assert_eq!(
            place.segment_path(5, 2),
            dir.path().join("coll-sm-00ab-5-2")
        );
        let why = |dir, job, size, local| Place::from_values(dir, job, size, local).unwrap_err();
        assert!(why(d(), s("1"), s("4"), s("2")).contains("only 2 of the job's 4 processes"));
        assert!(why(d(), s("1"), s("4"), None).contains("OXMPI_COMM_WORLD_LOCAL_SIZE is not set"));
        assert!(why(d(), s("1"), None, s("4")).contains("OXMPI_COMM_WORLD_SIZE is not set"));
        assert!(why(d(), s("1"), s("x"), s("4")).contains("not a number of processes"));
        assert!(why(None, s("1"), s("2"), s("2")).contains("OXMPI_JOB_DIR is not set"));
        assert!(why(d(), None, s("2"), s("2")).contains("OXMPI_JOB_ID"));
        assert!(why(d(), s("../x"), s("2"), s("2")).contains("not a job id"));
        let file = dir.path().join("f");
        std::fs::write(&file, b"").unwrap();
        assert!(
            why(Some(file.display().to_string()), s("1"), s("2"), s("2"))
                .contains("is not a directory")
        );
    }
}
