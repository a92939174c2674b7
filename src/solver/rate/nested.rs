//! The rules SE's nested forcing chains apply inside a chain, each time
//! the chain stalls (its `getAdvancedPotentials`), on the chain's working
//! grid:
//!
//! - level 1 and up: pointing and claiming, hidden pairs, naked pairs and
//!   X-wings, in that order;
//! - level 2: then forcing chains (one chain from a candidate to its own
//!   negation, through one digit or several);
//! - level 3: then multiple forcing chains (cell and region);
//! - level 4: the basic rules, then dynamic forcing chains, themselves of
//!   level `nesting`.
//!
//! The first of these rules that removes anything is the one used. Each
//! candidate it removes becomes a false node of the chain, whose parents
//! are SE's *rule parents*: the removals (false nodes of the chain) the
//! rule needed, that is, the ones that made its pattern. A rule instance
//! that needs no removal of the chain is skipped: it was there before the
//! chain. A nested chain brings its complexity with it, counted once in
//! each conclusion that depends on it.

use smallvec::SmallVec;

use super::dynamic::{Key, Producer, Scratch, Sink, Source, removal, scan};
use super::graph::{Marks, NO_CAUSE, Nested, node};
use super::propagate::{Kind, Places};
use super::reach::{NewLinks, NodeSet};

use super::state::{CELL_BIT, HOUSE_CELLS, HOUSES, HOUSES_OF, State, bits, bivalue, cells_of};
use super::{Budget, Exhausted};

/// A removal made by a rule inside a chain: its false node, its rule
/// parents (a range of [`Advances::pool`]) and, for a nested chain's
/// conclusion, that chain.
pub(super) struct Advanced {
    pub(super) off: usize,
    parents: std::ops::Range<u32>,
    pub(super) nested: Option<Nested>,
}

/// The removals of one stall of a chain, their parents in one pool: kept
/// by the chain and filled afresh at each stall, so that once grown a
/// stall allocates nothing for them.
#[derive(Default)]
pub(super) struct Advances {
    pub(super) list: Vec<Advanced>,
    pool: Vec<u16>,
    /// Where a rule gathers an instance's parents.
    gather: Vec<u16>,
}

impl Advances {
    fn clear(&mut self) {
        self.list.clear();
        self.pool.clear();
    }

    /// The rule parents of `a`, one of [`Advances::list`].
    pub(super) fn parents(&self, a: &Advanced) -> &[u16] {
        &self.pool[a.parents.start as usize..a.parents.end as usize]
    }

    /// Adds `parents` to the pool: their range.
    fn pool(&mut self, parents: &[u16]) -> std::ops::Range<u32> {
        let start = self.pool.len() as u32;
        self.pool.extend_from_slice(parents);
        start..self.pool.len() as u32
    }
}

/// A chain's working grid `current`, the grid `source` before the chain,
/// the cells holding each digit in each, and where each digit may go in
/// each house of `current` (kept by the chain as it removes candidates,
/// not worked out again at each stall).
#[derive(Clone, Copy)]
pub(super) struct Grids<'a> {
    pub(super) source: &'a [u16; 81],
    pub(super) current: &'a [u16; 81],
    pub(super) source_holders: &'a [u128; 9],
    pub(super) holders: &'a [u128; 9],
    /// Where each digit may go in each house of `current`.
    pub(super) places: &'a Places,
}

/// The first rule of `kind`'s level that removes something from the
/// working grid of `grids`: its removals, into `out` (emptied first).
pub(super) fn advanced(
    grids: Grids,
    kind: Kind,
    budget: &mut Budget,
    space: &mut Scratch,
    out: &mut Advances,
) -> Result<(), Exhausted> {
    let (source, current) = (grids.source, grids.current);
    out.clear();
    let grid = Working::new(grids);
    for rule in [locking, hidden_pairs, naked_pairs, x_wings] {
        rule(&grid, out);
        if !out.list.is_empty() {
            return Ok(());
        }
    }
    let state = State::with_candidates(*current);
    let producers: &[Inner] = match kind.level {
        0 | 1 => &[],
        2 => &[Inner::Forcing],
        3 => &[Inner::Forcing, Inner::Chains(Producer::Multiple)],
        _ => &[Inner::Chains(Producer::Nested {
            level: kind.nesting,
            nesting: 0,
        })],
    };
    let links = (!producers.is_empty())
        .then(|| NewLinks::with_holders(source, current, grids.source_holders, grids.holders));
    for &inner in producers {
        let mut collect = Collect {
            state: &state,
            source,
            hints: Vec::new(),
            // Only static chains' conclusions are spared.
            passing: match inner {
                Inner::Chains(Producer::Multiple) => links.as_ref().map(|l| {
                    // The sets the scan's region and cell chains ask for
                    // too (`scan` begins on the same grid).
                    space.statics.begin(current);
                    l.passing(&mut space.statics)
                }),
                _ => None,
            },
        };
        match inner {
            Inner::Forcing => forcing_chains(&state, &mut collect, budget, space, links.as_ref())?,
            Inner::Chains(producer) => {
                // The working grid's solution, if any, is not known.
                scan(&state, producer, &mut collect, budget, space, 0x1FF, None)?
            }
        }
        collect.into_removals(out);
        if !out.list.is_empty() {
            break;
        }
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Inner {
    Forcing,
    Chains(Producer),
}

/// The working grid with, per digit, where it may go and where it was
/// removed.
struct Working<'a> {
    source: &'a [u16; 81],
    current: &'a [u16; 81],
    holders: [u128; 9],
    places: &'a Places,
    removed: [u128; 9],
    /// Per digit, the houses (bit per house) where it was removed: a rule
    /// instance needs a removal in its pattern, so only these can hold
    /// one that counts.
    touched: [u32; 9],
    /// The cells that lost a candidate.
    lost: u128,
    /// Cells with two candidates.
    bivalue: u128,
}

impl Working<'_> {
    fn new(grids: Grids<'_>) -> Working<'_> {
        let (source, current) = (grids.source, grids.current);
        let removed: [u128; 9] =
            std::array::from_fn(|d| grids.source_holders[d] & !grids.holders[d]);
        let touched = removed.map(|cells| {
            cells_of(cells).fold(0u32, |set, c| {
                HOUSES_OF[c].iter().fold(set, |set, &h| set | 1 << h)
            })
        });
        Working {
            source,
            current,
            holders: *grids.holders,
            places: grids.places,
            removed,
            touched,
            lost: removed.iter().fold(0, |all, &cells| all | cells),
            bivalue: bivalue(current),
        }
    }

    /// Removals of several digits and cells, all with `parents`, in SE's
    /// order: SE keeps a rule's removals in a hash map keyed by cell,
    /// whose hash is the cell's number, so they come out by bucket (the
    /// number modulo the table's size: 16, doubled while the map is more
    /// than three-quarters full), in insertion order within a bucket, and
    /// each cell's digits in increasing order. `removals` are (cell,
    /// digits) in the order the rule inserts them; the digits are kept to
    /// those the working grid still has.
    /// The parents are those gathered in `out` ([`Advances::gather`]).
    fn remove_in_se_order(&self, removals: impl Iterator<Item = (usize, u16)>, out: &mut Advances) {
        if out.gather.is_empty() {
            return;
        }
        let mut cells: SmallVec<[(usize, u16); 16]> = removals
            .map(|(c, digits)| (c, digits & self.current[c]))
            .filter(|&(_, digits)| digits != 0)
            .collect();
        let mut table = 16;
        while cells.len() * 4 > table * 3 {
            table *= 2;
        }
        // Stable: insertion order within a bucket.
        cells.sort_by_key(|&(c, _)| c & (table - 1));
        if cells.is_empty() {
            return;
        }
        let gathered = std::mem::take(&mut out.gather);
        let parents = out.pool(&gathered);
        out.gather = gathered;
        for (c, digits) in cells {
            for d in bits(digits) {
                out.list.push(Advanced {
                    off: node(c, d, false),
                    parents: parents.clone(),
                    nested: None,
                });
            }
        }
    }

    /// The false nodes of `d`'s removals in `cells`.
    fn removed_in(&self, d: usize, cells: u128, out: &mut Vec<u16>) {
        out.extend(cells_of(cells & self.removed[d]).map(|c| node(c, d, false) as u16));
    }
}

const ROWS: std::ops::Range<usize> = 0..9;
const COLUMNS: std::ops::Range<usize> = 9..18;
const BOXES: std::ops::Range<usize> = 18..27;

/// Pointing and claiming: a digit confined to one line within a box (or
/// one box within a line) leaves the rest of that line (box). Parents:
/// the digit's removals in the house it is confined in. In SE's order:
/// boxes into columns, boxes into rows, columns into boxes, rows into
/// boxes; within each, digit by digit, then by the confining house and
/// the house it is confined in.
fn locking(grid: &Working, out: &mut Advances) {
    // Each base with its covers' kind among a cell's houses (row 0,
    // column 1, box 2).
    for (bases, cover_kind) in [(BOXES, 1), (BOXES, 0), (COLUMNS, 2), (ROWS, 2)] {
        for d in 0..9 {
            // Its parents are the digit's removals in the base.
            let touched = (grid.touched[d] >> bases.start) as u16 & 0x1FF;
            for base in bits(touched).map(|i| bases.start + i) {
                let places = HOUSE_CELLS[base] & grid.holders[d];
                if places.count_ones() < 2 {
                    continue;
                }
                // Only a house of the first place can hold them all.
                let first = places.trailing_zeros() as usize;
                let cover = usize::from(HOUSES_OF[first][cover_kind]);
                let cover_cells = HOUSE_CELLS[cover];
                let rest = cover_cells & !HOUSE_CELLS[base] & grid.holders[d];
                if places & !cover_cells == 0 && rest != 0 {
                    out.gather.clear();
                    grid.removed_in(d, HOUSE_CELLS[base], &mut out.gather);
                    grid.remove_in_se_order(cells_of(rest).map(|c| (c, 1 << d)), out);
                }
            }
        }
    }
}

/// Hidden pairs: two digits confined to the same two cells of a house
/// leave those cells' other digits. Parents: the two digits' removals in
/// the house's other cells.
fn hidden_pairs(grid: &Working, out: &mut Advances) {
    for house in [BOXES, ROWS, COLUMNS].into_iter().flatten() {
        let cells = HOUSE_CELLS[house];
        // Its parents are removals in the house.
        if cells & grid.lost == 0 {
            continue;
        }
        // The digits with two places in the house.
        let two = (0..9)
            .filter(|&d| grid.places[house][d].count_ones() == 2)
            .fold(0u16, |set, d| set | 1 << d);
        for d1 in bits(two) {
            let p1 = cells & grid.holders[d1];
            for d2 in bits(two & !((2u16 << d1) - 1)) {
                if cells & grid.holders[d2] != p1 {
                    continue;
                }
                out.gather.clear();
                grid.removed_in(d1, cells & !p1, &mut out.gather);
                grid.removed_in(d2, cells & !p1, &mut out.gather);
                let others = 0x1FF & !(1 << d1 | 1 << d2);
                grid.remove_in_se_order(cells_of(p1).map(|c| (c, others)), out);
            }
        }
    }
}

/// Naked pairs: two cells of a house with the same two candidates leave
/// the rest of the house. Parents: the two cells' removals.
fn naked_pairs(grid: &Working, out: &mut Advances) {
    for house in [BOXES, ROWS, COLUMNS].into_iter().flatten() {
        let pairs = HOUSE_CELLS[house] & grid.bivalue;
        for a in cells_of(pairs) {
            let pair = grid.current[a];
            for b in cells_of(pairs & !((CELL_BIT[a] << 1) - 1)) {
                // Its parents are the two cells' removals.
                if grid.current[b] != pair || (CELL_BIT[a] | CELL_BIT[b]) & grid.lost == 0 {
                    continue;
                }
                out.gather.clear();
                for c in [a, b] {
                    let gone = grid.source[c] & !grid.current[c];
                    out.gather
                        .extend(bits(gone).map(|e| node(c, e, false) as u16));
                }
                let rest = HOUSE_CELLS[house] & !(CELL_BIT[a] | CELL_BIT[b]);
                grid.remove_in_se_order(cells_of(rest).map(|c| (c, pair)), out);
            }
        }
    }
}

/// X-wings: a digit whose places in two rows (columns) lie in the same
/// two columns (rows) leaves the rest of those. Parents: the digit's
/// removals in the two base lines.
fn x_wings(grid: &Working, out: &mut Advances) {
    // Rows as bases, columns as covers (kind 1 of a cell's houses); then
    // the other way round.
    for (bases, cover_kind) in [(ROWS, 1), (COLUMNS, 0)] {
        for d in 0..9 {
            // The base lines where the digit has two places.
            let two = bases
                .clone()
                .filter(|&l| grid.places[l][d].count_ones() == 2)
                .fold(0u16, |set, l| set | 1 << (l - bases.start));
            for a in bits(two).map(|i| bases.start + i) {
                let pa = HOUSE_CELLS[a] & grid.holders[d];
                for b in bits(two & !((2u16 << (a - bases.start)) - 1)).map(|i| bases.start + i) {
                    // Its parents are the digit's removals in the two
                    // base lines.
                    if grid.touched[d] & (1 << a | 1 << b) == 0 {
                        continue;
                    }
                    let b_cells = HOUSE_CELLS[b];
                    let pb = b_cells & grid.holders[d];
                    // The cover lines through the four places: two, or
                    // no wing.
                    let lines = cells_of(pa | pb).fold(0u32, |set, c| {
                        let line = HOUSES_OF[c].map(usize::from)[cover_kind];
                        set | 1 << line
                    });
                    if lines.count_ones() != 2 {
                        continue;
                    }
                    let (l0, l1) = (lines.trailing_zeros(), 31 - lines.leading_zeros());
                    let base_cells = HOUSE_CELLS[a] | b_cells;
                    out.gather.clear();
                    grid.removed_in(d, base_cells, &mut out.gather);
                    // SE inserts them cover line by cover line, each in
                    // its own order (along a column: by row).
                    let removals = [l0, l1].into_iter().flat_map(|line| {
                        HOUSES[line as usize]
                            .iter()
                            .map(|&c| usize::from(c))
                            .filter(|&c| base_cells & CELL_BIT[c] == 0)
                            .map(|c| (c, 1 << d))
                    });
                    grid.remove_in_se_order(removals, out);
                }
            }
        }
    }
}

/// A conclusion of a nested chaining rule.
struct Hint {
    key: Key,
    cell: usize,
    elim: u16,
    parents: Vec<u16>,
    print: u64,
}

/// Collects a nested producer's conclusions with their rule parents.
struct Collect<'a> {
    state: &'a State,
    source: &'a [u16; 81],
    hints: Vec<Hint>,
    /// For static chains, when set: the nodes whose chain can pass a link
    /// the outer chain made ([`NewLinks::passing`]).
    passing: Option<NodeSet>,
}

impl Sink for Collect<'_> {
    /// A conclusion without rule parents is skipped. Its rule parents are
    /// the removals its chains' true nodes needed: those made through a
    /// link the outer chain made, which a chain meets only if it can pass
    /// one, and the start's own (the region's places of the digit, the
    /// cell's candidates) where the outer chain removed some.
    fn wants_region(&self, house: usize, d: usize) -> bool {
        let Some(passing) = &self.passing else {
            return true;
        };
        HOUSES[house].iter().any(|&c| {
            let c = usize::from(c);
            let (before, now) = (self.source[c] >> d & 1, self.state.cand[c] >> d & 1);
            before != now || (now == 1 && passing.has(node(c, d, true)))
        })
    }

    fn wants_cell(&self, cell: usize) -> bool {
        let Some(passing) = &self.passing else {
            return true;
        };
        self.source[cell] != self.state.cand[cell]
            || bits(self.state.cand[cell]).any(|d| passing.has(node(cell, d, true)))
    }

    fn offer(&mut self, key: Key, target: usize, sources: &[Source], marks: &mut Marks) {
        let (cell, elim) = removal(self.state, target);
        if elim == 0 {
            return;
        }
        let mut parents = Vec::new();
        let mut print = 0u64;
        for s in sources {
            let p = s.graph.rule_parents(
                s.node,
                s.start,
                self.source,
                &self.state.cand,
                marks,
                &mut parents,
            );
            print = print.wrapping_add(p);
        }
        if parents.is_empty() {
            return;
        }
        parents.sort_unstable();
        parents.dedup();
        self.hints.push(Hint {
            key,
            cell,
            elim,
            parents,
            print,
        });
    }
}

impl Collect<'_> {
    /// The removals, hints in SE's order (by key; stable).
    fn into_removals(mut self, out: &mut Advances) {
        self.hints.sort_by_key(|h| h.key);
        for h in self.hints {
            let nested = Nested {
                print: h.print,
                complexity: h.key.1,
            };
            let parents = out.pool(&h.parents);
            for d in bits(h.elim) {
                out.list.push(Advanced {
                    off: node(h.cell, d, false),
                    parents: parents.clone(),
                    nested: Some(nested),
                });
            }
        }
    }
}

/// SE's forcing chains (not dynamic; one digit, then several): a
/// candidate whose truth reaches its falsehood is removed, one whose
/// falsehood reaches its truth placed. (Its cycles are not searched
/// here.) Sparing with the outer chain's new links, only from the starts
/// whose chain can have rule parents: those that reach their negation
/// through a link the outer chain made ([`NewLinks::forced_through`]);
/// without, from every start that reaches its negation, of every digit
/// the outer chain removed (the hints are the same).
///
/// A hint keeps only its rule parents, the removals its links needed,
/// and only a link the outer chain's removals made has any (a cell's
/// removed candidates, or the digit's removed places in the house, where
/// it is left two): so a chain of one digit counts only for a digit with
/// such a link in a house, and with links inside cells only where there
/// is one at all.
fn forcing_chains(
    state: &State,
    sink: &mut Collect,
    budget: &mut Budget,
    space: &mut Scratch,
    spare: Option<&NewLinks>,
) -> Result<(), Exhausted> {
    let Scratch {
        chain,
        marks,
        nests,
        reach,
        ..
    } = space;
    let (x_digits, y_link) = if let Some(links) = spare {
        links.kinds()
    } else {
        let removed = (0..81).fold(0u16, |m, c| m | (sink.source[c] & !state.cand[c]));
        (removed, true)
    };
    for (y, base) in [(false, 66u16), (true, 70)] {
        if y && !y_link && x_digits == 0 {
            continue;
        }
        // Sparing, only the starts that reach their negation through a
        // new link; without, every start that reaches it.
        let through = spare.map(|links| links.forced_through(y, x_digits));
        if through.is_none() {
            reach.build(&state.cand, y, x_digits, false);
        }
        // One unit of work per node of the graph of links.
        let nodes = 2 * state.cand.iter().map(|c| c.count_ones()).sum::<u32>();
        if !budget.spend_many(u64::from(nodes)) {
            return Err(Exhausted);
        }
        if through.is_some_and(|starts| starts.is_empty()) {
            continue;
        }
        for cell in (0..81).filter(|&c| state.cand[c].count_ones() >= 2) {
            for d in bits(state.cand[cell]) {
                // A chain of one digit with no link made by the outer
                // chain has no rule parents: its hints would be skipped.
                if !y && x_digits & (1 << d) == 0 {
                    continue;
                }
                for start in [node(cell, d, true), node(cell, d, false)] {
                    // Only a chain that reaches its target is followed.
                    let reaches = match &through {
                        Some(starts) => starts.has(start),
                        None => reach.reaches_conjugate(start),
                    };
                    if !reaches {
                        continue;
                    }
                    let forced = chain.forcing(state, y, start, budget)?;
                    debug_assert!(forced, "a start that reaches its negation");
                    if !forced {
                        continue;
                    }
                    let target = start ^ 1;
                    let c = chain.graph.count(target, marks, nests);
                    let key = (base + super::chains::length_tenths(c), c, 0);
                    let sources = [Source {
                        graph: &chain.graph,
                        node: target,
                        start: NO_CAUSE,
                    }];
                    sink.offer(key, target, &sources, marks);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::state::holders;
    use super::*;

    const LEVEL_1: Kind = Kind {
        y: true,
        dynamic: true,
        level: 1,
        nesting: 0,
    };

    /// A removal as [`advanced`] gives it, with its parents read out.
    struct Got {
        off: usize,
        parents: Vec<u16>,
        nested: Option<Nested>,
    }

    fn run(source: &[u16; 81], current: &[u16; 81]) -> Vec<Got> {
        let mut budget = Budget { left: u64::MAX };
        let (source_holders, holders) = (holders(source), holders(current));
        let places = super::super::propagate::places(current);
        let grids = Grids {
            source,
            current,
            source_holders: &source_holders,
            holders: &holders,
            places: &places,
        };
        let mut out = Advances::default();
        advanced(grids, LEVEL_1, &mut budget, &mut Scratch::new(), &mut out).unwrap();
        out.list
            .iter()
            .map(|a| Got {
                off: a.off,
                parents: out.parents(a).to_vec(),
                nested: a.nested,
            })
            .collect()
    }

    /// The false nodes of digit `d` (0-based) in `cells`, sorted.
    fn offs(d: usize, cells: &[usize]) -> Vec<u16> {
        let mut v: Vec<u16> = cells.iter().map(|&c| node(c, d, false) as u16).collect();
        v.sort_unstable();
        v
    }

    fn removed(found: &[Got]) -> Vec<u16> {
        let mut v: Vec<u16> = found.iter().map(|a| a.off as u16).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Sparing the forcing chains without a link the outer chain made
    /// changes no hint: at states of the rated paths of generated and
    /// hard puzzles, with random candidates removed as a chain would
    /// (cells keep one at least), the hints with and without sparing
    /// are the same, keys, removals and rule parents. Both hints and
    /// spared passes occur.
    /// The links the outer chain's removals made, from the grid before it
    /// (`source`) to the chain's working grid (`current`): the digits left
    /// two places in some house where they had more (links within a house),
    /// and whether some cell was left two candidates where it had more
    /// (links inside a cell). These are the links whose true node has rule
    /// parents: a cell's removed candidates, or the digit's removed places
    /// in the house.
    fn new_links(source: &[u16; 81], current: &[u16; 81]) -> (u16, bool) {
        let (now, before) = (holders(current), holders(source));
        let mut digits = 0u16;
        for d in 0..9 {
            if now[d] == before[d] {
                continue;
            }
            if HOUSE_CELLS.iter().any(|&house| {
                (house & now[d]).count_ones() == 2 && (house & before[d]).count_ones() > 2
            }) {
                digits |= 1 << d;
            }
        }
        let cell = (0..81).any(|c| current[c].count_ones() == 2 && source[c].count_ones() > 2);
        (digits, cell)
    }

    /// Where the static chains of a region's places, or of a cell's
    /// candidates (three or more), followed on the chain engine, all find
    /// some node that removes something, the static chains' sets say so:
    /// the regions and cells that the multiple forcing chains pass over
    /// on their word conclude nothing. On the states of rated paths, and
    /// on those states thinned out as a chain's removals leave them.
    #[test]
    fn static_sets_keep_every_region_and_cell_that_concludes() {
        use super::super::graph::{NODE_WORDS, NODES};
        use super::super::propagate::Chain;
        use super::super::reach::StaticReach;
        use super::super::tests::{for_each_state_on_path, mid_and_hard_puzzles};
        use rand::SeedableRng;
        use rand::rngs::ChaCha8Rng;
        let mut rng = ChaCha8Rng::seed_from_u64(41);
        let mut chain = Chain::new();
        let mut statics = StaticReach::new();
        let (kind, _) = Producer::Multiple.kind();
        let (mut groups, mut concluding, mut spared) = (0, 0, 0);
        for grid in &mid_and_hard_puzzles(31, 12) {
            for_each_state_on_path(grid, |state, _| {
                for cand in [state.cand, thinned(&state.cand, &mut rng)] {
                    let inner = State::with_candidates(cand);
                    statics.begin(&cand);
                    let mut free = Budget { left: u64::MAX };
                    let mut seen = vec![[0u64; NODE_WORDS]; 81 * 9];
                    for cell in 0..81 {
                        for d in bits(cand[cell]) {
                            chain
                                .run(&inner, kind, node(cell, d, true), &mut free)
                                .unwrap();
                            seen[cell * 9 + d].copy_from_slice(chain.graph.seen());
                        }
                    }
                    let mut starts: Vec<Vec<(usize, usize)>> = Vec::new();
                    for cells in HOUSES {
                        for d in 0..9 {
                            let places: Vec<(usize, usize)> = cells
                                .iter()
                                .map(|&c| usize::from(c))
                                .filter(|&c| cand[c] >> d & 1 == 1)
                                .map(|c| (c, d))
                                .collect();
                            if places.len() >= 2 {
                                starts.push(places);
                            }
                        }
                    }
                    for cell in (0..81).filter(|&c| cand[c].count_ones() >= 3) {
                        starts.push(bits(cand[cell]).map(|d| (cell, d)).collect());
                    }
                    for group in starts {
                        let mut common = [!0u64; NODE_WORDS];
                        for &(c, d) in &group {
                            for (a, b) in common.iter_mut().zip(&seen[c * 9 + d]) {
                                *a &= b;
                            }
                        }
                        let concludes = (0..NODES).any(|q| {
                            common[q / 64] >> (q % 64) & 1 == 1 && removal(&inner, q).1 != 0
                        });
                        let kept = statics.share_removal(group.iter().copied());
                        assert!(kept || !concludes, "{group:?}");
                        groups += 1;
                        concluding += usize::from(concludes);
                        spared += usize::from(!kept);
                    }
                }
            });
        }
        assert!(concluding > 200, "{concluding} of {groups}");
        assert!(spared > 2000, "{spared} of {groups}");
    }

    /// `source` with up to eleven random candidates removed, none a
    /// cell's last, as a chain's removals would leave it.
    fn thinned(source: &[u16; 81], rng: &mut impl rand::Rng) -> [u16; 81] {
        use rand::RngExt;
        let mut current = *source;
        for _ in 0..rng.random_range(1..12) {
            let cell = rng.random_range(0..81);
            let d = rng.random_range(0..9);
            if current[cell].count_ones() > 1 {
                current[cell] &= !(1 << d);
            }
        }
        current
    }

    /// The multiple forcing chains of a chain's working grid give the
    /// same hints, in the same order, whether the regions and cells none
    /// of whose chains can pass a link the outer chain made (and whose
    /// own candidates it left alone) are followed or not; and many are
    /// not.
    #[test]
    fn sparing_multiple_chains_that_pass_no_new_link_changes_no_hint() {
        use super::super::tests::{for_each_state_on_path, mid_and_hard_puzzles};
        use rand::SeedableRng;
        use rand::rngs::ChaCha8Rng;
        let mut rng = ChaCha8Rng::seed_from_u64(31);
        let mut space = Scratch::new();
        let (mut hinted, mut spared, mut states) = (0, 0, 0);
        for grid in mid_and_hard_puzzles(37, 8) {
            for_each_state_on_path(&grid, |state, _| {
                let source = state.cand;
                let current = thinned(&source, &mut rng);
                let inner = State::with_candidates(current);
                let mut hints = |passing: Option<NodeSet>| {
                    let mut collect = Collect {
                        state: &inner,
                        source: &source,
                        hints: Vec::new(),
                        passing,
                    };
                    let spared = (0..27)
                        .flat_map(|h| (0..9).map(move |d| (h, d)))
                        .filter(|&(h, d)| !collect.wants_region(h, d))
                        .count()
                        + (0..81).filter(|&c| !collect.wants_cell(c)).count();
                    let mut budget = Budget { left: u64::MAX };
                    let multiple = Producer::Multiple;
                    scan(
                        &inner,
                        multiple,
                        &mut collect,
                        &mut budget,
                        &mut space,
                        0x1FF,
                        None,
                    )
                    .unwrap();
                    let hints: Vec<_> = collect
                        .hints
                        .into_iter()
                        .map(|h| (h.key, h.cell, h.elim, h.parents, h.print))
                        .collect();
                    (hints, spared)
                };
                let mut statics = super::super::reach::StaticReach::new();
                statics.begin(&current);
                let passing = NewLinks::new(&source, &current).passing(&mut statics);
                let (with, spared_here) = hints(Some(passing));
                let (without, _) = hints(None);
                assert_eq!(with, without, "{grid}");
                hinted += usize::from(!with.is_empty());
                spared += usize::from(spared_here > 0);
                states += 1;
            });
        }
        assert!(states > 100, "{states}");
        assert!(hinted > 20, "{hinted}");
        assert!(spared > 50, "{spared}");
    }

    #[test]
    fn sparing_chains_without_new_links_changes_no_hint() {
        use super::super::tests::{for_each_state_on_path, mid_and_hard_puzzles};
        use rand::SeedableRng;
        use rand::rngs::ChaCha8Rng;
        let mut rng = ChaCha8Rng::seed_from_u64(23);
        let mut space = Scratch::new();
        let (mut hinted, mut spared, mut states) = (0, 0, 0);
        for grid in &mid_and_hard_puzzles(29, 20) {
            for_each_state_on_path(grid, |state, _| {
                let source = state.cand;
                let current = thinned(&source, &mut rng);
                let inner = State::with_candidates(current);
                let links = NewLinks::new(&source, &current);
                assert_eq!(links.kinds(), new_links(&source, &current));
                let mut hints = |spare| {
                    let mut collect = Collect {
                        state: &inner,
                        source: &source,
                        hints: Vec::new(),
                        passing: None,
                    };
                    let mut budget = Budget { left: u64::MAX };
                    forcing_chains(&inner, &mut collect, &mut budget, &mut space, spare).unwrap();
                    collect
                        .hints
                        .into_iter()
                        .map(|h| (h.key, h.cell, h.elim, h.parents, h.print))
                        .collect::<Vec<_>>()
                };
                let (with, without) = (hints(Some(&links)), hints(None));
                assert_eq!(with, without, "{grid}");
                hinted += usize::from(!with.is_empty());
                let removed = (0..81).fold(0u16, |m, c| m | (source[c] & !current[c]));
                let (digits, cell) = new_links(&source, &current);
                spared += usize::from(digits != removed || !cell);
                states += 1;
            });
        }
        assert!(states > 300, "{states}");
        assert!(hinted > 20, "{hinted}");
        assert!(spared > 100, "{spared}");
    }

    /// A chain removed 1 from the lower two rows of box 1 (cells 9-11 and
    /// 18-20): 1 is left to the top row of the box, so pointing removes it
    /// from the rest of row 1, with those six removals as its parents.
    #[test]
    fn pointing_made_by_the_chain_names_the_removals_it_needed() {
        let source = [0x1FF; 81];
        let mut current = source;
        for c in [9, 10, 11, 18, 19, 20] {
            current[c] &= !1;
        }
        let found = run(&source, &current);
        assert_eq!(removed(&found), offs(0, &[3, 4, 5, 6, 7, 8]));
        for a in &found {
            let mut parents = a.parents.clone();
            parents.sort_unstable();
            assert_eq!(parents, offs(0, &[9, 10, 11, 18, 19, 20]));
            assert!(a.nested.is_none());
        }
    }

    /// The same pattern already in the grid before the chain is no
    /// deduction of the chain: nothing comes of it.
    #[test]
    fn a_pattern_the_chain_did_not_make_is_skipped() {
        let mut source = [0x1FF; 81];
        for c in [9, 10, 11, 18, 19, 20] {
            source[c] &= !1;
        }
        assert!(run(&source, &source).is_empty());
    }

    /// The chain left 5 in rows 1 and 5 only in columns 1 and 5: an
    /// X-wing, which clears those columns; its parents are 5's removals in
    /// the two rows.
    #[test]
    fn x_wing_made_by_the_chain_clears_its_columns() {
        // 5 (digit 4) left in rows 1 and 5 only in columns 1 and 5.
        let source = [0x1FF; 81];
        let mut current = source;
        for row in [0usize, 4] {
            for col in 0..9 {
                if col != 0 && col != 4 {
                    current[row * 9 + col] &= !(1 << 4);
                }
            }
        }
        let found = run(&source, &current);
        let expected: Vec<usize> = [0usize, 4]
            .iter()
            .flat_map(|&col| {
                (0..9)
                    .filter(|&r| r != 0 && r != 4)
                    .map(move |r| r * 9 + col)
            })
            .collect();
        assert_eq!(removed(&found), offs(4, &expected));
        let base: Vec<usize> = [0usize, 4]
            .iter()
            .flat_map(|&row| {
                (0..9)
                    .filter(|&c| c != 0 && c != 4)
                    .map(move |c| row * 9 + c)
            })
            .collect();
        for a in &found {
            let mut parents = a.parents.clone();
            parents.sort_unstable();
            assert_eq!(parents, offs(4, &base));
        }
    }

    /// Two cells of row 1 left by the chain with 1 and 2 only: a naked
    /// pair, whose parents are the two cells' removals, and 1 and 2 leave
    /// the rest of the row (and of box 1, the pair's box too).
    #[test]
    fn naked_pair_made_by_the_chain_clears_its_house() {
        let source = [0x1FF; 81];
        let mut current = source;
        // Cells 0 and 4 (different boxes): only 1 and 2.
        current[0] = 0b11;
        current[4] = 0b11;
        let found = run(&source, &current);
        let mut expected: Vec<u16> = Vec::new();
        for d in [0usize, 1] {
            for c in (1..9).filter(|&c| c != 4) {
                expected.push(node(c, d, false) as u16);
            }
        }
        expected.sort_unstable();
        assert_eq!(removed(&found), expected);
        let mut parents_expected: Vec<u16> = Vec::new();
        for c in [0usize, 4] {
            for e in 2..9 {
                parents_expected.push(node(c, e, false) as u16);
            }
        }
        parents_expected.sort_unstable();
        for a in &found {
            let mut parents = a.parents.clone();
            parents.sort_unstable();
            assert_eq!(parents, parents_expected);
        }
    }

    /// SE's order inside a chain: pointing into columns digit by digit
    /// (1 in box 6 before 6 in box 3, though box 3 comes first), and each
    /// instance's removals by hash bucket, the cell's number modulo 16.
    #[test]
    fn pointing_comes_digit_by_digit_with_removals_in_hash_order() {
        let source = [0x1FF; 81];
        let mut current = source;
        // 1 left to column 7 in box 6 (rows 4-6), 6 to column 7 in box 3
        // (rows 1-3).
        for r in 3..6 {
            current[9 * r + 7] &= !1;
            current[9 * r + 8] &= !1;
        }
        for r in 0..3 {
            current[9 * r + 7] &= !(1 << 5);
            current[9 * r + 8] &= !(1 << 5);
        }
        let found: Vec<usize> = run(&source, &current).iter().map(|a| a.off).collect();
        // Column 7 outside box 6 for 1: cells 6, 15, 24, 60, 69, 78, whose
        // buckets are 6, 15, 8, 12, 5, 14; outside box 3 for 6: cells 33,
        // 42, 51, 60, 69, 78, buckets 1, 10, 3, 12, 5, 14.
        let expected: Vec<usize> = [69, 6, 24, 60, 78, 15]
            .map(|c| node(c, 0, false))
            .into_iter()
            .chain([33, 51, 69, 42, 60, 78].map(|c| node(c, 5, false)))
            .collect();
        assert_eq!(found, expected);
    }
}
