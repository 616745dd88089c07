package report

import (
	"hash/fnv"
	"image/color"
	"strings"

	"gonum.org/v1/plot/vg"
)

// builtinColors fixes the colour of every built-in algorithm so that it is the same in every plot of
// every report. A corrected algorithm and its "-published" variant share a hue (the published one
// lighter, and dashed in line plots).
var builtinColors = map[string]color.RGBA{
	"fixed-window":                rgb(0x1f77b4),
	"fixed-window-published":      rgb(0x6baed6),
	"sliding-log":                 rgb(0xd95f02),
	"sliding-log-published":       rgb(0xfdae6b),
	"token-bucket":                rgb(0x2ca02c),
	"token-bucket-published":      rgb(0x74c476),
	"redisson":                    rgb(0xd62728),
	"redisson-per-client":         rgb(0xe7298a),
	"resource-consumer":           rgb(0x6a51a3),
	"resource-consumer-published": rgb(0x9e9ac8),
	"gcra":                        rgb(0x8c564b),
	"sliding-counter":             rgb(0x17becf),
	"reference":                   rgb(0x252525),
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
