//! The grid: one representation for every puzzle format of the wire protocol.
//!
//! A [`Grid`] holds 81 cells, row by row, each `0` (blank) or a digit `1..=9`.
//! Every constructor validates: a `Grid` that exists has only cells in
//! `0..=9` and no digit given twice in a row, column or box. Errors say what
//! is wrong and where, with rows, columns and boxes numbered from 1.

use std::fmt;

use serde_json::Value;

/// Cells in a grid.
pub const CELLS: usize = 81;

/// Why a puzzle could not be read. Messages are lowercase, without a final
/// period, and name the place of the problem, so a person can fix the puzzle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GridError {
    #[error("puzzle has {found} cells, expected 81")]
    CellCount { found: usize },
    #[error("invalid character {ch:?} at row {row}, column {col}")]
    InvalidChar { ch: char, row: usize, col: usize },
    #[error("puzzle has {found} rows, expected 9")]
    RowCount { found: usize },
    #[error("row {row} has {found} cells, expected 9")]
    RowLength { row: usize, found: usize },
    #[error("row {row} is {found}, expected an array of 9 cells")]
    RowNotArray { row: usize, found: String },
    #[error("invalid cell {found} at row {row}, column {col}: expected {expected}")]
    InvalidCell {
        found: String,
        row: usize,
        col: usize,
        expected: &'static str,
    },
    #[error("puzzle is {found}, expected a string of 81 cells or a 9x9 array")]
    NotAPuzzle { found: String },
    /// `first` and `second` are the (row, column) of the two givens, from 1.
    #[error("{unit} {index} has {digit} twice ({})", places(*unit, *first, *second))]
    RepeatedGiven {
        unit: Unit,
        index: usize,
        digit: u8,
        first: (usize, usize),
        second: (usize, usize),
    },
}

/// The three kinds of house a digit may appear in once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Row,
    Column,
    Box,
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unit::Row => "row",
            Unit::Column => "column",
            Unit::Box => "box",
        })
    }
}

/// A validated 9x9 grid: cells row by row, `0` for blank, `1..=9` for a digit.
///
/// Invariant: every cell is in `0..=9` and no digit repeats in a row, column
/// or box. A completely filled `Grid` is therefore a valid Sudoku solution.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Grid {
    cells: [u8; CELLS],
}

impl Grid {
    /// The grid with every cell blank.
    pub const EMPTY: Grid = Grid { cells: [0; CELLS] };

    /// Builds a grid from 81 cell values (`0` blank, `1..=9` digit).
    pub fn from_cells(cells: [u8; CELLS]) -> Result<Grid, GridError> {
        // The largest cell first (a loop without an early exit, which the
        // compiler turns into a few vector instructions), the place only
        // when there is one to report.
        if cells.iter().fold(0, |max, &c| max.max(c)) > 9 {
            return Err(out_of_range(&cells));
        }
        let grid = Grid { cells };
        grid.check_repeats()?;
        Ok(grid)
    }

    /// A grid the solver filled in: complete and valid by construction,
    /// so the checks are left to debug builds.
    pub(crate) fn from_solved(cells: [u8; CELLS]) -> Grid {
        let grid = Grid { cells };
        debug_assert!(cells.iter().all(|&c| (1..=9).contains(&c)));
        debug_assert!(grid.check_repeats().is_ok());
        grid
    }

    /// Some cells of a solution, the rest blank: valid by construction, so
    /// the checks are left to debug builds.
    pub(crate) fn from_part_of_solution(cells: [u8; CELLS]) -> Grid {
        let grid = Grid { cells };
        debug_assert!(cells.iter().all(|&c| c <= 9));
        debug_assert!(grid.check_repeats().is_ok());
        grid
    }

    /// A grid made from a valid one by a Sudoku symmetry: valid by
    /// construction, so the checks are left to debug builds.
    pub(crate) fn from_symmetric(cells: [u8; CELLS]) -> Grid {
        let grid = Grid { cells };
        debug_assert!(cells.iter().all(|&c| c <= 9));
        debug_assert!(grid.check_repeats().is_ok());
        grid
    }

    /// Parses the string format: 81 cells row by row, `1`-`9` for givens and
    /// `.` or `0` for blanks. White space and the grid-drawing characters
    /// `|`, `-` and `+` are skipped, so a pretty-printed grid parses as is.
    pub fn parse(text: &str) -> Result<Grid, GridError> {
        let grid = Grid {
            cells: Grid::parse_cells(text)?,
        };
        grid.check_repeats()?;
        Ok(grid)
    }

    /// [`Grid::parse`] without the check for repeated givens: the cells,
    /// each in `0..=9`, or the error about the text's shape. For a caller
    /// that finds repeats another way and then calls [`Grid::from_cells`]
    /// for the precise error ([`crate::solver::solve_text`]).
    pub(crate) fn parse_cells(text: &str) -> Result<[u8; CELLS], GridError> {
        // The common case: exactly 81 cell characters and nothing else, read
        // in one pass without a branch per cell.
        if let Ok(bytes) = <&[u8; CELLS]>::try_from(text.as_bytes()) {
            let mut cells = [0u8; CELLS];
            let mut other = false;
            for (cell, &b) in cells.iter_mut().zip(bytes) {
                let digit = b.wrapping_sub(b'0');
                other |= (digit > 9) & (b != b'.');
                // '.' (or anything else, which `other` reports) is a blank.
                *cell = if digit <= 9 { digit } else { 0 };
            }
            if !other {
                return Ok(cells);
            }
        }
        let mut cells = [0u8; CELLS];
        let mut count = 0usize;
        let mut invalid = None;
        for ch in text.chars() {
            let value = match ch {
                '1'..='9' => ch as u8 - b'0',
                '.' | '0' => 0,
                '|' | '-' | '+' => continue,
                c if c.is_whitespace() => continue,
                c => {
                    if invalid.is_none() && count < CELLS {
                        invalid = Some((c, count));
                    }
                    0
                }
            };
            if count < CELLS {
                cells[count] = value;
            }
            count += 1;
        }
        if let Some((ch, i)) = invalid {
            return Err(GridError::InvalidChar {
                ch,
                row: i / 9 + 1,
                col: i % 9 + 1,
            });
        }
        if count != CELLS {
            return Err(GridError::CellCount { found: count });
        }
        Ok(cells)
    }

    /// Reads a puzzle from its JSON form in a job: a string (see
    /// [`Grid::parse`]), or a 9x9 array whose cells are one-character strings
    /// (`"1"`-`"9"`, `"."` or `"0"`) or integers `0..=9`.
    pub fn from_json(value: &Value) -> Result<Grid, GridError> {
        let rows = match value {
            Value::String(text) => return Grid::parse(text),
            Value::Array(rows) => rows,
            other => {
                return Err(GridError::NotAPuzzle {
                    found: describe(other),
                });
            }
        };
        if rows.len() != 9 {
            // A flat array of 81 cells is a common mistake: say so plainly.
            if let Some(first) = rows.first().filter(|v| !v.is_array()) {
                return Err(GridError::RowNotArray {
                    row: 1,
                    found: describe(first),
                });
            }
            return Err(GridError::RowCount { found: rows.len() });
        }
        let mut cells = [0u8; CELLS];
        for (r, row) in rows.iter().enumerate() {
            let Value::Array(row_cells) = row else {
                return Err(GridError::RowNotArray {
                    row: r + 1,
                    found: describe(row),
                });
            };
            if row_cells.len() != 9 {
                return Err(GridError::RowLength {
                    row: r + 1,
                    found: row_cells.len(),
                });
            }
            for (c, cell) in row_cells.iter().enumerate() {
                cells[r * 9 + c] = json_cell(cell).ok_or_else(|| GridError::InvalidCell {
                    found: truncate(cell.to_string()),
                    row: r + 1,
                    col: c + 1,
                    expected: "\"1\"-\"9\", \".\", \"0\" or an integer from 0 to 9",
                })?;
            }
        }
        Grid::from_cells(cells)
    }

    /// The cells, row by row (`0` blank).
    pub fn cells(&self) -> &[u8; CELLS] {
        &self.cells
    }

    /// Number of given (non-blank) cells.
    pub fn givens(&self) -> usize {
        self.cells.iter().filter(|&&c| c != 0).count()
    }

    /// Whether every cell holds a digit. A complete grid is a valid solution
    /// (the type's invariant rules out repeats).
    pub fn is_complete(&self) -> bool {
        self.cells.iter().all(|&c| c != 0)
    }

    /// Whether `self` keeps every given of `puzzle`.
    pub fn extends(&self, puzzle: &Grid) -> bool {
        self.keeps_givens(&puzzle.cells)
    }

    /// [`Grid::extends`] for a puzzle given as cells (`0` blank).
    pub(crate) fn keeps_givens(&self, puzzle: &[u8; CELLS]) -> bool {
        self.cells
            .iter()
            .zip(puzzle)
            .all(|(&s, &p)| p == 0 || s == p)
    }

    /// Finds the first digit given twice: rows first, then columns, then boxes.
    /// Requires every cell in `0..=9`.
    fn check_repeats(&self) -> Result<(), GridError> {
        // One pass over the givens alone (a puzzle has 17 to 40 or so)
        // settles the common case, a valid grid: per digit, the bits of the
        // houses that hold it so far ([`HOUSE_BITS`]).
        let mut seen = [0u32; 16];
        let mut clash = 0u32;
        for (band, (&given, band_cells)) in given_bits(&self.cells)
            .iter()
            .zip(self.cells.as_chunks::<27>().0)
            .enumerate()
        {
            let mut rest = given;
            while rest != 0 {
                let pos = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                let digit = usize::from(band_cells[pos] & 15);
                let houses = HOUSE_BITS[band][pos];
                clash |= seen[digit] & houses;
                seen[digit] |= houses;
            }
        }
        if clash == 0 {
            return Ok(());
        }
        let place = |cell: usize| (cell / 9 + 1, cell % 9 + 1);
        for unit in [Unit::Row, Unit::Column, Unit::Box] {
            for index in 0..9 {
                // seen[d] = the cell where digit d was met in this unit.
                let mut seen = [None; 10];
                for pos in 0..9 {
                    let cell = unit_cell(unit, index, pos);
                    let digit = self.cells[cell] as usize;
                    if digit == 0 {
                        continue;
                    }
                    if let Some(first) = seen[digit] {
                        return Err(GridError::RepeatedGiven {
                            unit,
                            index: index + 1,
                            digit: digit as u8,
                            first: place(first),
                            second: place(cell),
                        });
                    }
                    seen[digit] = Some(cell);
                }
            }
        }
        Ok(())
    }
}

/// Per band (rows 1-3, 4-6, 7-9), bit `9 * row + column` of the band is set
/// when that cell holds a digit (is not `0`): the layout of the solver's
/// band masks. Eight cells at a time, without a branch per cell: what the
/// solver's setup and the repeat check loop over instead of all 81 cells.
pub(crate) fn given_bits(cells: &[u8; CELLS]) -> [u32; 3] {
    let bands = cells.as_chunks::<27>().0;
    std::array::from_fn(|band| {
        let (words, last) = bands[band].as_chunks::<8>();
        let mut bits = 0u32;
        for (k, word) in words.iter().enumerate() {
            bits |= u32::from(nonzero_bytes(u64::from_le_bytes(*word))) << (8 * k);
        }
        for (k, &cell) in last.iter().enumerate() {
            bits |= u32::from(cell != 0) << (8 * words.len() + k);
        }
        bits
    })
}

/// Bit `k` set when byte `k` of `word` (little-endian) is not zero.
#[inline]
fn nonzero_bytes(word: u64) -> u8 {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    // Bit 7 of each byte: set when the byte's low seven bits add a carry
    // to 0x7F (they are not all zero) or the byte's own bit 7 is set. No
    // byte's sum exceeds 0xFE, so nothing carries into the next byte.
    let high = (((word & LOW7).wrapping_add(LOW7)) | word) & !LOW7;
    // The multiplier moves bit 8k to bit 56 + k, for each k at once, and
    // the other products land on distinct bits outside 56..64.
    ((high >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8
}

/// Per band and cell of the band, the houses of the cell as bits: its row
/// (bits 0-8), its column (bits 9-17) and its box (bits 18-26).
static HOUSE_BITS: [[u32; 27]; 3] = {
    let mut table = [[0u32; 27]; 3];
    let mut cell = 0;
    while cell < CELLS {
        let (r, c) = (cell / 9, cell % 9);
        table[r / 3][cell % 27] = 1 << r | 1 << (9 + c) | 1 << (18 + r / 3 * 3 + c / 3);
        cell += 1;
    }
    table
};

/// The error for the first cell of `cells` above 9.
#[cold]
fn out_of_range(cells: &[u8; CELLS]) -> GridError {
    let i = cells.iter().position(|&c| c > 9).unwrap_or_default();
    GridError::InvalidCell {
        found: cells[i].to_string(),
        row: i / 9 + 1,
        col: i % 9 + 1,
        expected: "an integer from 0 to 9",
    }
}

/// The cell index of position `pos` (0-based) within unit number `index`
/// (0-based). Positions in a box run row by row.
fn unit_cell(unit: Unit, index: usize, pos: usize) -> usize {
    match unit {
        Unit::Row => index * 9 + pos,
        Unit::Column => pos * 9 + index,
        Unit::Box => (index / 3 * 3 + pos / 3) * 9 + index % 3 * 3 + pos % 3,
    }
}

/// Where two repeated givens are, in the words that fit the unit.
fn places(unit: Unit, first: (usize, usize), second: (usize, usize)) -> String {
    match unit {
        Unit::Row => format!("columns {} and {}", first.1, second.1),
        Unit::Column => format!("rows {} and {}", first.0, second.0),
        Unit::Box => format!(
            "row {}, column {} and row {}, column {}",
            first.0, first.1, second.0, second.1
        ),
    }
}

fn json_cell(cell: &Value) -> Option<u8> {
    match cell {
        Value::Number(n) => n.as_u64().filter(|&v| v <= 9).map(|v| v as u8),
        Value::String(s) => match s.as_bytes() {
            [b @ b'1'..=b'9'] => Some(b - b'0'),
            [b'.'] | [b'0'] => Some(0),
            _ => None,
        },
        _ => None,
    }
}

/// A short description of a JSON value for error messages.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(_) => "a number".into(),
        Value::String(_) => "a string".into(),
        Value::Array(a) => format!("an array of {}", a.len()),
        Value::Object(_) => "an object".into(),
    }
}

/// Keeps echoed input short in error messages.
fn truncate(mut text: String) -> String {
    const MAX: usize = 24;
    if text.len() > MAX {
        let mut end = MAX;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

impl Grid {
    /// The grid as 81 ASCII bytes, row by row: digits, `.` for blanks.
    pub fn to_bytes(&self) -> [u8; CELLS] {
        // A select per cell, not a branch: the loop becomes a few vector
        // instructions.
        std::array::from_fn(|i| {
            let cell = self.cells[i];
            if cell == 0 { b'.' } else { b'0' + cell }
        })
    }

    /// The grid as 81 characters, row by row, with `0` for blanks (the
    /// convention of the canonical form, where blanks sort first).
    pub fn to_text_with_zeros(&self) -> String {
        self.cells.iter().map(|&c| char::from(b'0' + c)).collect()
    }

    /// The grid as text, as [`Display`](fmt::Display) writes it, in one
    /// allocation of exactly 81 bytes.
    pub fn to_text(&self) -> String {
        // Digits and dots only, so the UTF-8 check always passes (and reads
        // 81 bytes a word at a time, unlike pushing char by char).
        String::from_utf8(self.to_bytes().to_vec()).unwrap_or_default()
    }
}

/// 81 characters, row by row: digits, `.` for blanks.
impl fmt::Display for Grid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.to_bytes();
        // The buffer holds only ASCII digits and dots.
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Grid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Grid({self})")
    }
}

impl std::str::FromStr for Grid {
    type Err = GridError;
    fn from_str(text: &str) -> Result<Grid, GridError> {
        Grid::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sudokud_testkit::PUZZLE;

    fn err(text: &str) -> String {
        Grid::parse(text).unwrap_err().to_string()
    }

    fn json_err(value: Value) -> String {
        Grid::from_json(&value).unwrap_err().to_string()
    }

    #[test]
    fn parses_dots_and_zeros_alike() {
        let dots = Grid::parse(PUZZLE).unwrap();
        let zeros = Grid::parse(&PUZZLE.replace('.', "0")).unwrap();
        assert_eq!(dots, zeros);
        assert_eq!(dots.to_string(), PUZZLE);
        assert_eq!(dots.to_text(), PUZZLE);
        assert_eq!(dots.givens(), 30);
        assert_eq!(dots.cells()[0], 5);
        assert_eq!(dots.cells()[2], 0);
    }

    #[test]
    fn parses_a_pretty_printed_grid() {
        let mut pretty = String::new();
        for r in 0..9 {
            if r % 3 == 0 {
                pretty.push_str("+-------+-------+-------+\n");
            }
            for c in 0..9 {
                if c % 3 == 0 {
                    pretty.push_str("| ");
                }
                pretty.push(PUZZLE.as_bytes()[r * 9 + c] as char);
                pretty.push(' ');
            }
            pretty.push_str("|\n");
        }
        pretty.push_str("+-------+-------+-------+\n");
        assert_eq!(Grid::parse(&pretty).unwrap().to_string(), PUZZLE);
    }

    #[test]
    fn reports_cell_count() {
        assert_eq!(err(&PUZZLE[..80]), "puzzle has 80 cells, expected 81");
        assert_eq!(
            err(&format!("{PUZZLE}1")),
            "puzzle has 82 cells, expected 81"
        );
        assert_eq!(err(""), "puzzle has 0 cells, expected 81");
    }

    #[test]
    fn reports_invalid_character_with_position() {
        let mut bad = PUZZLE.to_string();
        bad.replace_range(24..25, "x"); // row 3, column 7
        assert_eq!(err(&bad), "invalid character 'x' at row 3, column 7");
        // The position counts cells, not skipped characters.
        assert_eq!(
            err(&format!("| {}", &bad)),
            "invalid character 'x' at row 3, column 7"
        );
        let mut tab = PUZZLE.to_string();
        tab.replace_range(0..1, "é");
        assert_eq!(err(&tab), "invalid character 'é' at row 1, column 1");
    }

    #[test]
    fn reports_repeats_in_rows_columns_and_boxes() {
        let mut row = [0u8; 81];
        row[0] = 5;
        row[3] = 5;
        assert_eq!(
            Grid::from_cells(row).unwrap_err().to_string(),
            "row 1 has 5 twice (columns 1 and 4)"
        );
        let mut col = [0u8; 81];
        col[2 * 9 + 6] = 7;
        col[8 * 9 + 6] = 7;
        assert_eq!(
            Grid::from_cells(col).unwrap_err().to_string(),
            "column 7 has 7 twice (rows 3 and 9)"
        );
        let mut bx = [0u8; 81];
        bx[3 * 9 + 3] = 2; // row 4, column 4: box 5, cell 1
        bx[5 * 9 + 5] = 2; // row 6, column 6: box 5, cell 9
        assert_eq!(
            Grid::from_cells(bx).unwrap_err().to_string(),
            "box 5 has 2 twice (row 4, column 4 and row 6, column 6)"
        );
        let text = format!("55{}", &".".repeat(79));
        assert_eq!(err(&text), "row 1 has 5 twice (columns 1 and 2)");
    }

    #[test]
    fn from_cells_rejects_out_of_range() {
        let mut cells = [0u8; 81];
        cells[10] = 10;
        assert_eq!(
            Grid::from_cells(cells).unwrap_err().to_string(),
            "invalid cell 10 at row 2, column 2: expected an integer from 0 to 9"
        );
    }

    fn rows_of<T: Clone>(f: impl Fn(u8) -> T) -> Vec<Vec<T>> {
        PUZZLE
            .as_bytes()
            .chunks(9)
            .map(|row| {
                row.iter()
                    .map(|&b| f(if b == b'.' { 0 } else { b - b'0' }))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn parses_leetcode_string_arrays() {
        let rows = rows_of(|d| {
            if d == 0 {
                ".".to_string()
            } else {
                d.to_string()
            }
        });
        let grid = Grid::from_json(&json!(rows)).unwrap();
        assert_eq!(grid.to_string(), PUZZLE);
        let zeros = rows_of(|d| d.to_string());
        assert_eq!(Grid::from_json(&json!(zeros)).unwrap(), grid);
    }

    #[test]
    fn parses_integer_arrays_and_strings_in_json() {
        let grid = Grid::from_json(&json!(rows_of(|d| d))).unwrap();
        assert_eq!(grid.to_string(), PUZZLE);
        assert_eq!(Grid::from_json(&json!(PUZZLE)).unwrap(), grid);
    }

    #[test]
    fn reports_json_shape_errors() {
        let flat: Vec<u8> = vec![0; 81];
        assert_eq!(
            json_err(json!(flat)),
            "row 1 is a number, expected an array of 9 cells"
        );
        let mut eight_rows = rows_of(|d| d);
        eight_rows.pop();
        assert_eq!(json_err(json!(eight_rows)), "puzzle has 8 rows, expected 9");
        let mut short = rows_of(|d| d);
        short[2].pop();
        assert_eq!(json_err(json!(short)), "row 3 has 8 cells, expected 9");
        let mut not_row = json!(rows_of(|d| d));
        not_row[4] = json!("53..7....");
        assert_eq!(
            json_err(not_row),
            "row 5 is a string, expected an array of 9 cells"
        );
        assert_eq!(
            json_err(json!(42)),
            "puzzle is a number, expected a string of 81 cells or a 9x9 array"
        );
        assert_eq!(
            json_err(json!({"a": 1})),
            "puzzle is an object, expected a string of 81 cells or a 9x9 array"
        );
        assert_eq!(json_err(json!([])), "puzzle has 0 rows, expected 9");
    }

    #[test]
    fn reports_json_cell_errors() {
        let expected = "expected \"1\"-\"9\", \".\", \"0\" or an integer from 0 to 9";
        for (bad, shown) in [
            (json!(10), "10"),
            (json!(-1), "-1"),
            (json!(2.5), "2.5"),
            (json!("x"), "\"x\""),
            (json!("12"), "\"12\""),
            (json!(null), "null"),
            (json!([1]), "[1]"),
        ] {
            let mut rows = json!(rows_of(|d| d));
            rows[2][6] = bad;
            assert_eq!(
                json_err(rows),
                format!("invalid cell {shown} at row 3, column 7: {expected}")
            );
        }
    }

    #[test]
    fn json_arrays_are_checked_for_repeats() {
        let mut rows = rows_of(|d| d);
        rows[0][2] = 5; // row 1 already has 5 in column 1
        assert_eq!(json_err(json!(rows)), "row 1 has 5 twice (columns 1 and 3)");
    }

    #[test]
    fn long_cells_are_truncated_in_messages() {
        let mut rows = json!(rows_of(|d| d));
        rows[0][0] = json!("a".repeat(1000));
        let message = json_err(rows);
        assert!(message.len() < 200, "{message}");
        assert!(message.starts_with("invalid cell \"aaaa"), "{message}");
    }

    proptest::proptest! {
        /// Every format reads back the grid that was written.
        #[test]
        fn formats_round_trip(grid in crate::solver::tests::puzzle(0..=81)) {
            let text = grid.to_string();
            proptest::prop_assert_eq!(Grid::parse(&text), Ok(grid));
            proptest::prop_assert_eq!(Grid::parse(&text.replace('.', "0")), Ok(grid));
            let ints: Vec<Vec<u8>> = grid.cells().chunks(9).map(<[u8]>::to_vec).collect();
            proptest::prop_assert_eq!(Grid::from_json(&json!(ints)), Ok(grid));
            let strings: Vec<Vec<String>> = grid
                .cells()
                .chunks(9)
                .map(|row| row.iter().map(|&d| if d == 0 { ".".into() } else { d.to_string() }).collect())
                .collect();
            proptest::prop_assert_eq!(Grid::from_json(&json!(strings)), Ok(grid));
            proptest::prop_assert_eq!(Grid::from_json(&json!(text)), Ok(grid));
        }
    }

    proptest::proptest! {
        /// The bit tricks of `given_bits` agree with looking at each cell.
        #[test]
        fn given_bits_marks_exactly_the_givens(
            grid in crate::solver::tests::puzzle(0..=81),
            word in proptest::prelude::any::<u64>(),
        ) {
            let bits = given_bits(grid.cells());
            for (cell, &value) in grid.cells().iter().enumerate() {
                let set = bits[cell / 27] >> (cell % 27) & 1 == 1;
                proptest::prop_assert_eq!(set, value != 0, "cell {}", cell);
            }
            proptest::prop_assert!(bits.iter().all(|&b| b >> 27 == 0));
            let expected = (0..8).fold(0u8, |acc, k| acc | u8::from(word >> (8 * k) & 0xFF != 0) << k);
            proptest::prop_assert_eq!(nonzero_bytes(word), expected);
        }
    }

    #[test]
    fn extends_and_is_complete() {
        let puzzle = Grid::parse(PUZZLE).unwrap();
        assert!(!puzzle.is_complete());
        assert!(puzzle.extends(&puzzle));
        assert!(puzzle.extends(&Grid::EMPTY));
        assert!(!Grid::EMPTY.extends(&puzzle));
    }
}
