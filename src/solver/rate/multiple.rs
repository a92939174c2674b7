//! SE's multiple forcing chains (8.0: cell and region forcing chains) when
//! only the first easiest conclusion is wanted, as the ladder wants it.
//!
//! These chains are static: the grid does not change along them, and the
//! engine (`propagate.rs`) finds each node first at its distance from the
//! start (a true node's pending consequences go first, but the false
//! nodes wait in the order they were found, so the queue never holds a
//! node nearer the start behind a farther one of its truth), with one
//! parent. A node's ancestors are then its shortest chain back to the
//! start, and a conclusion's complexity is the sum, over its chains, of
//! the node's distance plus one. Those distances come from a search by
//! layers on bit sets (`chains.rs`), far cheaper than following each
//! chain node by node, run only from the starts of the regions and cells
//! whose chains share a node that removes something: the grid's
//! components (`reach.rs`) tell which nodes each start reaches, and most
//! share none. Two things only the engine knows are left to it:
//!
//! - a chain that meets a contradiction stops there, with what it found
//!   so far: when a start's search reaches both truths of a candidate,
//!   the whole producer runs on the engine instead;
//! - among a region's conclusions of the same key, the one kept is the
//!   first in the order the first place's chain found them: when two or
//!   more tie, that chain is followed to find it.
//!
//! The work counted is the engine's: one unit per node of every chain the
//! producer runs.

use smallvec::SmallVec;

use super::chains::{Graph, Links, Search, length_tenths};
use super::dynamic::{CELL, Key, Producer, REGION, Scratch, removal};
use super::graph::{houses, node};
use super::propagate::{Chain, Kind};
use super::reach::StaticReach;
use super::state::{HOUSES, Index, State, bits, cells_of, cells_where, has};
use super::{Budget, Exhausted};

/// A conclusion: its key, its cell and the candidates it removes there.
pub(super) type Conclusion = (Key, usize, u16);

/// One start's search: where its layers lie among those the search kept,
/// and the nodes reached, by truth, as cell sets per digit.
#[derive(Clone, Copy)]
struct Reached {
    first: u32,
    len: u32,
    on: [u128; 9],
    off: [u128; 9],
}

/// The searches of one producer call, kept between calls.
pub(super) struct Layers {
    /// Keeps every start's layers, in order.
    search: Search,
    reached: Vec<Reached>,
    /// Per candidate (`cell * 9 + digit`), its entry in `reached`.
    slot: Vec<u32>,
}

const NO_SLOT: u32 = u32::MAX;

impl Layers {
    pub(super) fn new() -> Layers {
        Layers {
            search: Search::new(),
            reached: Vec::new(),
            slot: vec![NO_SLOT; 81 * 9],
        }
    }

    fn of(&self, cell: usize, d: usize) -> &Reached {
        &self.reached[self.slot[cell * 9 + d] as usize]
    }

    /// Searches from `d` in `cell` true, unless that search is kept. It
    /// reaches the nodes `statics` gives.
    fn ensure(
        &mut self,
        state: &State,
        graph: &Graph,
        statics: &mut StaticReach,
        cell: usize,
        d: usize,
    ) -> Result<(), Exhausted> {
        if self.slot[cell * 9 + d] != NO_SLOT {
            return Ok(());
        }
        // Its work is counted already, from the components.
        let mut free = Budget { left: u64::MAX };
        let links = Links { x: true, y: true };
        self.search
            .keep(state, graph, links, node(cell, d, true), &mut free)?;
        let (on, off, _) = self.search.reached();
        debug_assert!(statics.reached_from(cell, d).sides() == (on, off));
        let r = Reached {
            first: self.search.first() as u32,
            len: self.search.layers().len() as u32,
            on: *on,
            off: *off,
        };
        self.slot[cell * 9 + d] = self.reached.len() as u32;
        self.reached.push(r);
        Ok(())
    }

    /// The distance of the node `(cell, d, on)` from the start of `r` (a
    /// true node), which reached it.
    fn dist(&self, r: &Reached, cell: usize, d: usize, on: bool) -> u32 {
        let layers = &self.search.kept()[r.first as usize..(r.first + r.len) as usize];
        let mut k = usize::from(!on);
        while k < layers.len() {
            if has(layers[k][d], cell) {
                return k as u32;
            }
            k += 2;
        }
        u32::MAX
    }
}

/// The first conclusion of least key of SE's multiple forcing chains in
/// `state`, as the engine's scan gives it (`dynamic::scan` with
/// `Producer::Multiple`): its key, cell and candidates removed. `None`
/// when a chain meets a contradiction, which the engine must then run.
pub(super) fn easiest(
    state: &State,
    budget: &mut Budget,
    space: &mut Scratch,
) -> Result<Option<Option<Conclusion>>, Exhausted> {
    let index = Index::new(state);
    // The starts the engine runs: every candidate of a cell of three
    // candidates or more, and every place of a region whose first place
    // is such a cell.
    let mut starts = [0u16; 81];
    for cell in (0..81).filter(|&c| state.cand[c].count_ones() >= 3) {
        starts[cell] |= state.cand[cell];
        for d in bits(state.cand[cell]) {
            for house in houses(cell) {
                let places = index.places[house][d];
                if places.count_ones() >= 2 && first_place(house, places) == cell {
                    for i in bits(places) {
                        starts[usize::from(HOUSES[house][i])] |= 1 << d;
                    }
                }
            }
        }
    }
    let Scratch {
        chain,
        layers,
        graph,
        statics,
        unary,
        ..
    } = space;
    // What each start reaches comes from the grid's components: a start
    // that reaches both truths of a candidate sends the producer to the
    // engine, and the work is the nodes every start reaches, as its
    // search would count them. The unary chaining, asked first on this
    // grid, has mostly made those components already.
    statics.begin_with(&state.cand, Some(&mut unary.reach[1]));
    let mut work = 0u64;
    for (cell, &digits) in starts.iter().enumerate() {
        for d in bits(digits) {
            let set = statics.reached_from(cell, d);
            if set.contradicts() {
                return Ok(None);
            }
            work += set.len();
        }
    }
    if !budget.spend_many(work) {
        return Err(Exhausted);
    }
    graph.set(state, &index);
    let graph = &*graph;
    layers.search.forget();
    layers.reached.clear();
    layers.slot.fill(NO_SLOT);
    let several = cells_where(|c| state.cand[c].count_ones() >= 2);
    let mut best: Option<Conclusion> = None;
    let beats = |best: &Option<Conclusion>, key: Key| best.is_none_or(|(b, ..)| key < b);
    for cell in (0..81).filter(|&c| state.cand[c].count_ones() >= 3) {
        for d in bits(state.cand[cell]) {
            for house in houses(cell) {
                let places = index.places[house][d];
                if places.count_ones() < 2 || first_place(house, places) != cell {
                    continue;
                }
                // Places whose chains share no node that removes
                // something conclude nothing: their searches are not run.
                let cells = || bits(places).map(|i| usize::from(HOUSES[house][i]));
                if !statics.share_removal(cells().map(|c| (c, d))) {
                    continue;
                }
                for c in cells() {
                    layers.ensure(state, graph, statics, c, d)?;
                }
                let sources: SmallVec<[&Reached; 9]> = bits(places)
                    .map(|i| layers.of(usize::from(HOUSES[house][i]), d))
                    .collect();
                let mut tied: SmallVec<[usize; 8]> = SmallVec::new();
                let Some(key) = least(
                    state,
                    layers,
                    &sources,
                    several,
                    REGION,
                    best_key(&best),
                    &mut tied,
                ) else {
                    continue;
                };
                if beats(&best, key) {
                    let target = if tied.len() == 1 {
                        tied[0]
                    } else {
                        first_found(state, chain, node(cell, d, true), &tied)?
                    };
                    let (c, elim) = removal(state, target);
                    best = Some((key, c, elim));
                }
            }
        }
        // Cell forcing chains: the first of least key in node order.
        if !statics.share_removal(bits(state.cand[cell]).map(|d| (cell, d))) {
            continue;
        }
        for d in bits(state.cand[cell]) {
            layers.ensure(state, graph, statics, cell, d)?;
        }
        let sources: SmallVec<[&Reached; 9]> =
            bits(state.cand[cell]).map(|d| layers.of(cell, d)).collect();
        let mut tied: SmallVec<[usize; 8]> = SmallVec::new();
        if let Some(key) = least(
            state,
            layers,
            &sources,
            several,
            CELL,
            best_key(&best),
            &mut tied,
        ) && beats(&best, key)
        {
            let target = tied.iter().copied().min().unwrap_or_default();
            let (c, elim) = removal(state, target);
            best = Some((key, c, elim));
        }
    }
    Ok(Some(best))
}

/// The first cell of `house` among `places` (slots of the house).
fn first_place(house: usize, places: u16) -> usize {
    usize::from(HOUSES[house][places.trailing_zeros() as usize])
}

/// The key of the best conclusion so far, if any.
fn best_key(best: &Option<Conclusion>) -> Option<Key> {
    best.map(|(key, ..)| key)
}

/// The least key of the conclusions every one of `sources` reaches (that
/// remove something in `state`), with `sort`; the nodes of that key into
/// `tied`. `several` are the cells with two candidates or more. Keys not
/// below `below` may be passed over: when no key is below it, the result
/// is `None` or a key not below it.
fn least(
    state: &State,
    layers: &Layers,
    sources: &[&Reached],
    several: u128,
    sort: u8,
    below: Option<Key>,
    tied: &mut SmallVec<[usize; 8]>,
) -> Option<Key> {
    let base = Producer::Multiple.kind().1;
    let mut least: Option<Key> = None;
    tied.clear();
    // A key grows with the complexity: a conclusion more complex than
    // the least so far, or than `below`, is not counted to the end. Each
    // chain adds two nodes or more (a node a link away from its start,
    // and the start).
    let mut most = below.map_or(u32::MAX, |(_, complexity, _)| complexity);
    if 2 * sources.len() as u32 > most {
        return None;
    }
    let (first, rest) = sources.split_first()?;
    for d in 0..9 {
        // The nodes every chain reaches: a false node removes its own
        // candidate; a true one the others of its cell, if any.
        let (mut off, mut on) = (first.off[d], first.on[d] & several);
        for s in rest {
            if off | on == 0 {
                break;
            }
            off &= s.off[d];
            on &= s.on[d];
        }
        for (set, truth) in [(off, false), (on, true)] {
            for cell in cells_of(set) {
                let target = node(cell, d, truth);
                debug_assert!(removal(state, target).1 != 0);
                let mut complexity = 0u32;
                for s in sources {
                    complexity += layers.dist(s, cell, d, truth) + 1;
                    if complexity > most {
                        break;
                    }
                }
                if complexity > most {
                    continue;
                }
                most = complexity;
                let key = (base + length_tenths(complexity), complexity, sort);
                match least {
                    Some(k) if key > k => {}
                    Some(k) if key == k => tied.push(target),
                    _ => {
                        least = Some(key);
                        tied.clear();
                        tied.push(target);
                    }
                }
            }
        }
    }
    least
}

/// Of `tied`, the node the engine's chain from `start` finds first.
fn first_found(
    state: &State,
    chain: &mut Chain,
    start: usize,
    tied: &[usize],
) -> Result<usize, Exhausted> {
    let kind = Kind {
        y: true,
        dynamic: false,
        level: 0,
        nesting: 0,
    };
    // Its work is counted already, with the searches'.
    let mut free = Budget { left: u64::MAX };
    chain.run(state, kind, start, &mut free)?;
    Ok(chain
        .graph
        .order
        .iter()
        .copied()
        .find(|n| tied.contains(n))
        .unwrap_or(tied[0]))
}

#[cfg(test)]
mod tests {
    use super::super::dynamic::{Producer, engine_first};
    use super::super::reach::Forced;
    use super::super::tests::{for_each_state_on_path, hard_puzzles};
    use super::*;
    use crate::solver::Grid;

    /// At every state of the rated paths of hard puzzles, the nodes the
    /// grid's components give for each candidate assumed true, and their
    /// number, are those its search reaches: the producer's test for a
    /// contradiction and its work count read them in place of a search
    /// from every start.
    ///
    /// The components may come made from the unary chaining: taken where
    /// made on the same grid (here from a graph made for it), never from
    /// another grid (here the one of the state before).
    #[test]
    fn the_components_give_every_starts_search() {
        let (mut starts, mut contradictions) = (0, 0);
        let mut statics = StaticReach::new();
        let (mut taken, mut stale) = (StaticReach::new(), Forced::new());
        let (mut graph, mut search) = (Graph::empty(), Search::new());
        for grid in hard_puzzles().iter().step_by(3) {
            let form = crate::solver::canonical(grid);
            for_each_state_on_path(&form, |state, index| {
                statics.begin(&state.cand);
                // `stale` holds the graph of the state before (or of
                // another path's last): not this grid's.
                taken.begin_with(&state.cand, Some(&mut stale));
                let (mut other, mut made) = (StaticReach::new(), Forced::new());
                made.build(&state.cand, true, 0x1FF, true);
                other.begin_with(&state.cand, Some(&mut made));
                graph.set(state, index);
                let mut free = Budget { left: u64::MAX };
                let links = Links { x: true, y: true };
                for cell in (0..81).filter(|&c| state.cand[c].count_ones() >= 2) {
                    for d in bits(state.cand[cell]) {
                        search
                            .run(
                                state,
                                &graph,
                                links,
                                node(cell, d, true),
                                usize::MAX,
                                &mut free,
                            )
                            .unwrap();
                        let (on, off, count) = search.reached();
                        for from in [&mut taken, &mut other] {
                            let sides = from.reached_from(cell, d).sides();
                            assert_eq!(sides, (on, off), "{form} {cell} {d}");
                        }
                        let set = statics.reached_from(cell, d);
                        assert_eq!(set.sides(), (on, off), "{form} {cell} {d}");
                        assert_eq!(set.len(), count, "{form} {cell} {d}");
                        let both = on.iter().zip(off).any(|(a, b)| a & b != 0);
                        assert_eq!(set.contradicts(), both, "{form} {cell} {d}");
                        starts += 1;
                        contradictions += usize::from(both);
                    }
                }
                stale.build(&state.cand, true, 0x1FF, true);
            });
        }
        assert!(starts > 10_000, "{starts}");
        assert!(contradictions > 100, "{contradictions}");
    }

    /// At every state of the rated paths of hard puzzles, of Golden
    /// Nugget and of Arto Inkala's "world's hardest sudoku", the
    /// conclusion read from the layers is the engine's.
    #[test]
    fn the_layers_give_the_engines_conclusion() {
        let famous = [
            ".......39.....1..5..3.5.8....8.9...6.7...2...1..4.......9.8..5..2....6..4..7.....",
            "8..........36......7..9.2...5...7.......457.....1...3...1....68..85...1..9....4..",
        ]
        .map(|text| Grid::parse(text).unwrap());
        let (mut checked, mut found) = (0, 0);
        let mut space = Scratch::new();
        for grid in hard_puzzles().iter().chain(&famous) {
            let form = crate::solver::canonical(grid);
            for_each_state_on_path(&form, |state, _| {
                let mut budget = Budget { left: u64::MAX };
                let engine = engine_first(state, Producer::Multiple, &mut space);
                // A chain meeting a contradiction sends the producer to
                // the engine: common at these states, most of which have
                // easier steps, rare where the ladder asks.
                if let Some(mine) = easiest(state, &mut budget, &mut space).unwrap() {
                    assert_eq!(mine, engine, "{form}");
                    checked += 1;
                    found += usize::from(engine.is_some());
                }
            });
        }
        assert!(checked > 300, "{checked}");
        assert!(found > 20, "{found}");
    }
}
