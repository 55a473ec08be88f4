//! For components' tests (feature `testkit`): MPI layer services that
//! refuse every message, for tests that exercise a component's table
//! without moving data.

use crate::handle::MpiColl;

/// [`MpiColl`] whose every call fails with "no messages in this test".
pub struct NoServices;

impl MpiColl for NoServices {
    unsafe fn isend(&self, _: u32, _: u32, _: i32, _: *const u8, _: usize) -> Result<u64, String> {
        Err("no messages in this test".into())
    }

    unsafe fn irecv(&self, _: u32, _: u32, _: i32, _: *mut u8, _: usize) -> Result<u64, String> {
        Err("no messages in this test".into())
    }

    fn wait_all(&self, _: &[u64], _: &mut [usize]) -> Result<(), String> {
        Err("no messages in this test".into())
    }

    fn test_all(&self, _: &mut [u64], _: &mut [usize]) -> Result<(), String> {
        Err("no messages in this test".into())
    }

    fn progress(&self) -> usize {
        0
    }
}
