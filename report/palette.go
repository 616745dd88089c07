package report

import (
	"hash/fnv"
	"image/color"
	"strings"

	"gonum.org/v1/plot/vg"
)

// builtinColors fixes the colour of every built-in algorithm so that it is the same in every plot of
// every report. No two are alike (TestAlgorithmColorsDistinct holds every pair at least 25 apart
// in CIELAB, mostly Kelly's colours of maximum contrast), so a plot of all of them can be read
// line by line; a "-published" variant is also dashed in line plots. None is yellow, the colour
// of fault windows.
var builtinColors = map[string]color.RGBA{
	"fixed-window":                rgb(0x0067a5),
	"fixed-window-published":      rgb(0xe68fac),
	"sliding-log":                 rgb(0xf38400),
	"sliding-log-published":       rgb(0x882d17),
	"token-bucket":                rgb(0x008856),
	"token-bucket-published":      rgb(0x8db600),
	"redisson":                    rgb(0xbe0032),
	"redisson-per-client":         rgb(0x875692),
	"resource-consumer":           rgb(0x2b3d26),
	"resource-consumer-published": rgb(0xc2b280),
	"gcra":                        rgb(0x00a3c7),
	"sliding-counter":             rgb(0xf99379),
	"reference":                   rgb(0x848482),
}

// extraColors serve algorithms without a fixed colour (custom scripts); the name's hash picks one,
// so a name keeps its colour from run to run.
var extraColors = []color.RGBA{
	rgb(0xbcbd22), rgb(0x7f7f7f), rgb(0x393b79), rgb(0x637939),
	rgb(0x8c6d31), rgb(0x843c39), rgb(0x7b4173), rgb(0x3182bd),
}

// FaultColor and RecoveryColor shade a fault's window on plots with a time axis: the time the
// fault acted, and its recovery after it (see the Faults section). Light yellow (no algorithm is
// drawn in yellow) and partly transparent, so that the grid and every line show through them.
var (
	FaultColor    = color.NRGBA{R: 0xf2, G: 0xc2, B: 0x00, A: 0x5c}
	RecoveryColor = color.NRGBA{R: 0xf2, G: 0xc2, B: 0x00, A: 0x24}
)

func rgb(v uint32) color.RGBA {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// AlgorithmColor returns the colour an algorithm has in every plot: fixed for the built-in ones,
// chosen by a hash of the name otherwise.
func AlgorithmColor(name string) color.RGBA {
	if c, ok := builtinColors[name]; ok {
		return c
	}
	h := fnv.New32a()
	h.Write([]byte(name)) // hash.Hash.Write never fails
	return extraColors[h.Sum32()%uint32(len(extraColors))]
}

// algorithmDashes returns the line dashes of an algorithm in line plots: dashed for the published
// (buggy-as-written) variants, solid otherwise.
func algorithmDashes(name string) []vg.Length {
	if strings.HasSuffix(name, "-published") {
		return []vg.Length{vg.Points(6), vg.Points(3)}
	}
	return nil
}
