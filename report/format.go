package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Number and unit formatting, for every report, table and log line limitbench writes: each
// figure is rendered by one function here, so that the same figure reads the same everywhere.

// Count renders a whole number with thousands separators: 1234567 → "1,234,567".
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Rate renders a rate, per second, rounded to a whole number with thousands separators: 12,345.
func Rate(v float64) string { return Count(int64(math.Round(v))) }

// Number renders a measurement: integers with separators from 100 up, else up to 3 significant
// digits; "n/a" for NaN and infinities.
func Number(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "n/a"
	case math.Abs(x) >= 100:
		return Count(int64(math.Round(x)))
	case math.Abs(x) >= 10:
		return strings.TrimSuffix(strconv.FormatFloat(x, 'f', 1, 64), ".0")
	}
	return strings.TrimSuffix(strings.TrimSuffix(strconv.FormatFloat(x, 'f', 2, 64), "0"), ".0")
}

// Percent renders a fraction as a percentage with at most one decimal: 0.973 → "97.3%".
func Percent(x float64) string {
	s := strconv.FormatFloat(x*100, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + "%"
}

// Ratio renders a multiple: "2.0x", "40x".
func Ratio(x float64) string {
	if x >= 10 {
		return strconv.FormatFloat(x, 'f', 0, 64) + "x"
	}
	return strconv.FormatFloat(x, 'f', 1, 64) + "x"
}

// Millis renders microseconds as a number of milliseconds with three significant decimals at
// most, for columns headed "(ms)": 1234 → "1.23"; from 100 ms on whole milliseconds with
// thousands separators: 12345678 → "12,346".
func Millis(us float64) string {
	v := us / MicrosPerMilli
	switch {
	case v >= 100:
		return Count(int64(math.Round(v)))
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// Micros renders microseconds as a short duration: whole ms from 1 s up, 10 µs from 1 ms up, whole
// µs below ("850µs", "1.23ms", "2.5s").
func Micros(us float64) string {
	d := time.Duration(us * float64(time.Microsecond))
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// MicrosExact renders microseconds as a duration to the µs ("1.234ms"): a figure compared with a
// bound (a threshold, an objective), where Micros's rounding could hide why it broke.
func MicrosExact(us float64) string {
	return (time.Duration(us*1000) * time.Nanosecond).Round(time.Microsecond).String()
}

// Bytes renders a size in B, KiB, MiB, GiB, TiB or PiB with three significant digits.
func Bytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", v)
	}
	return fmt.Sprintf("%.3g %s", v, units[i])
}

// Plural returns one when n is 1, else many.
func Plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// MarkdownText escapes the characters Markdown would otherwise interpret in running text.
func MarkdownText(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", "[", `\[`, "]", `\]`).Replace(s)
}

// MarkdownCell escapes s for a Markdown table cell: as running text, with newlines as spaces and
// "|" escaped.
func MarkdownCell(s string) string {
	return strings.ReplaceAll(MarkdownText(strings.ReplaceAll(s, "\n", " ")), "|", `\|`)
}
