//! The techniques of the rated path, in SE 1.2.1's order of producers,
//! with their names and SE's base difficulties.

use super::trial::{SEARCH_BASE, SEARCH_TOP};

/// A solving technique, in the order the rated path tries them (SE 1.2.1's
/// order of producers). [`Technique::score`] never falls along it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Technique {
    /// The last empty cell of a row, column or box.
    FullHouse,
    /// A digit with one place left in a box.
    HiddenSingleBox,
    /// A digit with one place left in a row or column.
    HiddenSingleLine,
    /// A pointing (a box confines a digit to one line) whose eliminations
    /// leave the digit one place in another box: that place is filled.
    DirectPointing,
    /// A claiming (a line confines a digit to one box) whose eliminations
    /// leave the digit one place in another line: that place is filled.
    DirectClaiming,
    /// A hidden pair whose eliminations leave another digit one place in
    /// the house: that place is filled.
    DirectHiddenPair,
    /// A cell with one candidate left.
    NakedSingle,
    /// The direct hidden pair with three digits.
    DirectHiddenTriple,
    /// A digit confined to one row or column within a box leaves the rest
    /// of that row or column.
    Pointing,
    /// A digit confined to one box within a row or column leaves the rest
    /// of that box.
    Claiming,
    /// Two cells of a house with the same two candidates.
    NakedPair,
    /// A digit in two rows confined to two columns, or the transpose.
    XWing,
    /// Two digits with the same two places in a house.
    HiddenPair,
    NakedTriple,
    /// The X-wing with three rows and three columns.
    Swordfish,
    HiddenTriple,
    /// A pivot `{a,b}` seeing pincers `{a,c}` and `{b,c}`: `c` leaves every
    /// cell that sees both pincers.
    XyWing,
    /// A pivot `{a,b,c}` seeing pincers `{a,c}` and `{b,c}`: `c` leaves
    /// every cell that sees all three.
    XyzWing,
    /// Four cells in two rows, two columns and two boxes that would hold
    /// the same two digits twice (a second solution) unless the extra
    /// candidates of some of them are true: types 1 to 4.
    UniqueRectangle,
    /// The unique rectangle on six or more cells.
    UniqueLoop,
    NakedQuad,
    /// The X-wing with four rows and four columns.
    Jellyfish,
    HiddenQuad,
    /// Bivalue universal grave: without the extra candidates of a few
    /// cells, every cell would have two candidates and every digit two
    /// places in each house, which has no single solution; types 1 to 4.
    Bug,
    /// Two cells whose every pair of digits that leaves some bivalue cell
    /// seeing both without a candidate is excluded.
    AlignedPairExclusion,
    /// A cycle of one digit through strong and weak links (see
    /// `chains.rs`); "generalized x-wing" in SE when it has four cells.
    BidirectionalXCycle,
    /// A cycle through bivalue cells.
    BidirectionalYCycle,
    /// A chain of one digit from a candidate assumed true to its
    /// falsehood, or from it assumed false to its truth (see
    /// `chains.rs`).
    ForcingXChain,
    /// The cycle through several digits and houses.
    BidirectionalCycle,
    /// The forcing chain through several digits (links within cells too).
    ForcingChain,
    /// Aligned pair exclusion with three cells (see `aligned.rs`).
    AlignedTripleExclusion,
    /// A candidate whose truth or falsehood contradicts itself within one
    /// digit, the chain seeing its own removals (see `dynamic.rs`).
    NishioForcingChain,
    /// The common conclusions of the chains from every digit of a cell,
    /// or every place of a digit in a house.
    MultipleForcingChain,
    /// Forcing chains that see their own removals: contradictions, double,
    /// cell and region forcing chains.
    DynamicForcingChain,
    /// Dynamic forcing chains whose chains, when they stall, apply
    /// pointing, claiming, hidden and naked pairs and X-wings to their
    /// working grid (SE's "(+)", see `nested.rs`).
    DynamicForcingChainPlus,
    /// The same, with forcing chains nested in the chains.
    NestedForcingChain,
    /// The same, with multiple forcing chains nested too.
    NestedMultipleForcingChain,
    /// The same, with dynamic forcing chains nested.
    NestedDynamicForcingChain,
    /// The same, with nested dynamic forcing chains that are themselves
    /// nested ("+" or deeper).
    NestedDynamicForcingChainPlus,
    /// Trial and error, on the rater's own scale above the ladder and
    /// SE's nested levels (11.0 and up): scored by depth and steps. Only
    /// when every level above finds nothing.
    Search,
}

impl Technique {
    /// Every technique, in the order the path tries them.
    pub const ALL: [Technique; 40] = [
        Technique::FullHouse,
        Technique::HiddenSingleBox,
        Technique::HiddenSingleLine,
        Technique::DirectPointing,
        Technique::DirectClaiming,
        Technique::DirectHiddenPair,
        Technique::NakedSingle,
        Technique::DirectHiddenTriple,
        Technique::Pointing,
        Technique::Claiming,
        Technique::NakedPair,
        Technique::XWing,
        Technique::HiddenPair,
        Technique::NakedTriple,
        Technique::Swordfish,
        Technique::HiddenTriple,
        Technique::XyWing,
        Technique::XyzWing,
        Technique::UniqueRectangle,
        Technique::UniqueLoop,
        Technique::NakedQuad,
        Technique::Jellyfish,
        Technique::HiddenQuad,
        Technique::Bug,
        Technique::AlignedPairExclusion,
        Technique::BidirectionalXCycle,
        Technique::BidirectionalYCycle,
        Technique::ForcingXChain,
        Technique::BidirectionalCycle,
        Technique::ForcingChain,
        Technique::AlignedTripleExclusion,
        Technique::NishioForcingChain,
        Technique::MultipleForcingChain,
        Technique::DynamicForcingChain,
        Technique::DynamicForcingChainPlus,
        Technique::NestedForcingChain,
        Technique::NestedMultipleForcingChain,
        Technique::NestedDynamicForcingChain,
        Technique::NestedDynamicForcingChainPlus,
        Technique::Search,
    ];

    /// The technique's name as the protocol writes it.
    pub fn name(self) -> &'static str {
        match self {
            Technique::FullHouse => "full house",
            Technique::HiddenSingleBox => "hidden single (box)",
            Technique::HiddenSingleLine => "hidden single (line)",
            Technique::DirectPointing => "direct pointing",
            Technique::DirectClaiming => "direct claiming",
            Technique::DirectHiddenPair => "direct hidden pair",
            Technique::NakedSingle => "naked single",
            Technique::DirectHiddenTriple => "direct hidden triple",
            Technique::Pointing => "pointing",
            Technique::Claiming => "claiming",
            Technique::NakedPair => "naked pair",
            Technique::XWing => "x-wing",
            Technique::HiddenPair => "hidden pair",
            Technique::NakedTriple => "naked triple",
            Technique::Swordfish => "swordfish",
            Technique::HiddenTriple => "hidden triple",
            Technique::XyWing => "xy-wing",
            Technique::XyzWing => "xyz-wing",
            Technique::UniqueRectangle => "unique rectangle",
            Technique::UniqueLoop => "unique loop",
            Technique::NakedQuad => "naked quad",
            Technique::Jellyfish => "jellyfish",
            Technique::HiddenQuad => "hidden quad",
            Technique::Bug => "bivalue universal grave",
            Technique::AlignedPairExclusion => "aligned pair exclusion",
            Technique::BidirectionalXCycle => "bidirectional x-cycle",
            Technique::BidirectionalYCycle => "bidirectional y-cycle",
            Technique::ForcingXChain => "forcing x-chain",
            Technique::BidirectionalCycle => "bidirectional cycle",
            Technique::ForcingChain => "forcing chain",
            Technique::AlignedTripleExclusion => "aligned triple exclusion",
            Technique::NishioForcingChain => "nishio forcing chain",
            Technique::MultipleForcingChain => "multiple forcing chain",
            Technique::DynamicForcingChain => "dynamic forcing chain",
            Technique::DynamicForcingChainPlus => "dynamic forcing chain (+)",
            Technique::NestedForcingChain => "dynamic forcing chain (+ forcing chains)",
            Technique::NestedMultipleForcingChain => {
                "dynamic forcing chain (+ multiple forcing chains)"
            }
            Technique::NestedDynamicForcingChain => {
                "dynamic forcing chain (+ dynamic forcing chains)"
            }
            Technique::NestedDynamicForcingChainPlus => {
                "dynamic forcing chain (+ dynamic forcing chains +)"
            }
            Technique::Search => "search",
        }
    }

    /// The technique's lowest difficulty in tenths (SE's base values).
    pub(super) fn tenths(self) -> u16 {
        match self {
            Technique::FullHouse => 10,
            Technique::HiddenSingleBox => 12,
            Technique::HiddenSingleLine => 15,
            Technique::DirectPointing => 17,
            Technique::DirectClaiming => 19,
            Technique::DirectHiddenPair => 20,
            Technique::NakedSingle => 23,
            Technique::DirectHiddenTriple => 25,
            Technique::Pointing => 26,
            Technique::Claiming => 28,
            Technique::NakedPair => 30,
            Technique::XWing => 32,
            Technique::HiddenPair => 34,
            Technique::NakedTriple => 36,
            Technique::Swordfish => 38,
            Technique::HiddenTriple => 40,
            Technique::XyWing => 42,
            Technique::XyzWing => 44,
            Technique::UniqueRectangle => 45,
            Technique::UniqueLoop => 46,
            Technique::NakedQuad => 50,
            Technique::Jellyfish => 52,
            Technique::HiddenQuad => 54,
            Technique::Bug => 56,
            Technique::AlignedPairExclusion => 62,
            Technique::BidirectionalXCycle => 65,
            Technique::BidirectionalYCycle => 65,
            Technique::ForcingXChain => 66,
            Technique::BidirectionalCycle => 70,
            Technique::ForcingChain => 70,
            Technique::AlignedTripleExclusion => 75,
            Technique::NishioForcingChain => 75,
            Technique::MultipleForcingChain => 80,
            Technique::DynamicForcingChain => 85,
            Technique::DynamicForcingChainPlus => 90,
            Technique::NestedForcingChain => 95,
            Technique::NestedMultipleForcingChain => 100,
            Technique::NestedDynamicForcingChain => 105,
            Technique::NestedDynamicForcingChainPlus => 105,
            Technique::Search => SEARCH_BASE,
        }
    }

    /// The scores, in tenths, of a puzzle whose hardest step is of this
    /// technique: from its base ([`Technique::tenths`]) to its top, `None`
    /// when it has none. A technique of one difficulty rates its base
    /// alone. The others rise with the instance (a loop's length and
    /// type, a grave's or a chain's size, a search's depth and steps),
    /// and only the search's rise is bounded.
    pub(crate) fn scores(self) -> (u16, Option<u16>) {
        let base = self.tenths();
        let top = match self {
            Technique::FullHouse
            | Technique::HiddenSingleBox
            | Technique::HiddenSingleLine
            | Technique::DirectPointing
            | Technique::DirectClaiming
            | Technique::DirectHiddenPair
            | Technique::NakedSingle
            | Technique::DirectHiddenTriple
            | Technique::Pointing
            | Technique::Claiming
            | Technique::NakedPair
            | Technique::XWing
            | Technique::HiddenPair
            | Technique::NakedTriple
            | Technique::Swordfish
            | Technique::HiddenTriple
            | Technique::XyWing
            | Technique::XyzWing
            | Technique::NakedQuad
            | Technique::Jellyfish
            | Technique::HiddenQuad
            | Technique::AlignedPairExclusion
            | Technique::AlignedTripleExclusion => Some(base),
            Technique::UniqueRectangle
            | Technique::UniqueLoop
            | Technique::Bug
            | Technique::BidirectionalXCycle
            | Technique::BidirectionalYCycle
            | Technique::ForcingXChain
            | Technique::BidirectionalCycle
            | Technique::ForcingChain
            | Technique::NishioForcingChain
            | Technique::MultipleForcingChain
            | Technique::DynamicForcingChain
            | Technique::DynamicForcingChainPlus
            | Technique::NestedForcingChain
            | Technique::NestedMultipleForcingChain
            | Technique::NestedDynamicForcingChain
            | Technique::NestedDynamicForcingChainPlus => None,
            Technique::Search => Some(SEARCH_TOP),
        };
        (base, top)
    }

    /// The technique's lowest difficulty, with one decimal. Never falls
    /// along [`Technique::ALL`].
    pub fn score(self) -> f64 {
        f64::from(self.tenths()) / 10.0
    }

    pub(super) fn index(self) -> usize {
        self as usize
    }
}
