//! The job's identity: a job id and a secret that mpirun gives every rank
//! of a job (environment `OXMPI_JOB_ID`, `OXMPI_JOB_SECRET`), so that
//! transports can tell their own job's connections from anyone else's.
//!
//! The secret is 128 bits from the operating system's random source. It is
//! readable only by the ranks' user (and root), through their environment.

use std::fmt;

/// Environment variable carrying the job id (16 hex digits).
pub const JOB_ID_VAR: &str = "OXMPI_JOB_ID";
/// Environment variable carrying the job secret (32 hex digits).
pub const JOB_SECRET_VAR: &str = "OXMPI_JOB_SECRET";

/// A job id and its secret.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct JobIdentity {
    /// The job's id.
    pub job_id: u64,
    /// The job's secret.
    pub secret: [u64; 2],
}

impl fmt::Debug for JobIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the secret.
        f.debug_struct("JobIdentity")
            .field("job_id", &format_args!("{:016x}", self.job_id))
            .field("secret", &"<hidden>")
            .finish()
    }
}

impl JobIdentity {
    /// A fresh identity from the operating system's random source.
    ///
    /// # Errors
    /// The random source cannot be read (the message says so).
    pub fn generate() -> Result<JobIdentity, String> {
        let mut bytes = [0u8; 24];
        getrandom::fill(&mut bytes).map_err(|e| {
            format!("cannot read the system's random source for the job secret: {e}")
        })?;
        Ok(JobIdentity::from_bytes(bytes))
    }

    /// The identity as 24 bytes (job id, then the secret; little-endian),
    /// for carrying it as a binary value (e.g. through the modex).
    pub fn to_bytes(&self) -> [u8; 24] {
        let mut bytes = [0u8; 24];
        for (i, word) in [self.job_id, self.secret[0], self.secret[1]]
            .into_iter()
            .enumerate()
        {
            bytes[i * 8..i * 8 + 8].copy_from_slice(&word.to_le_bytes());
        }
        bytes
    }

    /// The inverse of [`to_bytes`](JobIdentity::to_bytes).
    pub fn from_bytes(bytes: [u8; 24]) -> JobIdentity {
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
            u64::from_le_bytes(w)
        };
        JobIdentity {
            job_id: word(0),
            secret: [word(1), word(2)],
        }
    }

    /// The variables that carry this identity to a rank.
    pub fn to_env(&self) -> [(String, String); 2] {
        [
            (JOB_ID_VAR.to_string(), format!("{:016x}", self.job_id)),
            (
                JOB_SECRET_VAR.to_string(),
                format!("{:016x}{:016x}", self.secret[0], self.secret[1]),
            ),
        ]
    }

    /// Reads the identity from the variables `lookup` returns: `Ok(None)` if
    /// neither is set (a singleton, or a launcher that is not mpirun).
    ///
    /// # Errors
    /// Only one is set, or a value is not the expected hex digits.
    pub fn from_env(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<JobIdentity>, String> {
        match (lookup(JOB_ID_VAR), lookup(JOB_SECRET_VAR)) {
            (None, None) => Ok(None),
            (Some(id), Some(secret)) => {
                let bad = |var: &str, want: usize| {
                    format!("{var} must be {want} hexadecimal digits (mpirun sets it; do not set it by hand)")
                };
                if id.len() != 16 {
                    return Err(bad(JOB_ID_VAR, 16));
                }
                let job_id = u64::from_str_radix(&id, 16).map_err(|_| bad(JOB_ID_VAR, 16))?;
                if secret.len() != 32 || !secret.is_ascii() {
                    return Err(bad(JOB_SECRET_VAR, 32));
                }
                let hi =
                    u64::from_str_radix(&secret[..16], 16).map_err(|_| bad(JOB_SECRET_VAR, 32))?;
                let lo =
                    u64::from_str_radix(&secret[16..], 16).map_err(|_| bad(JOB_SECRET_VAR, 32))?;
                Ok(Some(JobIdentity {
                    job_id,
                    secret: [hi, lo],
                }))
            }
            (Some(_), None) | (None, Some(_)) => Err(format!(
                "{JOB_ID_VAR} and {JOB_SECRET_VAR} must be set together (mpirun sets both)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn round_trips_through_the_environment() {
        let id = JobIdentity::generate().unwrap();
        let env: HashMap<String, String> = id.to_env().into_iter().collect();
        let back = JobIdentity::from_env(|k| env.get(k).cloned()).unwrap();
        assert_eq!(back, Some(id));
    }

    #[test]
    fn round_trips_through_bytes() {
        let id = JobIdentity::generate().unwrap();
        assert_eq!(JobIdentity::from_bytes(id.to_bytes()), id);
    }

    #[test]
    fn two_jobs_get_different_identities() {
        assert_ne!(
            JobIdentity::generate().unwrap(),
            JobIdentity::generate().unwrap()
        );
    }

    #[test]
    fn absent_is_none_and_half_or_bad_values_are_errors() {
        assert_eq!(JobIdentity::from_env(|_| None).unwrap(), None);
        let only_id = JobIdentity::from_env(|k| (k == JOB_ID_VAR).then(|| "0".repeat(16)));
        assert!(only_id.unwrap_err().contains("must be set together"));
        let bad = JobIdentity::from_env(|k| {
            Some(if k == JOB_ID_VAR {
                "zz".repeat(8)
            } else {
                "0".repeat(32)
            })
        });
        assert!(bad
            .unwrap_err()
            .contains("OXMPI_JOB_ID must be 16 hexadecimal digits"));
        let short = JobIdentity::from_env(|k| {
            Some(if k == JOB_ID_VAR {
                "0".repeat(16)
            } else {
                "0".repeat(31)
            })
        });
        assert!(short.unwrap_err().contains("OXMPI_JOB_SECRET"));
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let id = JobIdentity {
            job_id: 1,
            secret: [0xdead_beef, 2],
        };
        assert!(!format!("{id:?}").contains("deadbeef"));
    }
}
