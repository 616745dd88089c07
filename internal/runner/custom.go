package runner

import (
	"errors"
	"fmt"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/scenarios"
)

// errNoCustom is returned until custom scripts are supported.
var errNoCustom = errors.New("custom scripts are not supported yet")

// customAlgorithm adapts a scenario's custom script.
type customAlgorithm struct{ algorithms.Algorithm }

func customAlgorithmOf(c *scenarios.Custom) (algorithms.Algorithm, error) {
	return nil, fmt.Errorf("%s: %w", c.Name, errNoCustom)
}
