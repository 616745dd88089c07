package scenarios_test

import (
	"fmt"

	"github.com/limitbench/limitbench/scenarios"
)

func ExampleParseThreshold() {
	t, err := scenarios.ParseThreshold("gcra: p99 < 5ms")
	if err != nil {
		panic(err)
	}
	fmt.Println(t.Algorithm, t.Metric, t.Op, t.Value, "µs")
	fmt.Println(t.Holds(4200))
	// Output:
	// gcra p99 < 5000 µs
	// true
}

func ExampleParse() {
	s, err := scenarios.Parse("example.yaml", []byte(`
version: 1
duration: 5s
arrival: {rate: 2000}
limit: {limit: 1000, window: 1s}
thresholds: ["p99 < 5ms"]
`))
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Name, s.Duration, s.Clients, s.Arrival.Kind(), s.Limit.Limit, s.Topologies)

	_, err = scenarios.Parse("bad.yaml", []byte(`
version: 1
clinets: 64
arrival: {rate: -5}
`))
	fmt.Println(err)
	// Output:
	// example 5s 4 rate 1000 [single]
	// bad.yaml:3: clinets: unknown field "clinets" (did you mean "clients"?)
	// bad.yaml:4: arrival.rate: must not be negative, got -5
}
