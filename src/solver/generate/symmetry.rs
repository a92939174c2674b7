//! The symmetries a generated puzzle's givens may keep, and the orbits of
//! cells each one moves around: a symmetric puzzle gains and loses givens
//! an orbit at a time.

/// A map of the square that carries the set of given cells onto itself
/// (cell `(r, c)` counted from 0), as PROTOCOL.md defines each kind. The
/// digits are not involved: only where the givens sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Symmetry {
    /// No constraint on where givens sit.
    None,
    /// Half turn: `(8 - r, 8 - c)`.
    Central,
    /// Quarter turn `(c, 8 - r)` and its powers.
    Quarter,
    /// Top to bottom: `(8 - r, c)`.
    Horizontal,
    /// Left to right: `(r, 8 - c)`.
    Vertical,
    /// Main diagonal: `(c, r)`.
    Diagonal,
    /// Anti-diagonal: `(8 - c, 8 - r)`.
    Antidiagonal,
    /// Horizontal and vertical together (and so the half turn).
    Mirrors,
    /// Both diagonals together (and so the half turn).
    Diagonals,
    /// All eight symmetries of the square.
    Full,
}

/// A cell map, applied to `(row, column)`.
type CellMap = fn(usize, usize) -> (usize, usize);

const HALF_TURN: CellMap = |r, c| (8 - r, 8 - c);
const QUARTER_TURN: CellMap = |r, c| (c, 8 - r);
const HORIZONTAL: CellMap = |r, c| (8 - r, c);
const VERTICAL: CellMap = |r, c| (r, 8 - c);
const DIAGONAL: CellMap = |r, c| (c, r);
const ANTIDIAGONAL: CellMap = |r, c| (8 - c, 8 - r);

impl Symmetry {
    /// Every symmetry, in the order PROTOCOL.md lists them.
    pub const ALL: [Symmetry; 10] = [
        Symmetry::None,
        Symmetry::Central,
        Symmetry::Quarter,
        Symmetry::Horizontal,
        Symmetry::Vertical,
        Symmetry::Diagonal,
        Symmetry::Antidiagonal,
        Symmetry::Mirrors,
        Symmetry::Diagonals,
        Symmetry::Full,
    ];

    /// The name the protocol and the command line use.
    pub fn name(self) -> &'static str {
        match self {
            Symmetry::None => "none",
            Symmetry::Central => "central",
            Symmetry::Quarter => "quarter",
            Symmetry::Horizontal => "horizontal",
            Symmetry::Vertical => "vertical",
            Symmetry::Diagonal => "diagonal",
            Symmetry::Antidiagonal => "antidiagonal",
            Symmetry::Mirrors => "mirrors",
            Symmetry::Diagonals => "diagonals",
            Symmetry::Full => "full",
        }
    }

    /// The symmetry called `name` (exactly as [`Symmetry::name`] writes it).
    pub fn from_name(name: &str) -> Option<Symmetry> {
        Symmetry::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The maps that generate the symmetry's group.
    fn generators(self) -> &'static [CellMap] {
        match self {
            Symmetry::None => &[],
            Symmetry::Central => &[HALF_TURN],
            Symmetry::Quarter => &[QUARTER_TURN],
            Symmetry::Horizontal => &[HORIZONTAL],
            Symmetry::Vertical => &[VERTICAL],
            Symmetry::Diagonal => &[DIAGONAL],
            Symmetry::Antidiagonal => &[ANTIDIAGONAL],
            Symmetry::Mirrors => &[HORIZONTAL, VERTICAL],
            Symmetry::Diagonals => &[DIAGONAL, ANTIDIAGONAL],
            Symmetry::Full => &[QUARTER_TURN, DIAGONAL],
        }
    }

    /// Whether the group holds the half turn `(8 - r, 8 - c)`.
    pub(crate) fn has_half_turn(self) -> bool {
        matches!(
            self,
            Symmetry::Central
                | Symmetry::Quarter
                | Symmetry::Mirrors
                | Symmetry::Diagonals
                | Symmetry::Full
        )
    }

    /// The orbits of the 81 cells under the group, as cell sets (bit `i`
    /// for cell `i`), in the order of their lowest cell. They partition
    /// the grid: a set of cells is symmetric exactly when it is a union of
    /// orbits.
    pub(crate) fn orbits(self) -> Vec<u128> {
        let mut orbits = Vec::new();
        let mut covered = 0u128;
        for cell in 0..81 {
            if covered >> cell & 1 == 1 {
                continue;
            }
            // Close {cell} under the generators.
            let mut orbit = 1u128 << cell;
            let mut frontier = vec![cell];
            while let Some(at) = frontier.pop() {
                for map in self.generators() {
                    let (r, c) = map(at / 9, at % 9);
                    let image = 9 * r + c;
                    if orbit >> image & 1 == 0 {
                        orbit |= 1 << image;
                        frontier.push(image);
                    }
                }
            }
            covered |= orbit;
            orbits.push(orbit);
        }
        orbits
    }

    /// Whether the cell set `cells` (bit `i` for cell `i`) is carried onto
    /// itself by every map of the symmetry.
    pub fn holds(self, cells: u128) -> bool {
        self.generators().iter().all(|map| {
            (0..81).filter(|&i| cells >> i & 1 == 1).all(|i| {
                let (r, c) = map(i / 9, i % 9);
                cells >> (9 * r + c) & 1 == 1
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orbits_partition_the_grid_and_are_symmetric() {
        for symmetry in Symmetry::ALL {
            let orbits = symmetry.orbits();
            let mut union = 0u128;
            for &orbit in &orbits {
                assert_eq!(union & orbit, 0, "{symmetry:?} orbits overlap");
                union |= orbit;
                assert!(symmetry.holds(orbit), "{symmetry:?}: {orbit:#x}");
            }
            assert_eq!(union, (1u128 << 81) - 1);
        }
    }

    #[test]
    fn orbit_counts_match_the_groups() {
        // Orbits of the 81 cells, by Burnside's lemma on each group.
        let expected = [81, 41, 21, 45, 45, 45, 45, 25, 25, 15];
        for (symmetry, want) in Symmetry::ALL.into_iter().zip(expected) {
            assert_eq!(symmetry.orbits().len(), want, "{symmetry:?}");
        }
    }

    #[test]
    fn names_round_trip() {
        for symmetry in Symmetry::ALL {
            assert_eq!(Symmetry::from_name(symmetry.name()), Some(symmetry));
        }
        assert_eq!(Symmetry::from_name("diagonally"), None);
    }
}
