//! The ladder: SE 1.2.1's producers in its order, the table of
//! techniques up to the bivalue universal grave, aligned pair exclusion,
//! the unary chaining and aligned triple exclusion (these three with what
//! the path remembers, [`Since`]), then the chaining producers, which
//! spend the budget.

use super::aligned::{STALE_ALL, aligned_pair_exclusion, aligned_triple_exclusion};
use super::bug::bug;
use super::chains::{UnaryMemory, unary_chaining};
use super::direct::{direct_claiming, direct_hidden_subset, direct_pointing};
use super::dynamic::{Producer, Scratch, chaining};
use super::locked::{claiming, pointing};
use super::reach::digits_with_single_digit_conclusions;
use super::singles::{BOX_RANKS, LINE_RANKS, full_house, hidden_single, naked_single};
use super::state::{ALL_HOUSES, Found, HOUSES_OF, Index, State, cells_of};
use super::subsets::{fish, hidden_subset, naked_subset};
use super::unique::{LoopMemory, unique_loops_along};
use super::wings::{xy_wing, xyz_wing};
use super::{Budget, Exhausted, Solution, Technique};

/// A rung of the ladder: a technique of one difficulty, or one whose
/// instances differ in difficulty (it keeps only its easiest instances and
/// says which technique and difficulty they are).
pub(super) enum Rung {
    Fixed(Technique, fn(&State, &Index, &mut Found)),
    /// A technique of one difficulty whose search splits into parts (each
    /// digit, or each house) that read nothing of one another: its step
    /// is the first of the hints of all parts. The parts searched are
    /// given (bit `i` for digit or house `i`); along a path, those whose
    /// candidates changed since it last found nothing ([`Since`]).
    Split(Technique, Parts, fn(&State, &Index, &mut Found, u32)),
    /// With the technique of its easiest instances.
    Graded(
        Technique,
        fn(&State, &Index, &mut Found) -> Option<(Technique, u16)>,
    ),
    /// The unique loops ([`unique_loops_along`]), with what the path
    /// remembers for them ([`Since`]).
    Loops,
}

/// What the parts of a [`Rung::Split`] are.
#[derive(Clone, Copy)]
pub(super) enum Parts {
    /// Each digit: a part reads that digit's places alone.
    Digits,
    /// Each house: a part reads that house's cells alone.
    Houses,
}

impl Parts {
    /// Every part.
    pub(super) const fn all(self) -> u32 {
        match self {
            Parts::Digits => 0x1FF,
            Parts::Houses => ALL_HOUSES,
        }
    }
}

impl Rung {
    /// The least difficulty of a step of this rung, in tenths.
    fn base(&self) -> u16 {
        match self {
            Rung::Fixed(technique, _) | Rung::Split(technique, ..) | Rung::Graded(technique, _) => {
                technique.tenths()
            }
            Rung::Loops => Technique::UniqueRectangle.tenths(),
        }
    }
}

/// The ladder's table, in SE 1.2.1's order of producers (aligned pair
/// exclusion, next in that order, is called on its own).
pub(super) const RUNGS: [Rung; 23] = [
    Rung::Fixed(Technique::FullHouse, full_house),
    Rung::Fixed(Technique::HiddenSingleBox, |s, i, f| {
        hidden_single(s, i, f, BOX_RANKS)
    }),
    Rung::Fixed(Technique::HiddenSingleLine, |s, i, f| {
        hidden_single(s, i, f, LINE_RANKS)
    }),
    Rung::Split(Technique::DirectPointing, Parts::Digits, direct_pointing),
    Rung::Split(Technique::DirectClaiming, Parts::Digits, direct_claiming),
    Rung::Split(Technique::DirectHiddenPair, Parts::Houses, |s, i, f, p| {
        direct_hidden_subset(s, i, f, 2, p)
    }),
    Rung::Fixed(Technique::NakedSingle, naked_single),
    Rung::Split(
        Technique::DirectHiddenTriple,
        Parts::Houses,
        |s, i, f, p| direct_hidden_subset(s, i, f, 3, p),
    ),
    Rung::Split(Technique::Pointing, Parts::Digits, pointing),
    Rung::Split(Technique::Claiming, Parts::Digits, claiming),
    Rung::Split(Technique::NakedPair, Parts::Houses, |s, i, f, p| {
        naked_subset(s, i, f, 2, p)
    }),
    Rung::Split(Technique::XWing, Parts::Digits, |s, i, f, p| {
        fish(s, i, f, 2, p)
    }),
    Rung::Split(Technique::HiddenPair, Parts::Houses, |s, i, f, p| {
        hidden_subset(s, i, f, 2, p)
    }),
    Rung::Split(Technique::NakedTriple, Parts::Houses, |s, i, f, p| {
        naked_subset(s, i, f, 3, p)
    }),
    Rung::Split(Technique::Swordfish, Parts::Digits, |s, i, f, p| {
        fish(s, i, f, 3, p)
    }),
    Rung::Split(Technique::HiddenTriple, Parts::Houses, |s, i, f, p| {
        hidden_subset(s, i, f, 3, p)
    }),
    Rung::Fixed(Technique::XyWing, xy_wing),
    Rung::Fixed(Technique::XyzWing, xyz_wing),
    Rung::Loops,
    Rung::Split(Technique::NakedQuad, Parts::Houses, |s, i, f, p| {
        naked_subset(s, i, f, 4, p)
    }),
    Rung::Split(Technique::Jellyfish, Parts::Digits, |s, i, f, p| {
        fish(s, i, f, 4, p)
    }),
    Rung::Split(Technique::HiddenQuad, Parts::Houses, |s, i, f, p| {
        hidden_subset(s, i, f, 4, p)
    }),
    Rung::Graded(Technique::Bug, bug),
];

/// Per rung of [`RUNGS`], what `of` gives for a [`Rung::Split`]'s parts
/// (`0` for the other rungs).
fn per_split(of: impl Fn(Parts) -> u32) -> [u32; RUNGS.len()] {
    std::array::from_fn(|i| match &RUNGS[i] {
        Rung::Split(_, parts, _) => of(*parts),
        _ => 0,
    })
}

/// SE 1.2.1's chaining producers after aligned triple exclusion, in its
/// order: Nishio, multiple and dynamic forcing chains, then the nested
/// levels (SukakuExplainer's SE 1.2.1 set: levels 1 to 3, then level 4
/// with nested chains of level 0, 1 and 2).
const PRODUCERS: [Producer; 9] = [
    Producer::Nishio,
    Producer::Multiple,
    Producer::Dynamic,
    Producer::Nested {
        level: 1,
        nesting: 0,
    },
    Producer::Nested {
        level: 2,
        nesting: 0,
    },
    Producer::Nested {
        level: 3,
        nesting: 0,
    },
    Producer::Nested {
        level: 4,
        nesting: 0,
    },
    Producer::Nested {
        level: 4,
        nesting: 1,
    },
    Producer::Nested {
        level: 4,
        nesting: 2,
    },
];

/// What a path keeps from one step to the next for the rungs that can
/// use it: the cells changed since a rung last found nothing.
pub(super) struct Since {
    /// For each [`Rung::Split`] of [`RUNGS`], at its position: the parts
    /// (digits or houses) whose candidates changed since it last found
    /// nothing. A part unchanged finds nothing again.
    parts: [u32; RUNGS.len()],
    /// For aligned pair exclusion ([`aligned_pair_exclusion`]): the
    /// cells changed.
    pair: u128,
    /// For aligned triple exclusion ([`aligned_triple_exclusion`]): the
    /// cells changed.
    triple: u128,
    /// For the unary chaining ([`unary_chaining`]): the digits whose
    /// candidates changed, and the bivalue cells it last found nothing on.
    unary: UnaryMemory,
    /// For Nishio ([`chaining`]): the digits whose candidates changed.
    nishio_digits: u16,
    /// For the unique loops: the pairs of digits whose walks close none.
    loops: LoopMemory,
}

impl Since {
    /// At the start of a path: nothing found nothing yet.
    pub(super) fn new() -> Since {
        Since {
            parts: per_split(Parts::all),
            pair: STALE_ALL,
            triple: STALE_ALL,
            unary: UnaryMemory::new(),
            nishio_digits: 0x1FF,
            loops: LoopMemory::new(),
        }
    }

    /// Whether some rung would now run on a part only (after a rung found
    /// nothing, before a step changes everything).
    #[cfg(test)]
    pub(super) fn spares(&self) -> bool {
        self.parts != per_split(Parts::all)
            || self.pair != STALE_ALL
            || self.triple != STALE_ALL
            || self.unary.x_digits != 0x1FF
            || self.nishio_digits != 0x1FF
    }

    /// The parts kept for each rung ([`Since::parts`]).
    #[cfg(test)]
    pub(super) fn parts_mut(&mut self) -> &mut [u32; RUNGS.len()] {
        &mut self.parts
    }

    /// The step `found`, made on the candidates `before`, changed the
    /// candidates of `cells` ([`State::apply`]).
    pub(super) fn changed(&mut self, found: &Found, before: &[u16; 81], cells: u128) {
        self.pair |= cells;
        self.triple |= cells;
        // The digits it removed somewhere: those it removes, and every
        // candidate of a cell it fills (the digit placed leaves the
        // cell's peers). Read from the few cells the step touches.
        let mut digits = 0;
        for cell in cells_of(found.touched) {
            digits |= found.elim[cell] & before[cell];
            if found.place[cell] != 0 {
                digits |= before[cell];
            }
        }
        self.unary.x_digits |= digits;
        self.nishio_digits |= digits;
        // The houses whose places changed: those of the cells changed.
        let houses = cells_of(cells).fold(0u32, |set, cell| {
            HOUSES_OF[cell].iter().fold(set, |set, &h| set | 1 << h)
        });
        for (rung, kept) in RUNGS.iter().zip(&mut self.parts) {
            if let Rung::Split(_, parts, _) = rung {
                *kept |= match parts {
                    Parts::Digits => u32::from(digits),
                    Parts::Houses => houses,
                };
            }
        }
    }
}

/// Why the ladder gave no step.
pub(super) enum Stopped {
    /// The budget ran out while the producer of this technique searched:
    /// the step is of its base difficulty or harder (every producer
    /// before it found nothing, and the bases rise along the ladder).
    Budget(Technique),
    /// Every rung up to the ceiling found nothing: the step is harder.
    Above,
}

/// Applies the first rung of the ladder that makes progress; the
/// technique and difficulty (tenths) of the step. After the table come
/// SE's chaining producers, which spend the budget. A step harder than
/// `ceiling` tenths is not looked for: once every rung of a base up to it
/// has found nothing, the ladder stops ([`Stopped::Above`]). The grid's
/// `solution` (solved for when first asked) only spares the chaining
/// producers work: chains that could conclude nothing, and the rest of a
/// chain once it has found what is asked of it. The step is the same.
#[allow(clippy::too_many_arguments)]
pub(super) fn ladder(
    state: &State,
    index: &Index,
    found: &mut Found,
    budget: &mut Budget,
    space: &mut Scratch,
    since: &mut Since,
    solution: &mut Solution,
    ceiling: u16,
) -> Result<Option<(Technique, u16)>, Stopped> {
    let above = |technique: Technique| technique.tenths() > ceiling;
    for (rung, parts) in RUNGS.iter().zip(&mut since.parts) {
        if rung.base() > ceiling {
            return Err(Stopped::Above);
        }
        match rung {
            Rung::Fixed(technique, apply) => {
                apply(state, index, found);
                if found.any {
                    return Ok(Some((*technique, technique.tenths())));
                }
            }
            Rung::Split(technique, _, apply) => {
                apply(state, index, found, *parts);
                if found.any {
                    return Ok(Some((*technique, technique.tenths())));
                }
                *parts = 0;
            }
            Rung::Graded(_, apply) => {
                if let Some(step) = apply(state, index, found) {
                    return Ok(Some(step));
                }
            }
            Rung::Loops => {
                if let Some(step) = unique_loops_along(state, found, &mut since.loops) {
                    return Ok(Some(step));
                }
            }
        }
    }
    let pair = Technique::AlignedPairExclusion;
    if above(pair) {
        return Err(Stopped::Above);
    }
    aligned_pair_exclusion(state, index, found, &mut since.pair);
    if found.any {
        return Ok(Some((pair, pair.tenths())));
    }
    if above(Technique::BidirectionalXCycle) {
        return Err(Stopped::Above);
    }
    let unary = unary_chaining(
        state,
        index,
        found,
        budget,
        &mut space.unary,
        ceiling,
        &mut since.unary,
    );
    let technique = Technique::BidirectionalXCycle;
    if let Some(step) = unary.map_err(|Exhausted| Stopped::Budget(technique))? {
        return Ok(Some(step));
    }
    if above(Technique::AlignedTripleExclusion) {
        return Err(Stopped::Above);
    }
    aligned_triple_exclusion(state, index, found, &mut since.triple);
    if found.any {
        let t = Technique::AlignedTripleExclusion;
        return Ok(Some((t, t.tenths())));
    }
    for producer in PRODUCERS {
        if above(producer.technique()) {
            return Err(Stopped::Above);
        }
        let nishio = matches!(producer, Producer::Nishio);
        // Nishio's chains follow one digit's links: of the digits changed,
        // only those whose links can conclude something.
        let digits = if nishio {
            digits_with_single_digit_conclusions(
                state,
                index,
                since.nishio_digits,
                &mut since.unary.placements,
            )
        } else {
            0x1FF
        };
        let chains = chaining(
            state,
            producer,
            found,
            budget,
            space,
            digits,
            solution.cells(),
        );
        if nishio {
            since.nishio_digits = if matches!(chains, Ok(None)) { 0 } else { 0x1FF };
        }
        let stopped = |Exhausted| Stopped::Budget(producer.technique());
        if let Some(step) = chains.map_err(stopped)? {
            return Ok(Some(step));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ceiling stops the ladder at the first rung whose base is above
    /// it: sound only while no later rung has a lower base.
    #[test]
    fn bases_never_fall_along_the_ladder() {
        let bases: Vec<u16> = RUNGS
            .iter()
            .map(Rung::base)
            .chain([
                Technique::AlignedPairExclusion.tenths(),
                Technique::BidirectionalXCycle.tenths(),
                Technique::AlignedTripleExclusion.tenths(),
            ])
            .chain(PRODUCERS.iter().map(|p| p.technique().tenths()))
            .collect();
        for pair in bases.windows(2) {
            assert!(pair[0] <= pair[1], "{bases:?}");
        }
    }
}
