//! Parameter levels 1–9, as Open MPI numbers them.

/// The name printed after a level number (`1 user/basic`).
pub fn level_name(level: u8) -> &'static str {
    match level {
        1 => "user/basic",
        2 => "user/detail",
        3 => "user/all",
        4 => "tuner/basic",
        5 => "tuner/detail",
        6 => "tuner/all",
        7 => "dev/basic",
        8 => "dev/detail",
        _ => "dev/all",
    }
}
