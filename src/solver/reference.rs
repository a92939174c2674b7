//! A deliberately naive solver, for tests only: plain backtracking in row-major
//! order with the validity of each placement checked cell by cell. Slow and
//! obviously correct; the fast search is compared against it.

/// Counts the completions of `cells` (`0` blank), stopping at `limit`.
pub(crate) fn count_solutions(cells: &[u8; 81], limit: u64) -> u64 {
    let mut grid = *cells;
    let mut count = 0;
    fill(&mut grid, 0, limit, &mut count);
    count
}

fn fits(grid: &[u8; 81], cell: usize, digit: u8) -> bool {
    let (row, col) = (cell / 9, cell % 9);
    let (box_row, box_col) = (row / 3 * 3, col / 3 * 3);
    (0..9).all(|k| {
        grid[row * 9 + k] != digit
            && grid[k * 9 + col] != digit
            && grid[(box_row + k / 3) * 9 + box_col + k % 3] != digit
    })
}

fn fill(grid: &mut [u8; 81], from: usize, limit: u64, count: &mut u64) {
    let Some(cell) = (from..81).find(|&c| grid[c] == 0) else {
        *count += 1;
        return;
    };
    for digit in 1..=9 {
        if fits(grid, cell, digit) {
            grid[cell] = digit;
            fill(grid, cell + 1, limit, count);
            grid[cell] = 0;
            if *count >= limit {
                return;
            }
        }
    }
}
