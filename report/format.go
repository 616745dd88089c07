package report

import "math"

// round3 rounds x to three decimals, as result.json holds rates, ratios and costs.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
