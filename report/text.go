package report

import (
	"io"
	"strings"
	"unicode/utf8"
)

// Terminal text: tables and paragraphs laid out for a terminal of a given width.

// TerminalWidth is the width, in columns, that what limitbench prints on a terminal fits by
// default; --wide lifts it.
const TerminalWidth = 120

// Table is a text table: a header row and rows of cells, columns two spaces apart, each left
// aligned unless Right says otherwise.
type Table struct {
	Header []string
	Rows   [][]string
	// Right marks the columns aligned right (numbers).
	Right []bool
	// Wrap is the index of the column whose cells are wrapped onto continuation lines at spaces
	// when the table is wider than the width it is written to; -1 for none.
	Wrap int
}

// Write writes t to w within width columns when it can (width <= 0: no limit), wrapping the
// cells of column t.Wrap as narrow as the width asks, but never narrower than its longest word.
// Trailing spaces are trimmed.
func (t Table) Write(w io.Writer, width int) error {
	cols := len(t.Header)
	widths := make([]int, cols)
	for _, r := range append([][]string{t.Header}, t.Rows...) {
		for i := 0; i < cols && i < len(r); i++ {
			widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	if width > 0 && t.Wrap >= 0 && t.Wrap < cols {
		total := 2 * (cols - 1)
		for _, n := range widths {
			total += n
		}
		if over := total - width; over > 0 {
			longest := 0
			for _, r := range append([][]string{t.Header}, t.Rows...) {
				if t.Wrap < len(r) {
					for _, word := range wrapWords(r[t.Wrap], 1) {
						longest = max(longest, utf8.RuneCountInString(word))
					}
				}
			}
			widths[t.Wrap] = max(longest, widths[t.Wrap]-over)
		}
	}
	var b strings.Builder
	for _, r := range append([][]string{t.Header}, t.Rows...) {
		lines := [][]string{make([]string, cols)}
		for i := 0; i < cols && i < len(r); i++ {
			parts := []string{r[i]}
			if i == t.Wrap {
				parts = wrapWords(r[i], widths[i])
			}
			for j, p := range parts {
				if j == len(lines) {
					lines = append(lines, make([]string, cols))
				}
				lines[j][i] = p
			}
		}
		for _, line := range lines {
			var l strings.Builder
			for i, c := range line {
				pad := strings.Repeat(" ", max(0, widths[i]-utf8.RuneCountInString(c)))
				if i < len(t.Right) && t.Right[i] {
					l.WriteString(pad + c)
				} else {
					l.WriteString(c + pad)
				}
				if i < cols-1 {
					l.WriteString("  ")
				}
			}
			b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// wrapWords splits s at spaces (U+0020: a no-break space keeps a number with its unit) into lines
// of at most width runes (a longer word alone on a line).
func wrapWords(s string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\n' }) {
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	return append(lines, line)
}

// Paragraph returns first and s wrapped at spaces within width columns (width <= 0: one line),
// the lines after the first indented by four spaces, each line ending in a newline.
func Paragraph(first, s string, width int) string {
	if width <= 0 {
		return first + s + "\n"
	}
	const indent = "    "
	var b strings.Builder
	for i, l := range wrapWords(first+s, width-len(indent)) {
		if i > 0 {
			b.WriteString(indent)
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}
