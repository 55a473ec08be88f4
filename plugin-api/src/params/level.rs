//! Typed parameter levels.

/// How deep within its audience a parameter is (Open MPI's
/// basic/detail/all).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Tier {
    /// The parameters most of the audience needs.
    Basic,
    /// More detail.
    Detailed,
    /// Everything else.
    All,
}

/// The level of a parameter: who it is for and how deep; Open MPI's levels
/// 1–9 (`oxmpi_info --level N` shows those up to N).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// End users: levels 1 (basic), 2 (detailed), 3 (all).
    User(Tier),
    /// Application tuners: levels 4, 5, 6.
    Tuner(Tier),
    /// Developers: levels 7, 8, 9.
    Developer(Tier),
}

impl Level {
    /// The level's number, 1–9, as [`crate::ParamDecl::level`] holds it.
    pub const fn number(self) -> u8 {
        let (base, tier) = match self {
            Level::User(t) => (1, t),
            Level::Tuner(t) => (4, t),
            Level::Developer(t) => (7, t),
        };
        base + match tier {
            Tier::Basic => 0,
            Tier::Detailed => 1,
            Tier::All => 2,
        }
    }

    /// The level numbered `n` (1–9), or `None` for any other number.
    pub const fn from_number(n: u8) -> Option<Level> {
        let tier = match (n + 2) % 3 {
            0 => Tier::Basic,
            1 => Tier::Detailed,
            _ => Tier::All,
        };
        match n {
            1..=3 => Some(Level::User(tier)),
            4..=6 => Some(Level::Tuner(tier)),
            7..=9 => Some(Level::Developer(tier)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_follow_open_mpi() {
        assert_eq!(Level::User(Tier::Basic).number(), 1);
        assert_eq!(Level::User(Tier::All).number(), 3);
        assert_eq!(Level::Tuner(Tier::Basic).number(), 4);
        assert_eq!(Level::Tuner(Tier::Detailed).number(), 5);
        assert_eq!(Level::Developer(Tier::Basic).number(), 7);
        assert_eq!(Level::Developer(Tier::All).number(), 9);
        for n in 1..=9 {
            assert_eq!(Level::from_number(n).map(Level::number), Some(n));
        }
        assert_eq!(Level::from_number(0), None);
        assert_eq!(Level::from_number(10), None);
    }
}
